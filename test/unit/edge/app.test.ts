import { describe, expect, test } from "bun:test";
import { storedEvent } from "../../../src/core/events.ts";
import { computeBlockHashes } from "../../../src/core/block-hash.ts";
import { tokenizeText } from "../../../src/tokens/index.ts";
import { harness, jsonResponse, sseResponse } from "./harness.ts";

const W1 = { id: 11n, url: "http://w1:1" };
const W2 = { id: 22n, url: "http://w2:2" };

const ok = () => Promise.resolve(jsonResponse({ choices: [{ text: "hi" }] }));
const refused = () => Promise.reject(new Error("connect ECONNREFUSED"));

describe("proxying", () => {
  test("the body goes upstream byte for byte, with the dp rank header; the answer carries routing headers", async () => {
    const h = harness({ workers: [W1], fetch: ok });
    const raw = '{"prompt":"abcdefgh",   "max_tokens":1}';
    const r = await h.request("/v1/completions", {
      method: "POST",
      body: raw,
      headers: { "x-custom": "kept", connection: "keep-alive" },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("x-switchyard-worker")).toBe("11");
    expect(r.headers.get("x-switchyard-dp-rank")).toBe("0");
    expect(r.headers.get("x-switchyard-overlap-blocks")).toBe("0");
    expect(h.calls[0]!.url).toBe("http://w1:1/v1/completions");
    expect(new TextDecoder().decode(h.calls[0]!.body)).toBe(raw);
    expect(h.calls[0]!.headers["x-switchyard-dp-rank"]).toBe("0");
    expect(h.calls[0]!.headers["x-custom"]).toBe("kept");
    expect(h.calls[0]!.headers.connection).toBeUndefined();
    expect(await r.json()).toEqual({ choices: [{ text: "hi" }] });
    expect(h.activeLoad()).toBe(0);
  });

  test("a streamed answer passes through unchanged and releases its load at the end", async () => {
    const h = harness({ workers: [W1], fetch: async () => sseResponse(5) });
    const r = await h.request("/v1/completions", {
      json: { prompt: "abcdefghijkl", stream: true },
    });
    expect(h.activeLoad()).toBeGreaterThan(0);
    const text = await r.text();
    expect(text.match(/^data: /gm)?.length).toBe(6);
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(h.activeLoad()).toBe(0);
    expect(h.metrics.requests.get(["11", "200"])).toBe(1);
  });

  test("a client that cancels mid-stream releases its load once", async () => {
    const h = harness({ workers: [W1], fetch: async () => sseResponse(1000) });
    const r = await h.request("/v1/completions", {
      json: { prompt: "abcdefghijkl", stream: true },
    });
    const reader = r.body!.getReader();
    await reader.read();
    await reader.read();
    await reader.cancel();
    expect(h.activeLoad()).toBe(0);
    expect(h.metrics.requests.get(["11", "client_cancelled"])).toBe(1);
  });

  test("a worker that refuses the connection is fenced and the request served by the next", async () => {
    const h = harness({
      workers: [W1, W2],
      fetch: (url) => (url.startsWith(W1.url) ? refused() : ok()),
    });
    // W1 holds the prompt's prefix, so it is the first choice.
    const prompt = "0123456789abcdef";
    const hashes = computeBlockHashes(tokenizeText(prompt), 4);
    h.index.applyEvent(
      storedEvent(
        W1.id,
        0n,
        [...hashes].map((t, i) => ({ blockHash: BigInt(i + 1), tokensHash: t })),
      ),
    );
    for (let i = 0; i < 4; i++) {
      const r = await h.request("/v1/completions", { json: { prompt: `${prompt} question ${i}` } });
      expect(r.status).toBe(200);
      expect(r.headers.get("x-switchyard-worker")).toBe("22");
      await r.text();
    }
    expect(h.calls.filter((c) => c.url.startsWith(W1.url)).length).toBe(1); // fenced after one failure
    expect(h.registry.get(W1.id)!.healthy).toBe(false);
    expect(h.registry.get(W1.id)!.reason).toContain("ECONNREFUSED");
    expect(h.metrics.upstreamFailures.get(["11"])).toBe(1);
    expect(h.activeLoad()).toBe(0);
    // A good health check lifts the fence.
    await h.health.check(W1.id);
    expect(h.registry.get(W1.id)!.healthy).toBe(true);
  });

  test("502/503/504 before the first byte are retried; when every worker fails the client gets 502 naming them", async () => {
    const h = harness({
      workers: [W1, W2],
      fetch: async () => jsonResponse({ error: "busy" }, 503),
    });
    const r = await h.request("/v1/completions", { json: { prompt: "abcd" } });
    // maxRetries 2 = three attempts; after both workers failed, the last 503 would be the third try,
    // but both are fenced by then, so the router answers itself.
    expect(r.status).toBe(502);
    const body = (await r.json()) as { error: { message: string; code: string } };
    expect(body.error.code).toBe("upstream_failed");
    expect(body.error.message).toContain("worker 11");
    expect(body.error.message).toContain("worker 22");
    expect(h.activeLoad()).toBe(0);
  });

  test("a 4xx from the engine is passed through, not retried", async () => {
    const h = harness({
      workers: [W1, W2],
      fetch: async () => jsonResponse({ error: { message: "bad max_tokens" } }, 400),
    });
    const r = await h.request("/v1/completions", { json: { prompt: "abcd" } });
    expect(r.status).toBe(400);
    expect(h.calls.length).toBe(1);
    expect(h.registry.list().every((w) => w.healthy)).toBe(true);
  });

  test("no healthy worker: 503 no_endpoints", async () => {
    const h = harness({ workers: [W1], fetch: ok });
    h.registry.setHealthy(W1.id, false);
    const r = await h.request("/v1/completions", { json: { prompt: "abcd" } });
    expect(r.status).toBe(503);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe("no_endpoints");
  });
});

describe("sessions", () => {
  test("a session stays on its worker, and moves when that worker becomes unhealthy", async () => {
    const h = harness({ workers: [W1, W2], fetch: ok });
    const headers = { "x-session-id": "s1" };
    const first = await h.request("/v1/completions", { json: { prompt: "aaaa" }, headers });
    const bound = first.headers.get("x-switchyard-worker")!;
    await first.text();
    for (let i = 0; i < 3; i++) {
      const r = await h.request("/v1/completions", {
        json: { prompt: `other prompt ${i}` },
        headers,
      });
      expect(r.headers.get("x-switchyard-worker")).toBe(bound);
      await r.text();
    }
    h.registry.setHealthy(BigInt(bound), false);
    const moved = await h.request("/v1/completions", { json: { prompt: "bbbb" }, headers });
    expect(moved.headers.get("x-switchyard-worker")).not.toBe(bound);
    const after = await h.request("/v1/completions", { json: { prompt: "cccc" }, headers });
    expect(after.headers.get("x-switchyard-worker")).toBe(moved.headers.get("x-switchyard-worker"));
  });
});

describe("approximate policy and LoRA", () => {
  test("approx: the router's own decision makes the next request with that prefix overlap", async () => {
    const h = harness({ workers: [W1, W2], fetch: ok, policy: "approx" });
    const a = await h.request("/v1/completions", { json: { prompt: "0123456789abcdef" } });
    await a.text();
    const b = await h.request("/v1/completions", { json: { prompt: "0123456789abcdefXYZ" } });
    expect(b.headers.get("x-switchyard-worker")).toBe(a.headers.get("x-switchyard-worker"));
    expect(Number(b.headers.get("x-switchyard-overlap-blocks"))).toBe(4);
  });

  test("a model naming a known adapter hashes with the adapter: no overlap with the base model", async () => {
    const h = harness({ workers: [W1], fetch: ok, policy: "approx" });
    h.lora.handleMdcAddition({ workerId: W1.id, dpRank: 0 }, { name: "my-lora" });
    await (
      await h.request("/v1/completions", { json: { prompt: "0123456789abcdef", model: "my-lora" } })
    ).text();
    const base = await h.request("/v1/completions", {
      json: { prompt: "0123456789abcdef", model: "base" },
    });
    expect(base.headers.get("x-switchyard-overlap-blocks")).toBe("0");
    const again = await h.request("/v1/completions", {
      json: { prompt: "0123456789abcdef", model: "my-lora" },
    });
    expect(again.headers.get("x-switchyard-overlap-blocks")).toBe("4");
  });
});

describe("admin access", () => {
  test("without a token, a non-loopback peer gets 403 naming its address; loopback passes", async () => {
    const remote = harness({ workers: [W1], fetch: ok, peer: "10.1.2.3" });
    const r = await remote.request("/v1/workers");
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: { message: string } }).error.message).toContain(
      "10.1.2.3",
    );
    // The OpenAI surface stays open to everyone.
    expect((await remote.request("/v1/completions", { json: { prompt: "abcd" } })).status).toBe(
      200,
    );
    for (const peer of ["127.0.0.1", "::1", "::ffff:127.0.0.1"]) {
      expect(
        (await harness({ workers: [W1], fetch: ok, peer }).request("/v1/workers")).status,
      ).toBe(200);
    }
  });

  test("with a token, the bearer is required from every peer, loopback included", async () => {
    const h = harness({ workers: [W1], fetch: ok, adminToken: "token-123456" });
    expect((await h.request("/debug/kv/dump")).status).toBe(401);
    expect(
      (await h.request("/debug/kv/dump", { headers: { authorization: "Bearer wrong" } })).status,
    ).toBe(401);
    expect(
      (await h.request("/debug/kv/dump", { headers: { authorization: "Bearer token-123456" } }))
        .status,
    ).toBe(200);
  });
});

describe("events and the route protocol", () => {
  test("events of registered workers reach the index; the dump rebuilds it", async () => {
    const h = harness({ workers: [W1], fetch: ok });
    const batch = [
      {
        worker_id: "11",
        event: {
          event_id: 0,
          data: {
            stored: {
              parent_hash: null,
              blocks: [{ block_hash: "18446744073709551615", tokens_hash: 5 }],
            },
          },
        },
      },
      { worker_id: 99, event: { event_id: 0, data: "cleared" } },
    ];
    const r = await h.request("/v1/kv/events", { json: batch });
    expect(await r.json()).toEqual({ accepted: 1, dropped: 1 });
    const dump = await (await h.request("/debug/kv/dump")).text();
    expect(dump).toContain("18446744073709551615");
    expect(h.index.size()).toBe(1);
  });

  test("approx is the router without KV events: a batch that arrives anyway is dropped and counted, never indexed", async () => {
    const h = harness({ workers: [W1], fetch: ok, policy: "approx" });
    const batch = [
      {
        worker_id: "11",
        event: {
          event_id: 0,
          data: { stored: { parent_hash: null, blocks: [{ block_hash: 7, tokens_hash: 5 }] } },
        },
      },
    ];
    const r = await h.request("/v1/kv/events", { json: batch });
    expect(await r.json()).toEqual({ accepted: 0, dropped: 1 });
    expect(h.index.size()).toBe(0);
    expect(await (await h.request("/metrics")).text()).toContain(
      'switchyard_kv_events_dropped_total{reason="approx_policy"} 1',
    );
  });

  test("event batches may exceed --max-body-bytes (a long prompt's Stored event is large); requests may not", async () => {
    const h = harness({ workers: [W1], fetch: ok, maxBodyBytes: 1024 });
    const blocks = Array.from({ length: 200 }, (_, i) => ({
      block_hash: i + 1,
      tokens_hash: 1000 + i,
    }));
    const batch = [
      { worker_id: 11, event: { event_id: 0, data: { stored: { parent_hash: null, blocks } } } },
    ];
    const r = await h.request("/v1/kv/events", { json: batch });
    expect(r.status).toBe(200);
    expect(h.index.size()).toBe(200);
    expect(
      (await h.request("/v1/completions", { json: { prompt: "x".repeat(2000) } })).status,
    ).toBe(413);
  });

  test("a malformed event batch gets 400 naming the field", async () => {
    const h = harness({ workers: [W1], fetch: ok });
    const r = await h.request("/v1/kv/events", {
      json: [{ worker_id: 1, event: { event_id: "abc", data: "cleared" } }],
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { message: string } }).error.message).toContain(
      "event_id",
    );
  });

  test("GET /v1/workers reports load and cached blocks per worker", async () => {
    const h = harness({ workers: [W1, { id: 33n, url: "http://w3:3", dpRanks: 2 }], fetch: ok });
    await h.request("/v1/route", { json: { tokens: [1, 2, 3, 4, 5, 6, 7, 8], request_id: "x" } });
    const { workers } = (await (await h.request("/v1/workers")).json()) as {
      workers: {
        id: string;
        dp_ranks: number;
        active_prefill_tokens: number;
        cached_blocks: number;
        healthy: boolean;
      }[];
    };
    expect(workers.map((w) => w.id).sort()).toEqual(["11", "33"]);
    expect(workers.find((w) => w.id === "33")!.dp_ranks).toBe(2);
    expect(workers.reduce((a, w) => a + w.active_prefill_tokens, 0)).toBe(8);
  });
});
