/**
 * forward() with an injected UpstreamCall (the seam the socket client plugs into): a
 * complete answer is answered at once and its booking released before the client reads
 * it; an answer still arriving is streamed and its booking held until the end.
 */
import { describe, expect, test } from "bun:test";
import { forward, type ForwardDeps } from "../../../../src/edge/proxy/forward.ts";
import { silentLogger } from "../../../../src/core/logger.ts";
import type { UpstreamBody, UpstreamCall } from "../../../../src/edge/proxy/upstream.ts";
import { tokenizeText } from "../../../../src/tokens/index.ts";
import { harness } from "../harness.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const W1 = { id: 11n, url: "http://w1:1" };
const SSE = 'data: {"t":1}\n\ndata: {"t":2}\n\ndata: {"t":3}\n\ndata: [DONE]\n\n';

/** A body of the given chunks; `drained` says whether all of them have been read. */
function body(chunks: string[], tellsDrained: boolean): UpstreamBody & { cancelled: boolean } {
  let i = 0;
  return {
    cancelled: false,
    get drained() {
      return tellsDrained ? i >= chunks.length : undefined;
    },
    async read() {
      return i < chunks.length ? { done: false, value: enc.encode(chunks[i++]!) } : { done: true };
    },
    async cancel() {
      this.cancelled = true;
    },
  };
}

function setup(upstream: UpstreamCall) {
  const h = harness({
    workers: [W1],
    fetch: () => Promise.reject(new Error("fetch must not be used")),
    blockSize: 4,
  });
  const deps: ForwardDeps = {
    routing: h.deps.router.routing,
    registry: h.registry,
    outcomes: { fence: () => {} },
    observe: { metrics: h.metrics, log: silentLogger },
    upstream: { call: upstream, fetch: h.deps.upstream.fetch, maxRetries: 1 },
  };
  const call = (prompt: string) =>
    forward(
      {
        request: new Request("http://router/v1/completions", {
          method: "POST",
          headers: { "x-custom": "kept" },
        }),
        path: "/v1/completions",
        body: enc.encode(JSON.stringify({ prompt })),
        tokens: tokenizeText(prompt),
      },
      deps,
    );
  return { h, call };
}

const headers = [
  "content-type",
  "text/event-stream",
  "transfer-encoding",
  "chunked",
  "x-engine",
  "e1",
];

describe("forward through an UpstreamCall", () => {
  test("a complete answer: the bytes at once, routing headers, no hop-by-hop, booking released before the client reads", async () => {
    const seen: { base: string; path: string; headers: Readonly<Record<string, string>> }[] = [];
    const { h, call } = setup(async (base, path, init) => {
      seen.push({ base, path, headers: init.headers });
      return { status: 200, statusText: "OK", headers, body: body([SSE], true) };
    });
    const r = await call("abcdefghijkl");
    expect(h.activeLoad()).toBe(0);
    expect(h.metrics.requests.get(["11", "200"])).toBe(1);
    expect(r.status).toBe(200);
    expect(r.headers.get("x-switchyard-worker")).toBe("11");
    expect(r.headers.get("x-engine")).toBe("e1");
    expect(r.headers.get("transfer-encoding")).toBeNull();
    expect(await r.text()).toBe(SSE);
    expect(seen).toEqual([
      {
        base: W1.url,
        path: "/v1/completions",
        headers: expect.objectContaining({ "x-custom": "kept", "x-switchyard-dp-rank": "0" }),
      },
    ]);
  });

  test("an answer still arriving is streamed: booked until the end, same bytes", async () => {
    const parts = ['data: {"t":1}\n\n', 'data: {"t":2}\n\ndata: [DONE]\n\n'];
    const { h, call } = setup(async () => ({
      status: 200,
      statusText: "OK",
      headers,
      body: body(parts, true),
    }));
    const r = await call("abcdefghijkl");
    expect(h.activeLoad()).toBeGreaterThan(0);
    expect(await r.text()).toBe(parts.join(""));
    expect(h.activeLoad()).toBe(0);
    expect(h.metrics.requests.get(["11", "200"])).toBe(1);
  });

  test("a reader that cannot tell whether it is drained is always streamed", async () => {
    const { h, call } = setup(async () => ({
      status: 200,
      statusText: "OK",
      headers,
      body: body([SSE], false),
    }));
    const r = await call("abcdefghijkl");
    expect(h.activeLoad()).toBeGreaterThan(0);
    expect(await r.text()).toBe(SSE);
    expect(h.activeLoad()).toBe(0);
  });

  test("a complete non-streamed JSON answer passes unchanged", async () => {
    const json = JSON.stringify({ choices: [{ text: "hi" }] });
    const { h, call } = setup(async () => ({
      status: 200,
      statusText: "OK",
      headers: ["content-type", "application/json"],
      body: body([json], true),
    }));
    const r = await call("abcdefgh");
    expect(h.activeLoad()).toBe(0);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(dec.decode(new Uint8Array(await r.arrayBuffer()))).toBe(json);
  });
});
