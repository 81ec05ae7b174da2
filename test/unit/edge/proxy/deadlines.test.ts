/**
 * forward() under deadlines and client disconnects, with an injected UpstreamCall: a missed
 * first-byte deadline fails over to the next worker (fenced, counted, reported), a client
 * that leaves before the first byte closes the engine call and frees the booking without
 * blaming the worker, and a stream that stalls ends with an OpenAI-shaped error event.
 */
import { describe, expect, test } from "bun:test";
import {
  DeadlineMissedError,
  type UpstreamDeadlines,
} from "../../../../src/edge/proxy/deadlines.ts";
import { forward, type ForwardDeps } from "../../../../src/edge/proxy/forward.ts";
import { silentLogger } from "../../../../src/core/logger.ts";
import type {
  UpstreamBody,
  UpstreamCall,
  UpstreamRequestInit,
} from "../../../../src/edge/proxy/upstream.ts";
import { tokenizeText } from "../../../../src/tokens/index.ts";
import { harness } from "../harness.ts";
import { okBody } from "./bodies.ts";

const enc = new TextEncoder();
const W1 = { id: 11n, url: "http://w1:1" };
const W2 = { id: 22n, url: "http://w2:2" };
const SSE_HEADERS = ["content-type", "text/event-stream"];

/** A promise that settles only when the call's signal aborts (a hung engine). */
function hang<T>(init: UpstreamRequestInit): Promise<T> {
  return new Promise<T>((_, reject) =>
    init.signal?.addEventListener("abort", () => reject(init.signal!.reason)),
  );
}

/** A body that gives `chunks`, then never another byte until cancelled. */
function stallingBody(chunks: string[]): UpstreamBody & { cancelled: number } {
  let i = 0;
  let wake: ((r: { done: boolean }) => void) | undefined;
  return {
    cancelled: 0,
    async read() {
      if (i < chunks.length) return { done: false, value: enc.encode(chunks[i++]!) };
      return new Promise((resolve) => (wake = resolve));
    },
    async cancel() {
      this.cancelled++;
      wake?.({ done: true });
    },
  };
}

function setup(upstream: UpstreamCall, deadlines: Partial<UpstreamDeadlines> = {}) {
  const h = harness({
    workers: [W1, W2],
    fetch: () => Promise.reject(new Error("fetch must not be used")),
    blockSize: 4,
  });
  const fenced: [bigint, string][] = [];
  const reports: [bigint, string | undefined][] = [];
  const warnings: string[] = [];
  const deps: ForwardDeps = {
    routing: h.deps.router.routing,
    registry: h.registry,
    outcomes: {
      fence: (id, why) => {
        fenced.push([id, why]);
      },
      report: (id, failure) => reports.push([id, failure]),
    },
    observe: { metrics: h.metrics, log: { ...silentLogger, warn: (m) => warnings.push(m) } },
    upstream: {
      call: upstream,
      fetch: h.deps.upstream.fetch,
      maxRetries: 1,
      deadlines: { connectMs: 0, firstByteMs: 0, responseMs: 0, streamIdleMs: 0, ...deadlines },
    },
  };
  const call = (signal?: AbortSignal, stream = true) =>
    forward(
      {
        request: new Request("http://router/v1/completions", { method: "POST", signal }),
        path: "/v1/completions",
        body: enc.encode(JSON.stringify({ prompt: "abcdefgh", stream })),
        tokens: tokenizeText("abcdefgh"),
        stream,
      },
      deps,
    );
  return { h, call, fenced, reports, warnings };
}

describe("deadlines and cancellation on the upstream path", () => {
  test("a connect deadline that ran out while the router's loop was held: the next worker serves, the first is neither fenced nor reported", async () => {
    let n = 0;
    const { h, call, fenced, reports, warnings } = setup(async (base) => {
      // What the socket client rejects with when judgeDeadline excuses the wait.
      if (n++ === 0) throw new DeadlineMissedError("connect", 5000, 14_200);
      return {
        status: 200,
        statusText: "OK",
        headers: ["content-type", "application/json"],
        body: okBody(`{"from":"${base}"}`),
      };
    });
    const r = await call();
    expect(r.status).toBe(200);
    await r.text();
    expect(fenced).toEqual([]);
    expect(reports.filter(([, f]) => f !== undefined)).toEqual([]);
    expect(h.metrics.deadlinesExcused.get(["connect"])).toBe(1);
    expect(
      h.metrics.deadlineMisses.get(["11", "connect"]) +
        h.metrics.deadlineMisses.get(["22", "connect"]),
    ).toBe(0);
    expect(
      warnings.some(
        (w) => w.includes("not fenced") && w.includes("event loop was held for 14200 ms"),
      ),
    ).toBe(true);
    expect(h.activeLoad()).toBe(0);
  });

  test("no answer head within the first-byte deadline: the next worker serves, the first is fenced and its call aborted", async () => {
    const signals: AbortSignal[] = [];
    let n = 0;
    const { h, call, fenced, reports } = setup(
      async (base, _path, init) => {
        signals.push(init.signal!);
        if (n++ === 0) return hang(init);
        return {
          status: 200,
          statusText: "OK",
          headers: ["content-type", "application/json"],
          body: okBody(`{"from":"${base}"}`),
        };
      },
      { firstByteMs: 30 },
    );
    const t0 = performance.now();
    const r = await call();
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(r.status).toBe(200);
    const slow = fenced[0]![0];
    expect(fenced).toEqual([[slow, "first byte deadline of 0.03 s missed"]]);
    expect(signals[0]!.aborted).toBe(true);
    expect(h.metrics.deadlineMisses.get([String(slow), "first_byte"])).toBe(1);
    expect(reports).toEqual([
      [slow, "first byte deadline of 0.03 s missed"],
      [slow === W1.id ? W2.id : W1.id, undefined],
    ]);
    expect(h.activeLoad()).toBe(0);
  });

  test("a request that is not streamed waits up to the response deadline, not the first-byte one (its first byte is the whole answer)", async () => {
    let n = 0;
    const { h, call, fenced } = setup(
      async (_b, _p, init) => {
        if (n++ === 0) {
          // The whole answer after 80 ms: past the first-byte deadline, inside the response one.
          await Bun.sleep(80);
          return {
            status: 200,
            statusText: "OK",
            headers: ["content-type", "application/json"],
            body: okBody("{}"),
          };
        }
        return hang(init);
      },
      { firstByteMs: 30, responseMs: 200 },
    );
    const r = await call(undefined, false);
    expect(r.status).toBe(200);
    expect(fenced).toEqual([]);
    // And the response deadline does fire for one that never answers.
    const second = await call(undefined, false).catch((e: unknown) => e);
    expect(second).toBeDefined();
    expect(fenced.map((f) => f[1])).toContain("response deadline of 0.2 s missed");
    expect(
      h.metrics.deadlineMisses.get(["11", "response"]) +
        h.metrics.deadlineMisses.get(["22", "response"]),
    ).toBeGreaterThanOrEqual(1);
  });

  test("a head but no first body byte within the deadline also fails over, and that body is cancelled", async () => {
    const bodies: ReturnType<typeof stallingBody>[] = [];
    const { h, call, fenced } = setup(
      async () => {
        const b = stallingBody([]);
        bodies.push(b);
        if (bodies.length === 1)
          return { status: 200, statusText: "OK", headers: SSE_HEADERS, body: b };
        return {
          status: 200,
          statusText: "OK",
          headers: ["content-type", "application/json"],
          body: okBody("{}"),
        };
      },
      { firstByteMs: 30 },
    );
    const r = await call();
    expect(r.status).toBe(200);
    expect(fenced.length).toBe(1);
    expect(bodies[0]!.cancelled).toBeGreaterThan(0);
    expect(h.activeLoad()).toBe(0);
  });

  test("every worker missing the deadline: upstream_failed (502), each miss counted and fenced", async () => {
    const { h, call, fenced } = setup(async (_b, _p, init) => hang(init), { firstByteMs: 20 });
    await expect(call()).rejects.toMatchObject({ code: "upstream_failed" });
    expect(fenced.map((f) => f[1])).toEqual([
      "first byte deadline of 0.02 s missed",
      "first byte deadline of 0.02 s missed",
    ]);
    expect(
      h.metrics.deadlineMisses.get(["11", "first_byte"]) +
        h.metrics.deadlineMisses.get(["22", "first_byte"]),
    ).toBe(2);
    expect(h.activeLoad()).toBe(0);
  });

  test("a client that leaves before the first byte: engine call aborted, booking freed, worker not blamed", async () => {
    const signals: AbortSignal[] = [];
    const { h, call, fenced, reports } = setup(async (_b, _p, init) => {
      signals.push(init.signal!);
      return hang(init);
    });
    const client = new AbortController();
    const pending = call(client.signal);
    await Bun.sleep(0);
    expect(h.activeLoad()).toBeGreaterThan(0);
    client.abort();
    const r = await pending;
    expect(r.status).toBe(499);
    expect(signals.length).toBe(1);
    expect(signals[0]!.aborted).toBe(true);
    expect(h.activeLoad()).toBe(0);
    expect(fenced).toEqual([]);
    expect(reports).toEqual([]);
    expect(
      h.metrics.requests.get(["11", "client_cancelled"]) +
        h.metrics.requests.get(["22", "client_cancelled"]),
    ).toBe(1);
  });

  test("a stream that stalls past the idle deadline ends as vLLM ends a failed stream (its error chunk, then [DONE]); the engine body is cancelled", async () => {
    const b = stallingBody(['data: {"t":1}\n\n']);
    const { h, call, reports } = setup(
      async () => ({ status: 200, statusText: "OK", headers: SSE_HEADERS, body: b }),
      { streamIdleMs: 40 },
    );
    const r = await call();
    expect(r.status).toBe(200);
    const text = await r.text();
    const events = text.split("\n\n").filter((e) => e !== "");
    expect(events[0]).toBe('data: {"t":1}');
    // vLLM's end of a failed stream: its error chunk (code the status, an int), then [DONE].
    const last = JSON.parse(events[1]!.slice("data: ".length)) as {
      error: { code: number; type: string; message: string; param: null };
    };
    expect(last.error.code).toBe(500);
    expect(last.error.type).toBe("InternalServerError");
    expect(last.error.param).toBeNull();
    expect(last.error.message).toContain("0.04 s");
    expect(events[2]).toBe("data: [DONE]");
    expect(events.length).toBe(3);
    expect(b.cancelled).toBeGreaterThan(0);
    expect(h.activeLoad()).toBe(0);
    const w = reports[0]![0];
    expect(reports).toEqual([[w, "stream idle deadline missed"]]);
    expect(h.metrics.deadlineMisses.get([String(w), "stream_idle"])).toBe(1);
    expect(h.metrics.requests.get([String(w), "stream_timeout"])).toBe(1);
  });

  test("a slow but steady stream is not cut: the deadline is between chunks, not for the whole answer", async () => {
    // Gaps of a fifth of the idle deadline (room for a loaded machine's late timers), and
    // more chunks than fit in one deadline, so the whole answer outlasts it.
    const idleMs = 1_000;
    const chunks = 7;
    let i = 0;
    const body: UpstreamBody = {
      async read() {
        if (i >= chunks) return { done: true };
        await Bun.sleep(idleMs / 5);
        return { done: false, value: enc.encode(`data: {"t":${i++}}\n\n`) };
      },
      async cancel() {},
    };
    const { call, reports } = setup(
      async () => ({ status: 200, statusText: "OK", headers: SSE_HEADERS, body }),
      { streamIdleMs: idleMs },
    );
    const started = performance.now();
    const text = await (await call()).text();
    expect(performance.now() - started).toBeGreaterThan(idleMs);
    expect(text.split("\n\n").filter((e) => e !== "").length).toBe(chunks);
    expect(text).not.toContain("error");
    expect(reports.map((r) => r[1])).toEqual([undefined]);
  });

  test("a non-SSE answer that stalls is cut (an error, not a clean end)", async () => {
    const b = stallingBody(['{"partial":']);
    const { call } = setup(
      async () => ({
        status: 200,
        statusText: "OK",
        headers: ["content-type", "application/json"],
        body: b,
      }),
      { streamIdleMs: 30 },
    );
    const r = await call();
    await expect(r.text()).rejects.toThrow("stream idle deadline of 0.03 s missed");
  });

  test("a 500 the engine answers is passed on and reported as a failure; a 200 as a success", async () => {
    let status = 500;
    const { call, reports } = setup(async () => ({
      status,
      statusText: "",
      headers: ["content-type", "application/json"],
      body: okBody("{}"),
    }));
    expect((await call()).status).toBe(500);
    status = 200;
    expect((await call()).status).toBe(200);
    expect(reports.map((r) => r[1])).toEqual(["HTTP 500", undefined]);
  });

  test("a 5xx body never reaches the client: it is logged, the client gets the status in OpenAI's shape with the worker id", async () => {
    const secret =
      '{"detail":"Traceback: connect http://10.0.0.5:8000/internal failed at /opt/vllm/engine.py"}';
    const { call, warnings } = setup(async () => ({
      status: 500,
      statusText: "",
      headers: ["content-type", "application/json"],
      body: okBody(secret),
    }));
    const res = await call();
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).not.toContain("10.0.0.5");
    expect(text).not.toContain("engine.py");
    const body = JSON.parse(text) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("upstream_error");
    const worker = res.headers.get("x-switchyard-worker");
    expect(worker === "11" || worker === "22").toBe(true);
    expect(body.error.message).toContain(`worker ${worker}`);
    expect(warnings.some((w) => w.includes("10.0.0.5") && w.includes(`worker ${worker}`))).toBe(
      true,
    );
  });
});
