/**
 * The settlement of one routing decision (src/edge/proxy/settlement.ts): each way out touches
 * the sinks it should (booking, outcome report, fence, metrics, observation) and no other,
 * and only the first way out counts: the booking is freed and the answer counted once.
 * The lease and the observation are recording stand-ins; the metrics are the router's own.
 */
import { describe, expect, test } from "bun:test";
import type { Logger } from "../../../../src/core/logger.ts";
import { abandon, Settlement, type SettleEnd } from "../../../../src/edge/proxy/settlement.ts";
import { RouterMetrics } from "../../../../src/observe/names.ts";
import type { RequestObservation } from "../../../../src/observe/request-observation.ts";
import type { RouteDecision } from "../../../../src/router/index.ts";

const W = 7n;

function setup(o: { observed?: boolean; prefill?: boolean } = {}) {
  const calls: string[] = [];
  const lease = {
    free: () => void calls.push("lease.free"),
    prefillDone: () => void calls.push("lease.prefillDone"),
    firstToken: () => void calls.push("lease.firstToken"),
    outputTokens: (n: number) => void calls.push(`lease.outputTokens ${n}`),
  };
  const decision = {
    worker: { workerId: W, dpRank: 0 },
    overlapBlocks: 2,
    sticky: false,
    lease,
    candidates: [],
    candidatesTotal: 1,
    bestOverlapBlocks: 2,
  } as unknown as RouteDecision;
  const fenced: [bigint, string][] = [];
  const reported: [bigint, string | undefined][] = [];
  const warnings: string[] = [];
  const log = {
    debug() {},
    info() {},
    warn: (m: string) => void warnings.push(m),
    error() {},
  } as unknown as Logger;
  const metrics = new RouterMetrics();
  const prefillFailures = metrics.registry.counter("test_prefill_failures_total", "test", [
    "worker",
  ]);
  const seen: string[] = [];
  const obs =
    o.observed === false
      ? undefined
      : ({
          id: "req-1",
          decided: () => void seen.push("decided"),
          upstream: (h: Record<string, string>) => {
            h["x-request-id"] = "req-1";
            seen.push("upstream");
          },
          firstByte: (s: number) => void seen.push(`firstByte ${s}`),
          attemptFailed: (_w: bigint, r: string) => void seen.push(`attemptFailed ${r}`),
          clientGone: () => void seen.push("clientGone"),
          answered: (s: number, _b: unknown, e: number | undefined) =>
            void seen.push(`answered ${s} ${e}`),
          streaming: (s: number, sse: boolean) => {
            seen.push(`streaming ${s} ${sse}`);
            return {
              tokens: (n: number) => void seen.push(`track.tokens ${n}`),
              chunk: () => void seen.push("track.chunk"),
              end: (how: string, n: number, b: number) =>
                void seen.push(`track.end ${how} ${n} ${b}`),
            };
          },
        } as unknown as RequestObservation);
  const outcomes = {
    fence: (id: bigint, r: string) => void fenced.push([id, r]),
    report: (id: bigint, f: string | undefined) => void reported.push([id, f]),
  };
  const s = new Settlement(
    decision,
    { outcomes, metrics, log },
    obs,
    o.prefill ? { failures: prefillFailures } : undefined,
  );
  const frees = () => calls.filter((c) => c === "lease.free").length;
  const requests = (status: string) => metrics.requests.get([String(W), status]);
  return {
    s,
    decision,
    calls,
    fenced,
    reported,
    warnings,
    metrics,
    prefillFailures,
    seen,
    frees,
    requests,
  };
}

describe("each way out touches its sinks", () => {
  test("a whole answer: observed, freed, reported well, counted under its status", () => {
    const t = setup();
    t.s.end({ how: "whole", status: 200, sseEvents: 3 });
    expect(t.seen).toEqual(["answered 200 3"]);
    expect(t.frees()).toBe(1);
    expect(t.reported).toEqual([[W, undefined]]);
    expect(t.fenced).toEqual([]);
    expect(t.requests("200")).toBe(1);
  });

  test("an engine 5xx: reported with its status, counted, its answer logged with the request id", () => {
    const t = setup();
    t.s.sent({}, "http://w7:1", "/v1/completions");
    t.s.end({ how: "engine_error", status: 500, answer: "boom at /internal" });
    expect(t.frees()).toBe(1);
    expect(t.reported).toEqual([[W, "HTTP 500"]]);
    expect(t.requests("500")).toBe(1);
    expect(t.metrics.upstreamFailures.get([String(W)])).toBe(0);
    expect(t.warnings).toEqual([`worker ${W} answered HTTP 500: "boom at /internal"`]);
    expect(t.seen).toContain("answered 500 undefined");
  });

  test("a malformed answer: a failure against the worker and a 502 in requests_total", () => {
    const t = setup();
    t.s.end({ how: "malformed", why: "bad header" });
    expect(t.frees()).toBe(1);
    expect(t.reported).toEqual([[W, "malformed answer: bad header"]]);
    expect(t.metrics.upstreamFailures.get([String(W)])).toBe(1);
    expect(t.requests("502")).toBe(1);
    expect(t.seen).toEqual(["answered 502 undefined"]);
  });

  test("the client left before the first byte: freed, counted as cancelled, nothing said about the worker", () => {
    const t = setup();
    t.s.end({ how: "client_gone" });
    expect(t.frees()).toBe(1);
    expect(t.reported).toEqual([]);
    expect(t.requests("client_cancelled")).toBe(1);
    expect(t.seen).toEqual(["clientGone"]);
  });

  test("a stream: tokens reach the booking and the track; its end decides report and label", () => {
    const cases: [SettleEnd & { how: "stream" }, string | undefined | null, string][] = [
      [{ how: "stream", end: "done", tokens: 4, bytes: 10 }, undefined, "200"],
      [
        { how: "stream", end: "error", tokens: 4, bytes: 10 },
        "stream cut mid-answer",
        "stream_error",
      ],
      [
        { how: "stream", end: "timeout", tokens: 4, bytes: 10 },
        "stream idle deadline missed",
        "stream_timeout",
      ],
      [{ how: "stream", end: "cancelled", tokens: 4, bytes: 10 }, null, "client_cancelled"],
      [{ how: "stream", end: "client_timeout", tokens: 4, bytes: 10 }, null, "client_stalled"],
    ];
    for (const [end, report, label] of cases) {
      const t = setup();
      const hooks = t.s.stream(200, true);
      expect(hooks.onChunk).toBeUndefined(); // SSE: its tokens are its events, no tail to keep
      hooks.onTokens?.(2);
      hooks.onEnd(end.end, end.tokens, end.bytes);
      expect(t.calls).toEqual(["lease.outputTokens 2", "lease.free"]);
      expect(t.seen).toEqual(["streaming 200 true", "track.tokens 2", `track.end ${end.end} 4 10`]);
      expect(t.reported).toEqual(report === null ? [] : [[W, report]]);
      expect(t.requests(label)).toBe(1);
      expect(t.metrics.deadlineMisses.get([String(W), "stream_idle"])).toBe(
        end.end === "timeout" ? 1 : 0,
      );
    }
  });

  test("the engine's usage taken out of the client's stream: its output count wins over the events counted, in the booking, the track and a whole answer", () => {
    const t = setup();
    const hooks = t.s.stream(200, true);
    hooks.onTokens?.(2);
    t.s.engineUsage(7);
    hooks.onTokens?.(3); // the counter, downstream of the tap, saw fewer
    hooks.onEnd("done", 3, 10);
    expect(t.calls).toEqual([
      "lease.outputTokens 2",
      "lease.outputTokens 7",
      "lease.outputTokens 7",
      "lease.free",
    ]);
    expect(t.seen).toEqual([
      "streaming 200 true",
      "track.tokens 2",
      "track.tokens 7",
      "track.tokens 7",
      "track.end done 7 10",
    ]);
    const w = setup();
    w.s.engineUsage(5);
    w.s.end({ how: "whole", status: 200, sseEvents: 4 });
    expect(w.seen).toEqual(["answered 200 5"]);
  });

  test("a stream that is not SSE hands its chunks to the observation (its usage is in the tail)", () => {
    const t = setup();
    t.s.stream(200, false).onChunk?.(new Uint8Array([1]));
    expect(t.seen).toEqual(["streaming 200 false", "track.chunk"]);
  });

  test("a failure before the first byte fences, reports and counts; a retryable status only reports", () => {
    const t = setup();
    t.s.sent({}, "http://w7:1", "/p");
    t.s.retry({ kind: "failed", reason: "connection refused", deadline: "connect" });
    expect(t.frees()).toBe(1);
    expect(t.fenced).toEqual([[W, "connection refused"]]);
    expect(t.reported).toEqual([[W, "connection refused"]]);
    expect(t.metrics.upstreamFailures.get([String(W)])).toBe(1);
    expect(t.metrics.deadlineMisses.get([String(W), "connect"])).toBe(1);
    expect(t.seen).toEqual(["decided", "upstream", "attemptFailed connection refused"]);

    const r = setup();
    r.s.retry({ kind: "failed", reason: "HTTP 500", status: 500 });
    expect(r.fenced).toEqual([]);
    expect(r.reported).toEqual([[W, "HTTP 500"]]);
    expect(r.metrics.upstreamFailures.get([String(W)])).toBe(1);

    const q = setup();
    q.s.retry({ kind: "failed", reason: "HTTP 429", status: 429 });
    expect(q.fenced).toEqual([]);
    expect(q.reported).toEqual([]); // a 429 is the engine's load, not its failure
  });

  test("a worker taken out of rotation or gone from the registry: freed, no fence, no report, no count", () => {
    const t = setup();
    t.s.retry({ kind: "worker_down", reason: "health check failed" });
    expect(t.frees()).toBe(1);
    expect(t.fenced).toEqual([]);
    expect(t.reported).toEqual([]);
    expect(t.metrics.upstreamFailures.get([String(W)])).toBe(0);
    expect(t.seen).toEqual(["attemptFailed health check failed"]);

    const u = setup();
    u.s.retry({ kind: "unlisted" });
    expect(u.frees()).toBe(1);
    expect(u.seen).toEqual([]);
    expect(u.warnings).toEqual([]);
  });

  test("a prefill half: its failure always fences and is counted per prefill worker; its success reports without a client count", () => {
    const t = setup({ prefill: true, observed: false });
    t.s.retry({ kind: "failed", reason: "HTTP 500", status: 500 });
    expect(t.fenced).toEqual([[W, "HTTP 500"]]);
    expect(t.prefillFailures.get([String(W)])).toBe(1);
    expect(t.warnings[0]).toStartWith("disagg: prefill worker 7");

    const ok = setup({ prefill: true, observed: false });
    ok.s.end({ how: "prefilled" });
    expect(ok.frees()).toBe(1);
    expect(ok.reported).toEqual([[W, undefined]]);
    expect(ok.requests("200")).toBe(0);

    const quiet = setup({ prefill: true, observed: false });
    quiet.s.end({ how: "released" });
    expect(quiet.frees()).toBe(1);
    expect(quiet.reported).toEqual([]);
  });

  test("the call going out: the observation hears the decision then the call, and may add its headers", () => {
    const t = setup();
    const h: Record<string, string> = {};
    t.s.sent(h, "http://w7:1", "/v1/completions");
    t.s.firstByte(200);
    expect(t.seen).toEqual(["decided", "upstream", "firstByte 200"]);
    expect(h["x-request-id"]).toBe("req-1");
    expect(t.metrics.timeToFirstByte.count()).toBe(1);
  });
});

describe("only the first way out counts", () => {
  test("end is idempotent: a second end of any kind frees, reports and counts nothing", () => {
    const t = setup();
    t.s.end({ how: "whole", status: 200 });
    t.s.end({ how: "whole", status: 200 });
    t.s.end({ how: "malformed", why: "late" });
    t.s.end({ how: "stream", end: "error", tokens: 1, bytes: 1 });
    expect(t.frees()).toBe(1);
    expect(t.reported).toEqual([[W, undefined]]);
    expect(t.requests("200")).toBe(1);
    expect(t.requests("502")).toBe(0);
    expect(t.s.settled).toBe(true);
  });

  test("after a retry, an end does nothing, and a second retry neither", () => {
    const t = setup();
    t.s.retry({ kind: "failed", reason: "reset" });
    t.s.retry({ kind: "failed", reason: "reset again" });
    t.s.end({ how: "client_gone" });
    expect(t.frees()).toBe(1);
    expect(t.fenced).toEqual([[W, "reset"]]);
    expect(t.requests("client_cancelled")).toBe(0);
  });

  test("after the end, late tokens do not book output blocks", () => {
    const t = setup();
    const hooks = t.s.stream(200, true);
    hooks.onEnd("done", 3, 9);
    hooks.onTokens?.(5);
    expect(t.calls).toEqual(["lease.free"]);
  });

  test("an abandoned decision is freed and nothing else", () => {
    const t = setup();
    abandon(t.decision);
    expect(t.calls).toEqual(["lease.free"]);
    expect(t.reported).toEqual([]);
  });
});
