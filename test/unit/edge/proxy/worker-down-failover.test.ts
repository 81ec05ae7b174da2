/**
 * A request still waiting for its first byte from a worker that the router takes out of
 * rotation (a failed health check, a fence by another request, an ejection, a removal) goes
 * to the next worker at once: nothing reached the client yet, and the deadline that would
 * otherwise end the wait is 600 s for an answer that is not streamed.
 */
import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../../../src/core/logger.ts";
import { forward, type ForwardDeps } from "../../../../src/edge/proxy/forward.ts";
import type { UpstreamCall, UpstreamRequestInit } from "../../../../src/edge/proxy/upstream.ts";
import { tokenizeText } from "../../../../src/tokens/index.ts";
import { until } from "../../../support/processes.ts";
import { harness } from "../harness.ts";
import { okBody } from "./bodies.ts";

const enc = new TextEncoder();
const W1 = { id: 11n, url: "http://w1:1" };
const W2 = { id: 22n, url: "http://w2:2" };

function hang<T>(init: UpstreamRequestInit): Promise<T> {
  return new Promise<T>((_, reject) =>
    init.signal?.addEventListener("abort", () => reject(init.signal!.reason)),
  );
}

function setup(hangFirst = true) {
  const h = harness({
    workers: [W1, W2],
    fetch: () => Promise.reject(new Error("fetch must not be used")),
    blockSize: 4,
  });
  const calls: { base: string; signal: AbortSignal }[] = [];
  const fenced: bigint[] = [];
  const reports: [bigint, string | undefined][] = [];
  // The first worker tried hangs (a SIGSTOPped engine); any other answers at once.
  const upstream: UpstreamCall = async (base, _path, init) => {
    calls.push({ base, signal: init.signal! });
    if (hangFirst && calls.length === 1) return hang(init);
    return {
      status: 200,
      statusText: "OK",
      headers: ["content-type", "application/json"],
      body: okBody(`{"from":"${base}"}`),
    };
  };
  const deps: ForwardDeps = {
    routing: h.deps.router.routing,
    registry: h.registry,
    outcomes: {
      fence: (id) => {
        fenced.push(id);
      },
      report: (id, f) => reports.push([id, f]),
    },
    observe: { metrics: h.metrics, log: silentLogger },
    upstream: {
      call: upstream,
      fetch: h.deps.upstream.fetch,
      maxRetries: 2,
      // The production defaults: a whole answer may take 600 s.
      deadlines: {
        connectMs: 5_000,
        firstByteMs: 120_000,
        responseMs: 600_000,
        streamIdleMs: 60_000,
      },
    },
  };
  const call = () =>
    forward(
      {
        request: new Request("http://router/v1/completions", { method: "POST" }),
        path: "/v1/completions",
        body: enc.encode(JSON.stringify({ prompt: "abcdefgh" })),
        tokens: tokenizeText("abcdefgh"),
        stream: false,
      },
      deps,
    );
  const idOf = (base: string) => (base === W1.url ? W1.id : W2.id);
  return { h, call, calls, fenced, reports, idOf };
}

describe("a worker taken out of rotation while a request waits for its first byte", () => {
  for (const how of [
    "declared unhealthy by a health check",
    "fenced by another request",
    "removed",
  ] as const) {
    test(`${how}: the request goes to the next worker at once, the engine call is closed, the booking freed`, async () => {
      const { h, call, calls, fenced, reports, idOf } = setup();
      const t0 = performance.now();
      const pending = call();
      await until(() => calls.length === 1, "the first worker to be called", 2_000, 1);
      const stuck = idOf(calls[0]!.base);
      if (how === "declared unhealthy by a health check")
        h.registry.setHealthy(stuck, false, "health check failed: timeout");
      else if (how === "fenced by another request")
        h.health.fence(stuck, "first byte deadline of 2 s missed");
      else h.deps.admin.membership.remove(stuck);
      const r = await pending;
      expect(performance.now() - t0).toBeLessThan(1_000);
      expect(r.status).toBe(200);
      expect(calls.length).toBe(2);
      expect(idOf(calls[1]!.base)).not.toBe(stuck);
      expect(calls[0]!.signal.aborted).toBe(true);
      // Whoever took it out counted it; the request adds no fence or failure of its own.
      expect(fenced).toEqual([]);
      expect(reports).toEqual([[idOf(calls[1]!.base), undefined]]);
      expect(h.activeLoad()).toBe(0);
    });
  }

  test("a worker that goes unhealthy after it answered does not touch that answer", async () => {
    const { h, call, calls, idOf } = setup(false);
    const r = await call();
    expect(r.status).toBe(200);
    h.registry.setHealthy(idOf(calls[0]!.base), false, "health check failed");
    expect(calls.length).toBe(1);
    expect(await r.text()).toContain("from");
  });

  test("a worker held to drain (its pod not ready or terminating) keeps the waiting request; its removal then moves it on", async () => {
    const { h, call, calls, idOf } = setup();
    const pending = call();
    await until(() => calls.length === 1, "the first worker to be called", 2_000, 1);
    const held = idOf(calls[0]!.base);
    h.health.hold(held, "draining: pod terminating");
    expect(h.registry.get(held)!.healthy).toBe(false);
    // Its engine still serves: the try is not aborted (a worker given up on aborts it at once,
    // within the call that takes it out, as the removal below does).
    expect(calls[0]!.signal.aborted).toBe(false);
    // When the held worker then fails for good (removed), the request goes on at once.
    h.deps.admin.membership.remove(held);
    expect(calls[0]!.signal.aborted).toBe(true);
    const r = await pending;
    expect(r.status).toBe(200);
    expect(calls.length).toBe(2);
    expect(idOf(calls[1]!.base)).not.toBe(held);
    expect(h.activeLoad()).toBe(0);
  });
});
