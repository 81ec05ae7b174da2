/**
 * forward() given an answer the runtime cannot pass on (any upstream client: a status
 * outside 200-599, a header Response refuses): 502 naming the worker, the booking freed,
 * the engine body cancelled, a failure reported against the worker; never an unhandled 500.
 */
import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../../../src/core/logger.ts";
import { forward, type ForwardDeps } from "../../../../src/edge/proxy/forward.ts";
import type { UpstreamBody, UpstreamResponse } from "../../../../src/edge/proxy/upstream.ts";
import { tokenizeText } from "../../../../src/tokens/index.ts";
import { harness } from "../harness.ts";

const enc = new TextEncoder();
const W1 = { id: 11n, url: "http://w1:1" };

function body(): UpstreamBody & { cancelled: boolean } {
  let sent = false;
  return {
    cancelled: false,
    async read() {
      if (sent) return new Promise(() => {}); // still streaming
      sent = true;
      return { done: false, value: enc.encode('data: {"t":1}\n\n') };
    },
    async cancel() {
      this.cancelled = true;
    },
  };
}

function run(res: Omit<UpstreamResponse, "body">, stream: boolean) {
  const h = harness({
    workers: [W1],
    fetch: () => Promise.reject(new Error("no fetch")),
    blockSize: 4,
  });
  const reports: [bigint, string | undefined][] = [];
  const b = body();
  const deps: ForwardDeps = {
    routing: h.deps.router.routing,
    registry: h.registry,
    outcomes: { fence: () => {}, report: (id, f) => reports.push([id, f]) },
    observe: { metrics: h.metrics, log: silentLogger },
    upstream: {
      call: async () => ({ ...res, body: b }),
      fetch: h.deps.upstream.fetch,
      maxRetries: 0,
    },
  };
  const answer = forward(
    {
      request: new Request("http://router/v1/completions", { method: "POST" }),
      path: "/v1/completions",
      body: enc.encode("{}"),
      tokens: tokenizeText("abcdefgh"),
      stream,
    },
    deps,
  );
  return { h, reports, b, answer };
}

describe("an answer the runtime cannot pass on", () => {
  const cases: [string, Omit<UpstreamResponse, "body">][] = [
    ["status 700", { status: 700, statusText: "", headers: ["content-type", "text/event-stream"] }],
    [
      "status 150 as a final answer",
      { status: 150, statusText: "", headers: ["content-type", "text/event-stream"] },
    ],
    [
      "a header Response refuses",
      {
        status: 200,
        statusText: "OK",
        headers: ["content-type", "text/event-stream", "x bad", "v"],
      },
    ],
  ];
  for (const [what, res] of cases) {
    for (const stream of [true, false]) {
      test(`${what} (${stream ? "streamed" : "whole"}): 502 naming the worker, booking freed, body cancelled, failure reported`, async () => {
        const { h, reports, b, answer } = run(res, stream);
        const r = await answer;
        expect(r.status).toBe(502);
        expect(((await r.json()) as { error: { message: string } }).error.message).toContain(
          "worker 11",
        );
        expect(h.activeLoad()).toBe(0);
        expect(b.cancelled).toBe(true);
        expect(reports.length).toBe(1);
        expect(reports[0]![1]).toContain("malformed answer");
      });
    }
  }
});
