/**
 * Issue 12 §1 and §3, bad clients against a real router and simulated engine:
 * - clients that send long prompts and leave before the first byte (was: not cancelled, 100
 *   of them with 20k-token prompts cost a legitimate request 38.9 s): the engine must see each
 *   disconnect and drop the queued work, so the next request waits for at most the prefill
 *   already running;
 * - slow-body clients (was: 5,000 connections sending 1 byte / 5 s all held): cut after the
 *   idle timeout, while others are served.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { complete, startEngines, startRouter, urlOf } from "../integration/multi-router-cluster.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import { bookedLoad } from "./faults.ts";

const LEAVERS = 10;
const PROMPT_TOKENS = 20_000;
/** The engine's prefill cost (its default, 40 µs/token): 20k tokens = 0.8 s each, one at a time. */
const PREFILL_MS = (PROMPT_TOKENS * 40) / 1000;

const procs: Proc[] = [];
let url = "";
let engineUrl = "";

beforeAll(async () => {
  const engines = await startEngines(1, [], ["--decode-ms-per-step", "5"]);
  const router = await startRouter(engines, 0, ["--log-level", "error", "--idle-timeout", "1"]);
  procs.push(...engines, router);
  url = urlOf(router);
  engineUrl = String(engines[0]!.info.url);
});
afterAll(() => stopAll(procs));

async function engineCounter(name: string): Promise<number> {
  const text = await (await fetch(`${engineUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}
const engineAborted = () => engineCounter("mocker_requests_aborted_total");

describe("clients that misbehave", () => {
  test(`${LEAVERS} clients leave before the first byte: the engine drops their work, the next request waits for one prefill at most`, async () => {
    const abortedBefore = await engineAborted();
    const receivedBefore = await engineCounter("mocker_requests_total");
    const leavers = Array.from({ length: LEAVERS }, (_, k) => {
      const ctl = new AbortController();
      // Distinct token prompts: nothing cached, each one a full prefill.
      const tokens = Array.from(
        { length: PROMPT_TOKENS },
        (_, i) => 1000 + ((i * 7919 + k * 104_729) % 30_000),
      );
      const p = complete(url, { prompt: tokens, max_tokens: 4, stream: true }, {}, ctl.signal)
        .then((r) => r.arrayBuffer())
        .catch(() => "left");
      return { ctl, p };
    });
    // All of them on the engine: the first in prefill, the rest queued behind it.
    await until(
      async () => (await engineCounter("mocker_requests_total")) - receivedBefore >= LEAVERS,
      "every long prompt to reach the engine",
      10_000,
    );
    for (const l of leavers) l.ctl.abort();
    await Promise.all(leavers.map((l) => l.p));

    const t0 = performance.now();
    const r = await complete(url, { prompt: "a legitimate short request", max_tokens: 2 });
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    const waited = performance.now() - t0;
    console.log(
      `chaos ${LEAVERS} clients leaving before the first byte: legitimate request waited ${Math.round(waited)} ms (${LEAVERS} prefills would be ${LEAVERS * PREFILL_MS} ms)`,
    );
    // At most the prefill already running, plus its own: not the ${LEAVERS} queued ones.
    expect(waited).toBeLessThan(PREFILL_MS + 1_500);
    await until(
      async () => (await engineAborted()) - abortedBefore >= LEAVERS - 1,
      "the engine to count the abandoned requests as aborted",
      5_000,
    );
    await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 3_000);
  }, 30_000);

  test("slow-body clients (1 byte / 0.4 s) are cut after the idle timeout; others are served meanwhile", async () => {
    const port = Number(new URL(url).port);
    const N = 50;
    const closedAt: number[] = [];
    const t0 = performance.now();
    const sockets = Array.from({ length: N }, () => {
      const s = connect(port, "127.0.0.1");
      s.on("error", () => {});
      s.on("close", () => closedAt.push(performance.now() - t0));
      s.write(
        "POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{",
      );
      return s;
    });
    const drip = setInterval(() => {
      for (const s of sockets) if (!s.destroyed) s.write(" ");
    }, 400);
    try {
      const r = await complete(url, { prompt: "served while slow bodies drip", max_tokens: 1 });
      expect(r.status).toBe(200);
      await r.arrayBuffer();
      await until(
        () => closedAt.length === N,
        () => `every slow-body connection to be cut (${closedAt.length}/${N})`,
        8_000,
        50,
      );
    } finally {
      clearInterval(drip);
      for (const s of sockets) s.destroy();
    }
    const longest = Math.max(...closedAt);
    console.log(
      `chaos ${N} slow-body clients: all cut, the last after ${Math.round(longest)} ms (--idle-timeout 1)`,
    );
    // uSockets checks timeouts on a 4 s tick, so a cut comes between 1 s and 1 + 4 s.
    expect(longest).toBeLessThan(1_000 + 4_500);
    expect(await bookedLoad(url)).toBe(0);
  }, 20_000);
});
