/**
 * Issue 13 §5: a non-streamed answer ends the request's prefill booking when the engine's
 * answer starts (its headers), not when the whole body has arrived; a streamed answer
 * (text/event-stream) keeps it until its first token, as before. The engine here is an
 * injected UpstreamCall whose body is still arriving.
 */
import { describe, expect, test } from "bun:test";
import { forward, type ForwardDeps } from "../../../../src/edge/proxy/forward.ts";
import { silentLogger } from "../../../../src/core/logger.ts";
import type { UpstreamBody, UpstreamCall } from "../../../../src/edge/proxy/upstream.ts";
import { workerKey } from "../../../../src/core/ids.ts";
import { tokenizeText } from "../../../../src/tokens/index.ts";
import { harness } from "../harness.ts";

const enc = new TextEncoder();
const W1 = { id: 11n, url: "http://w1:1" };

/** A body whose first chunk is here and whose rest comes when `finish` is called. */
function slowBody(first: string): UpstreamBody & { finish(): void } {
  let step = 0;
  let release!: () => void;
  const later = new Promise<void>((r) => (release = r));
  return {
    drained: false,
    async read() {
      step++;
      if (step === 1) return { done: false, value: enc.encode(first) };
      await later;
      return { done: true };
    },
    async cancel() {},
    finish: () => release(),
  };
}

function setup(contentType: string, first: string) {
  const b = slowBody(first);
  const upstream: UpstreamCall = async () => ({
    status: 200,
    statusText: "OK",
    headers: ["content-type", contentType],
    body: b,
  });
  const h = harness({
    workers: [W1],
    fetch: () => Promise.reject(new Error("no fetch")),
    blockSize: 4,
  });
  const deps: ForwardDeps = {
    routing: h.deps.router.routing,
    registry: h.registry,
    outcomes: { fence: () => {} },
    observe: { metrics: h.metrics, log: silentLogger },
    upstream: { call: upstream, fetch: h.deps.upstream.fetch, maxRetries: 0 },
  };
  const prompt = "abcdefghijklmnop"; // 16 tokens
  const res = forward(
    {
      request: new Request("http://router/v1/completions", { method: "POST" }),
      path: "/v1/completions",
      body: enc.encode(JSON.stringify({ prompt })),
      tokens: tokenizeText(prompt),
    },
    deps,
  );
  const prefill = () => h.tracker.activeTokens(workerKey(W1.id, 0), 0);
  return { res, b, prefill, h };
}

describe("prefill booking and the answer's start", () => {
  test("non-streamed (application/json): prefill released at the headers, the booking itself at the end", async () => {
    const s = setup("application/json", '{"choices":[{"text":"');
    const r = await s.res;
    expect(s.prefill()).toBe(0);
    expect(s.h.activeLoad()).toBeGreaterThan(0); // decode blocks still held while the body streams
    s.b.finish();
    await r.text();
    expect(s.h.activeLoad()).toBe(0);
  });

  test("streamed (text/event-stream) without a token yet: prefill still booked", async () => {
    const s = setup("text/event-stream", ": keep-alive\n\n");
    const r = await s.res;
    expect(s.prefill()).toBe(16);
    s.b.finish();
    await r.text();
    expect(s.h.activeLoad()).toBe(0);
  });
});
