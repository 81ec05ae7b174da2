/**
 * routing.routeOrWait: the one call the edge makes. The router routes now, or, while every
 * worker is busy, waits in its own admission gate (passed in as a port) and routes once one
 * frees up; without a gate it answers all_workers_busy at once.
 */
import { describe, expect, test } from "bun:test";
import { portableBatchHasher } from "../../../../src/core/block-hash.ts";
import { workerKey, type WorkerKey } from "../../../../src/core/ids.ts";
import { RouterMetrics } from "../../../../src/observe/names.ts";
import { AdmissionGate } from "../../../../src/router/admission/admission-gate.ts";
import { createRouter } from "../../../../src/router/create-router.ts";
import type { RouteDecision } from "../../../../src/router/index.ts";
import { MemoryAffinityStore } from "../../../../src/router/sessions/memory-store.ts";
import { StickyRouter } from "../../../../src/router/sessions/sticky.ts";
import { WorkerRegistry } from "../../../../src/fleet/registry.ts";

/** The runtime's timers; the tick is far away, so the test drives the gate with pump(). */
const timers = {
  set: (fn: () => void, ms: number) => setTimeout(fn, ms),
  clear: (h: unknown) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

function build(withGate: boolean) {
  let clock = 0;
  const registry = new WorkerRegistry();
  // The engines' own load says the one rank is busy while `busy` holds.
  const state = { busy: true };
  const all: ReadonlySet<WorkerKey> = new Set([workerKey(1n, 0)]);
  const gate = withGate
    ? new AdmissionGate({ maxQueue: 4, timeoutMs: 1e9, tickMs: 1e9, now: () => clock, timers })
    : undefined;
  const router = createRouter(
    { policy: "kv", scheduler: { blockSize: 4 }, sessionTtlMs: 60_000 },
    {
      hasher: portableBatchHasher,
      now: () => clock++,
      rng: () => 0.5,
      workers: registry,
      sticky: new StickyRouter(
        new MemoryAffinityStore({ clock: { now: () => clock, every: () => () => {} } }),
      ),
      metrics: new RouterMetrics(),
      query: async () => ({ kind: "error", message: "none" }),
      sleep: async () => {},
      busyKeys: () => (state.busy ? all : undefined),
      admission: gate,
    },
  );
  registry.add(1n, "http://w1:1", 1, true, "base");
  router.tracker.updateWorkers([{ workerId: 1n, dpRank: 0 }]);
  const input = { tokens: Uint32Array.of(1, 2, 3, 4, 5), requestId: "r1" };
  return { router, gate, state, input };
}

/** Let queued promise callbacks run. */
const settle = () => new Promise((r) => setImmediate(r));

describe("routing.routeOrWait", () => {
  test("every worker busy: the request waits in the router's gate and is routed once one frees up", async () => {
    const { router, gate, state, input } = build(true);
    let decided = false;
    const pending = router.routing
      .routeOrWait(input, { priority: 0 })
      .then((d) => ((decided = true), d));
    await settle();
    expect(decided).toBe(false);
    expect(gate!.size).toBe(1);
    state.busy = false;
    gate!.pump();
    const d = await pending;
    expect(d.worker).toEqual({ workerId: 1n, dpRank: 0 });
    expect(gate!.size).toBe(0);
    d.lease.free();
    gate!.close();
  });

  test("a client that leaves while waiting is taken out of the line", async () => {
    const { router, gate, input } = build(true);
    const client = new AbortController();
    const pending = router.routing.routeOrWait(input, { signal: client.signal });
    await settle();
    expect(gate!.size).toBe(1);
    client.abort();
    await expect(pending).rejects.toThrow(
      "the client closed the request while it waited for a worker",
    );
    expect(gate!.size).toBe(0);
    gate!.close();
  });

  test("eachAttempt wraps every routing attempt, the gate's re-tries included, so the caller can time the wait", async () => {
    for (const withGate of [true, false]) {
      const { router, gate, state, input } = build(withGate);
      const tries: string[] = [];
      const eachAttempt = (attempt: () => Promise<RouteDecision>) => async () => {
        try {
          const d = await attempt();
          tries.push("decided");
          return d;
        } catch (e) {
          tries.push((e as { code?: string }).code ?? "error");
          throw e;
        }
      };
      if (!withGate) state.busy = false;
      const pending = router.routing.routeOrWait(input, { eachAttempt });
      if (withGate) {
        await settle();
        expect(tries).toEqual(["all_workers_busy"]);
        gate!.pump(); // still busy: one more try, still waiting
        await settle();
        state.busy = false;
        gate!.pump();
      }
      const d = await pending;
      expect(tries).toEqual(
        withGate ? ["all_workers_busy", "all_workers_busy", "decided"] : ["decided"],
      );
      d.lease.free();
      gate?.close();
    }
  });

  test("without a gate: all_workers_busy at once; a free worker is routed at once either way", async () => {
    const { router, state, input } = build(false);
    await expect(router.routing.routeOrWait(input)).rejects.toMatchObject({
      code: "all_workers_busy",
    });
    state.busy = false;
    const d = await router.routing.routeOrWait(input);
    expect(d.worker.workerId).toBe(1n);
    d.lease.free();
  });
});
