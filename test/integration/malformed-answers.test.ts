/**
 * An engine whose answer is malformed HTTP, streamed or whole: a status line that is not
 * HTTP, a status of 600-999 or below 100, a header the client could not be given, a head over
 * 64 KiB in one read. The client gets a 502 naming the worker, the booking is freed, the
 * engine connection is closed and the failure counts against the worker. Before: a status of
 * 600-999 or an invalid header was an unhandled 500 that kept the booking until its 300 s
 * expiry and let the engine stream on; a status below 100 was taken for an interim answer and
 * waited for the 600 s deadline. A real router process in front of an in-process raw engine.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startRouter, urlOf, workers } from "./multi-router-cluster.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import { startMalformedEngine, type MalformedEngine } from "../support/malformed-engine.ts";

const SSE_BODY = 'data: {"choices":[{"text":"x"}]}\n\n'.repeat(3);
const MALFORMED: [string, string][] = [
  ["a status line that is not HTTP", "HTTQ/1.1 200 OK\r\n\r\n"],
  [
    "status 600",
    "HTTP/1.1 600 Odd\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
  ],
  ["status 999", "HTTP/1.1 999 Odd\r\ncontent-length: 2\r\n\r\n{}"],
  ["status 099", "HTTP/1.1 099 Odd\r\ncontent-length: 2\r\n\r\n{}"],
  [
    "an invalid header name",
    "HTTP/1.1 200 OK\r\nx bad: 1\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
  ],
  [
    "a control character in a header",
    "HTTP/1.1 200 OK\r\nx-bad: a\x01b\r\ncontent-type: text/event-stream\r\n\r\n",
  ],
  [
    "a head over 64 KiB in one read",
    `HTTP/1.1 200 OK\r\nx-pad: ${"p".repeat(70 * 1024)}\r\ncontent-type: text/event-stream\r\n\r\n`,
  ],
];

let engine: MalformedEngine;
let router: Proc;
let url = "";
let workerId = "";

beforeAll(async () => {
  engine = startMalformedEngine("");
  // One worker, no retry elsewhere: the client sees what the router makes of this engine's answer.
  router = await startRouter([], 0, [
    "--log-level",
    "error",
    "--worker",
    engine.url,
    "--outlier-consecutive-failures",
    "0",
    "--health-interval",
    "0.1",
  ]);
  url = urlOf(router);
  await until(async () => (await workers(url))[0]?.healthy === true, "the engine to be healthy");
  workerId = (await workers(url))[0]!.id;
});
afterAll(async () => {
  await stopAll([router]);
  engine.stop();
});

async function failures(): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text
    .split("\n")
    .find((l) => l.startsWith(`switchyard_upstream_failures_total{worker="${workerId}"}`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}

async function booked(): Promise<number> {
  return (await workers(url)).reduce(
    (s, w) => s + w.active_prefill_tokens + w.active_decode_blocks,
    0,
  );
}

describe("a malformed engine answer", () => {
  for (const stream of [true, false]) {
    for (const [what, bytes] of MALFORMED) {
      test(`${what} (${stream ? "streamed" : "whole answer"}): 502 naming the worker, booking freed, engine connection closed, failure counted`, async () => {
        engine.answer =
          bytes +
          (bytes.includes("chunked") ? `${SSE_BODY.length.toString(16)}\r\n${SSE_BODY}\r\n` : "");
        // The last case fenced it: its next passing health check (0.1 s) readmits it.
        await until(
          async () => (await workers(url))[0]!.healthy,
          "the worker to take requests again",
          3_000,
        );
        const failed = await failures();
        const closed = engine.closedByPeer;
        const t0 = performance.now();
        const r = await fetch(`${url}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ prompt: `malformed ${what}`, max_tokens: 2, stream }),
        });
        const body = await r.text();
        expect(performance.now() - t0).toBeLessThan(3_000);
        expect(r.status).toBe(502);
        expect(body).toContain(`worker ${workerId}`);
        expect(await booked()).toBe(0);
        await until(
          () => engine.closedByPeer > closed,
          "the engine connection to be closed",
          3_000,
        );
        expect(await failures()).toBe(failed + 1);
      });
    }
  }
});
