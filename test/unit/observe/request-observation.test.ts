/**
 * One access line, the request id and the trace context per request, through the real app
 * (test/unit/edge/harness.ts: the decision room, the proxy, a fake upstream fetch).
 */
import { describe, expect, test } from "bun:test";
import { createFormattedLogger } from "../../../src/observe/logger.ts";
import { RequestMetrics } from "../../../src/observe/request-metrics.ts";
import { MetricsRegistry } from "../../../src/observe/registry.ts";
import { RequestObservers } from "../../../src/observe/request-observers.ts";
import { DecisionLog } from "../../../src/observe/decision-log.ts";
import { storedEvent } from "../../../src/core/events.ts";
import { computeBlockHashes } from "../../../src/core/block-hash.ts";
import { tokenizeText } from "../../../src/tokens/index.ts";
import type { SpanIdentity, Tracer } from "../../../src/observe/tracing.ts";
import { parseTraceparent } from "../../../src/observe/trace-context.ts";
import { harness, jsonResponse, sseResponse, type FakeFetch } from "../edge/harness.ts";
import { createApp, createFastRoutes } from "../../../src/edge/app.ts";
import type { TenantGuard } from "../../../src/edge/tenants/guard.ts";
import { KeySet, sha256Hex } from "../../../src/protect/key-set.ts";
import { parseKeysDocument } from "../../../src/protect/keys-document.ts";
import { TenantLimiter } from "../../../src/protect/limits/limiter.ts";

const W1 = { id: 11n, url: "http://w1:1" };
const W2 = { id: 22n, url: "http://w2:2" };
const TRACE = "0af7651916cd43dd8448eb211c80319c";
const PARENT = `00-${TRACE}-b7ad6b7169203331-01`;

/** A tracer that keeps what it is asked to record, with deterministic ids. */
function fakeTracer() {
  const started: {
    name: string;
    kind: string;
    parent: SpanIdentity | undefined;
    attributes: Record<string, unknown>;
    ended: boolean;
    failed?: string;
  }[] = [];
  let n = 0;
  const tracer: Tracer = {
    start(s) {
      const rec = {
        name: s.name,
        kind: s.kind,
        parent: s.parent,
        attributes: { ...(s.attributes ?? {}) } as Record<string, unknown>,
        ended: false,
        failed: undefined as string | undefined,
      };
      started.push(rec);
      const identity = {
        traceId: s.parent?.traceId ?? "f".repeat(32),
        spanId: (++n).toString(16).padStart(16, "0"),
        sampled: true,
        tracestate: s.parent?.tracestate,
      };
      return {
        identity,
        set: (a) => Object.assign(rec.attributes, a),
        event: () => {},
        fail: (m) => void (rec.failed = m),
        end: () => void (rec.ended = true),
      };
    },
    flush: async () => {},
    shutdown: async () => {},
  };
  return { tracer, started };
}

function observed(
  fetch: FakeFetch,
  workers = [W1],
  tracing?: { tracer: Tracer; sampleRatio?: number; rng?: () => number },
) {
  const lines: Record<string, unknown>[] = [];
  const log = createFormattedLogger({
    level: "info",
    format: "json",
    write: (l) => lines.push(JSON.parse(l)),
  });
  let requestMetrics: RequestMetrics | undefined;
  let decisions: DecisionLog | undefined;
  const h = harness({
    workers,
    fetch,
    log,
    observe: ({ metrics, registry, blockSize, router }) => {
      requestMetrics = new RequestMetrics(metrics.registry);
      decisions = new DecisionLog({
        policy: router.pipeline.name,
        costs: router.pipeline.costs,
        blockSize,
        overlapWeight: router.scheduler.overlapScoreWeight,
      });
      return new RequestObservers({
        log,
        accessLines: true,
        metrics: requestMetrics,
        decisions,
        ...tracing,
        clock: () => performance.timeOrigin + performance.now(),
        blockSize,
        workerUrl: (id) => registry.get(id)?.url,
      });
    },
  });
  const access = () => lines.filter((l) => l.msg === "request");
  return { h, lines, access, requestMetrics: requestMetrics!, decisions: decisions! };
}

describe("one access line per request", () => {
  test("a streamed completion: id kept and echoed, sent to the engine with the client's trace context; the line says what happened", async () => {
    const { h, access, requestMetrics } = observed(async () => sseResponse(3));
    const r = await h.request("/v1/completions", {
      json: { model: "base", prompt: "abcdefghijklmnop", stream: true },
      headers: {
        "x-request-id": "client-42",
        traceparent: PARENT,
        tracestate: "congo=t61rcWkgMzE",
        "x-session-id": "user-7",
      },
    });
    expect(r.headers.get("x-request-id")).toBe("client-42");
    expect(access()).toHaveLength(0); // written when the stream ends, not before
    await r.text();
    const up = h.calls[0]!.headers;
    expect(up["x-request-id"]).toBe("client-42");
    expect(up.traceparent).toBe(PARENT);
    expect(up.tracestate).toBe("congo=t61rcWkgMzE");
    const [line] = access();
    expect(line).toMatchObject({
      request_id: "client-42",
      trace_id: TRACE,
      method: "POST",
      route: "/v1/completions",
      model: "base",
      status: 200,
      error: null,
      worker: "11",
      worker_url: "http://w1:1",
      dp_rank: 0,
      prompt_tokens: 16,
      cached_blocks: 0,
      retries: 0,
      client_cancelled: false,
      output_tokens: 3,
    });
    expect(line!.session).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.stringify(line)).not.toContain("user-7");
    expect(line!.ttft_ms).toBeGreaterThanOrEqual(0);
    expect(line!.duration_ms).toBeGreaterThanOrEqual(line!.ttft_ms as number);
    // The default kv predicted this request's TTFT on the worker it chose: an idle, cold one.
    expect(line!.predicted_ttft_ms).toBeGreaterThan(0);
    expect(line!.bytes_out).toBeGreaterThan(0);
    expect(requestMetrics.requests.get(["base", "/v1/completions", "2xx"])).toBe(1);
    expect(requestMetrics.ttft.count(["base", "/v1/completions"])).toBe(1);
    expect(requestMetrics.promptTokens.get(["base"])).toBe(16);
    expect(requestMetrics.completionTokens.get(["base"])).toBe(3);
  });

  test("an unsafe client id is replaced, never echoed; an invalid traceparent is not passed on", async () => {
    const { h, access } = observed(async () =>
      jsonResponse({ choices: [{ text: "x" }], usage: { prompt_tokens: 4, completion_tokens: 9 } }),
    );
    const r = await h.request("/v1/completions", {
      json: { prompt: "abcd" },
      headers: { "x-request-id": 'evil"\tid', traceparent: "00-zz-11-01", tracestate: "a=b" },
    });
    await r.text();
    const id = r.headers.get("x-request-id")!;
    expect(id).not.toContain("evil");
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(h.calls[0]!.headers["x-request-id"]).toBe(id);
    expect(h.calls[0]!.headers.traceparent).toBeUndefined();
    expect(h.calls[0]!.headers.tracestate).toBeUndefined();
    expect(access()[0]).toMatchObject({
      request_id: id,
      trace_id: null,
      output_tokens: 9,
      ttft_ms: null,
    });
  });

  test("a retry names the worker and why; the warning line carries the same request id", async () => {
    const { h, lines, access } = observed(
      async (url) =>
        url.startsWith(W1.url) ? new Response("busy", { status: 503 }) : jsonResponse({ ok: 1 }),
      [W1, W2],
    );
    // W1 holds the prompt's prefix, so it is tried first.
    const prompt = "0123456789abcdef";
    const hashes = computeBlockHashes(tokenizeText(prompt), 4);
    h.index.applyEvent(
      storedEvent(
        W1.id,
        0n,
        [...hashes].map((t, i) => ({ blockHash: BigInt(i + 1), tokensHash: t })),
      ),
    );
    const r = await h.request("/v1/completions", {
      json: { prompt },
      headers: { "x-request-id": "r-retry" },
    });
    expect(r.status).toBe(200);
    await r.text();
    expect(h.calls.map((c) => c.url)).toEqual([
      `${W1.url}/v1/completions`,
      `${W2.url}/v1/completions`,
    ]);
    expect(access()[0]).toMatchObject({
      worker: "22",
      retries: 1,
      retry_reasons: ["worker 11: HTTP 503"],
      best_cached_blocks: 0,
    });
    expect(lines.find((l) => l.level === "warn")).toMatchObject({ request_id: "r-retry" });
  });

  test("errors the router answers itself write a line with their code (and no worker)", async () => {
    const { h, access, requestMetrics } = observed(async () => jsonResponse({}));
    const r = await h.request("/v1/completions", {
      json: { prompt: 3 },
      headers: { "x-request-id": "bad-1" },
    });
    expect(r.status).toBe(400);
    expect(r.headers.get("x-request-id")).toBe("bad-1");
    expect(access()[0]).toMatchObject({
      request_id: "bad-1",
      status: 400,
      error: "invalid_request",
      worker: null,
      model: null,
    });
    expect(requestMetrics.requests.get(["none", "/v1/completions", "4xx"])).toBe(1);
  });

  test("probes and admin reads write no line; an unknown path's error does, under route 'other'", async () => {
    const { h, access, requestMetrics } = observed(async () => jsonResponse({}));
    await (await h.request("/health")).text();
    await (await h.request("/v1/workers")).text();
    expect(access()).toHaveLength(0);
    await (await h.request("/no/such/path/12345")).text();
    expect(access()[0]).toMatchObject({ route: "other", status: 404 });
    expect(requestMetrics.requests.get(["none", "other", "4xx"])).toBe(1);
  });

  test("a client that leaves mid-stream is logged as cancelled once, with what it got", async () => {
    const { h, access, requestMetrics } = observed(async () => sseResponse(1000));
    const r = await h.request("/v1/completions", {
      json: { model: "m", prompt: "abcdefgh", stream: true },
    });
    const reader = r.body!.getReader();
    await reader.read();
    await reader.read();
    await reader.cancel();
    expect(access()).toHaveLength(1);
    expect(access()[0]).toMatchObject({ client_cancelled: true, status: 200 });
    expect(access()[0]!.output_tokens).toBeGreaterThan(0);
    expect(requestMetrics.requests.get(["m", "/v1/completions", "cancelled"])).toBe(1);
  });

  test("the decision is kept with its candidates and cost terms adding up to the cost compared", async () => {
    const { h, decisions } = observed(async () => jsonResponse({}), [W1, W2]);
    await (
      await h.request("/v1/completions", {
        json: { prompt: "abcdefghijkl" },
        headers: { "x-request-id": "d-1" },
      })
    ).text();
    const [d] = decisions.list() as {
      request_id: string;
      candidates: { cost: number; chosen: boolean; terms: { weight: number; value: number }[] }[];
    }[];
    expect(d!.request_id).toBe("d-1");
    expect(d!.candidates).toHaveLength(2);
    expect(d!.candidates.filter((c) => c.chosen)).toHaveLength(1);
    for (const c of d!.candidates) {
      const sum = c.terms.reduce((a, t) => a + t.weight * t.value, 0);
      expect(sum).toBeCloseTo(c.cost, 6);
    }
  });
});

describe("the model label is bounded", () => {
  test("names become labels only once routed, up to the cap; then 'other'", async () => {
    const { MetricsRegistry } = await import("../../../src/observe/registry.ts");
    const { MAX_MODEL_LABELS } = await import("../../../src/observe/request-metrics.ts");
    const m = new RequestMetrics(new MetricsRegistry());
    expect(m.modelLabel("never-routed", false)).toBe("other");
    expect(m.modelLabel(undefined, true)).toBe("none");
    for (let i = 0; i < MAX_MODEL_LABELS; i++) expect(m.modelLabel(`m${i}`, true)).toBe(`m${i}`);
    expect(m.modelLabel("one-too-many", true)).toBe("other");
    expect(m.modelLabel("m3", false)).toBe("m3"); // a known name keeps its label even on an error
  });
});

describe("spans and sampling (a fake tracer)", () => {
  test("a recorded request: the server span under the client's, tokenize / route / upstream under it, the engine handed the upstream span", async () => {
    const { tracer, started } = fakeTracer();
    const { h, access } = observed(async () => sseResponse(2), [W1, W2], { tracer });
    await (
      await h.request("/v1/completions", {
        json: { model: "m", prompt: "abcdefgh", stream: true },
        headers: { "x-request-id": "s-1", traceparent: PARENT },
      })
    ).text();
    expect(started.map((s) => s.name)).toEqual([
      "POST /v1/completions",
      "tokenize",
      "route",
      "POST",
    ]);
    expect(started.every((s) => s.ended)).toBe(true);
    const [server, , route, upstream] = started;
    expect(server!.parent).toMatchObject({ traceId: TRACE, spanId: "b7ad6b7169203331" });
    expect(route!.attributes).toMatchObject({
      "switchyard.route.candidates": 2,
      "switchyard.route.sticky": false,
    });
    expect(typeof route!.attributes["switchyard.route.cost"]).toBe("number");
    expect(upstream!.kind).toBe("client");
    expect(upstream!.attributes["http.response.status_code"]).toBe(200);
    expect(server!.attributes).toMatchObject({
      "http.response.status_code": 200,
      "gen_ai.request.model": "m",
      "gen_ai.usage.output_tokens": 2,
    });
    const sent = parseTraceparent(h.calls[0]!.headers.traceparent)!;
    expect(sent.traceId).toBe(TRACE);
    expect(sent.spanId).toBe("0000000000000004"); // the upstream span, the fourth started
    expect(access()[0]!.trace_id).toBe(TRACE);
  });

  test("ratio 0: a new trace is not recorded, but the engine gets an unsampled context with the access line's trace id", async () => {
    const { tracer, started } = fakeTracer();
    const { h, access } = observed(async () => jsonResponse({}), [W1], {
      tracer,
      sampleRatio: 0,
      rng: () => 0.5,
    });
    await (await h.request("/v1/completions", { json: { prompt: "abcd" } })).text();
    expect(started).toEqual([]);
    const sent = parseTraceparent(h.calls[0]!.headers.traceparent)!;
    expect(sent.sampled).toBe(false);
    expect(access()[0]!.trace_id).toBe(sent.traceId);
  });

  test("a client's sampled trace is recorded whatever the ratio; an unsampled one never, and is passed on as it came", async () => {
    const { tracer, started } = fakeTracer();
    const { h } = observed(async () => jsonResponse({}), [W1], {
      tracer,
      sampleRatio: 0,
      rng: () => 0.99,
    });
    await (
      await h.request("/v1/completions", {
        json: { prompt: "abcd" },
        headers: { traceparent: PARENT },
      })
    ).text();
    expect(started.length).toBeGreaterThan(0);
    started.length = 0;
    const unsampled = `00-${TRACE}-b7ad6b7169203331-00`;
    await (
      await h.request("/v1/completions", {
        json: { prompt: "abcd" },
        headers: { traceparent: unsampled },
      })
    ).text();
    expect(started).toEqual([]);
    expect(h.calls[1]!.headers.traceparent).toBe(unsampled);
  });

  test("a failed try ends its upstream span as an error; the retry gets its own", async () => {
    const { tracer, started } = fakeTracer();
    const { h } = observed(
      async (url) =>
        url.startsWith(W1.url) ? new Response("busy", { status: 503 }) : jsonResponse({ ok: 1 }),
      [W1, W2],
      { tracer },
    );
    const prompt = "0123456789abcdef";
    const hashes = computeBlockHashes(tokenizeText(prompt), 4);
    h.index.applyEvent(
      storedEvent(
        W1.id,
        0n,
        [...hashes].map((t, i) => ({ blockHash: BigInt(i + 1), tokensHash: t })),
      ),
    );
    await (await h.request("/v1/completions", { json: { prompt } })).text();
    const tries = started.filter((s) => s.kind === "client");
    expect(tries).toHaveLength(2);
    expect(tries[0]!.failed).toBe("HTTP 503");
    expect(tries[1]!.failed).toBeUndefined();
    expect(tries[1]!.attributes["http.request.resend_count"]).toBe(1);
  });
});

describe("the tenant travels with the request (--api-keys)", () => {
  const KEY = "sk-team-a-0123456789abcdef";

  async function withKeys() {
    const { tracer, started } = fakeTracer();
    const o = observed(async () => sseResponse(2), [W1], { tracer });
    const guard: TenantGuard = {
      keys: () => keys,
      limiter: new TenantLimiter({ fallback: "local", routers: () => 1, now: () => 0 }),
      fair: false,
      engineAuthorization: null,
    };
    const keys = new KeySet(
      parseKeysDocument([{ tenant: "team-a", key_sha256: await sha256Hex(KEY) }], "keys"),
    );
    const deps = { ...o.h.deps, tenants: guard };
    const post = (key: string | undefined) =>
      new Request("http://router/v1/completions", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}),
        },
        body: JSON.stringify({ model: "base", prompt: "abcdefgh", stream: true }),
      });
    return {
      ...o,
      started,
      app: createApp(deps),
      fast: createFastRoutes(deps)["/v1/completions"]!.POST,
      post,
    };
  }

  test("the access line, the per-tenant metrics and the request's span name it, on the app and on Bun's fast routes; never the key", async () => {
    const t = await withKeys();
    for (const send of [(r: Request) => Promise.resolve(t.app.fetch(r)), t.fast]) {
      const res = await send(t.post(KEY));
      expect(res.status).toBe(200);
      await res.text();
    }
    const lines = t.access();
    expect(lines.map((l) => l.tenant)).toEqual(["team-a", "team-a"]);
    expect(JSON.stringify(t.lines)).not.toContain(KEY);
    expect(t.requestMetrics.tenantRequests.get(["team-a", "2xx"])).toBe(2);
    expect(t.requestMetrics.tenantCompletionTokens.get(["team-a"])).toBe(4);
    expect(t.requestMetrics.tenantPromptTokens.get(["team-a"])).toBe(
      (lines[0]!.prompt_tokens as number) * 2,
    );
    expect(t.requestMetrics.tenantTtft.count(["team-a"])).toBe(2);
    const servers = t.started.filter((s) => s.kind === "server");
    expect(servers.map((s) => s.attributes["switchyard.tenant"])).toEqual(["team-a", "team-a"]);
    expect(JSON.stringify(t.started)).not.toContain(KEY);
  });

  test("a request refused for its key has no tenant: its line says null, and no tenant series is made", async () => {
    const t = await withKeys();
    const res = await Promise.resolve(t.app.fetch(t.post("sk-wrong")));
    expect(res.status).toBe(401);
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(t.access()).toEqual([expect.objectContaining({ status: 401, tenant: null })]);
    expect(t.requestMetrics.tenantRequests.get(["team-a", "4xx"])).toBe(0);
    expect(t.h.deps.observe.metrics.registry.render()).not.toMatch(
      /switchyard_tenant_requests_total\{/,
    );
  });

  test("without --api-keys the line's tenant is null", async () => {
    const { h, access } = observed(async () => jsonResponse({}));
    await (await h.request("/v1/completions", { json: { prompt: "abcd" } })).text();
    expect(access()[0]!.tenant).toBeNull();
  });
});

describe("the predicted TTFT in the access line", () => {
  /** One observation driven by hand: a decision whose chosen candidate predicted 42 ms, a whole answer. */
  function line(prefilledElsewhere: boolean): Record<string, unknown> {
    const lines: Record<string, unknown>[] = [];
    const log = createFormattedLogger({
      level: "info",
      format: "json",
      write: (l) => lines.push(JSON.parse(l)),
    });
    const observers = new RequestObservers({
      log,
      accessLines: true,
      metrics: new RequestMetrics(new MetricsRegistry()),
      clock: () => Date.now(),
      blockSize: 16,
      workerUrl: () => undefined,
    });
    const req = new Request("http://router/v1/completions", { method: "POST" });
    const o = observers.begin(req, "/v1/completions");
    if (prefilledElsewhere) o.prefillPair(9n);
    const worker = { workerId: 7n, dpRank: 1 };
    const cand = (w: { workerId: bigint; dpRank: number }, predictedTtftMs: number) => ({
      endpoint: { worker: w },
      overlapBlocks: 0,
      prefillTokens: 64,
      decodeBlocks: 4,
      activePrefillTokens: 0,
      activeDecodeBlocks: 0,
      activeRequests: 0,
      predictedTtftMs,
      cost: predictedTtftMs,
    });
    // The cheapest candidate first, then the chosen one: the line reads the chosen one's.
    o.decided({
      worker,
      overlapBlocks: 0,
      sticky: false,
      candidates: [cand({ workerId: 7n, dpRank: 0 }, 10), cand(worker, 42)],
    });
    o.answered(200, new TextEncoder().encode("{}"), undefined);
    o.respond(new Response("{}"));
    return lines.find((l) => l.msg === "request")!;
  }

  test("is the chosen worker's prediction", () => {
    expect(line(false).predicted_ttft_ms).toBe(42);
  });

  test("is null when another worker prefilled the prompt (a P/D pair's decode half was priced as if it prefilled)", () => {
    const l = line(true);
    expect(l.prefill_worker).toBe("9");
    expect(l.predicted_ttft_ms).toBeNull();
  });
});
