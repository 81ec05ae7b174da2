/**
 * The cache check's fallback (RoutingDeps.distrusted): a (worker, dp rank) whose events were found
 * false is scored from the router's own decisions on it, not from its events' index; the decision
 * still says what that index predicted, which is what the engine's answer is checked against.
 */
import { describe, expect, test } from "bun:test";
import { storedEvent } from "../../../src/core/events.ts";
import { portableBatchHasher } from "../../../src/core/block-hash.ts";
import { RouterMetrics } from "../../../src/observe/names.ts";
import { createRouter } from "../../../src/router/create-router.ts";
import { MemoryAffinityStore } from "../../../src/router/sessions/memory-store.ts";
import { StickyRouter } from "../../../src/router/sessions/sticky.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";

function build(distrusted: Set<string> | undefined) {
  let clock = 0;
  const registry = new WorkerRegistry();
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
      distrusted: distrusted && (() => distrusted),
    },
  );
  for (const id of [1n, 2n]) registry.add(id, `http://w${id}:1`, 1, true, "base");
  router.tracker.updateWorkers([
    { workerId: 1n, dpRank: 0 },
    { workerId: 2n, dpRank: 0 },
  ]);
  return router;
}

const tokens = new Uint32Array([1, 2, 3, 4, 5, 6, 7, 8, 9]);
const only1 = new Set([1n]);

function indexOnWorker1(router: ReturnType<typeof build>): void {
  const { hashes } = router.routing.prepare(tokens, undefined);
  router.index.applyEvent(
    storedEvent(
      1n,
      0n,
      [...hashes].map((h, i) => ({ blockHash: 100n + BigInt(i), tokensHash: h })),
      null,
      0,
    ),
  );
}

describe("distrusted ranks are scored from the router's own decisions", () => {
  test("trusted: the events' index scores it, and the decision carries what it predicted", async () => {
    const router = build(new Set());
    indexOnWorker1(router);
    const d = await router.routing.route({ tokens, requestId: "a" });
    expect(d.worker.workerId).toBe(1n);
    expect(d.overlapBlocks).toBe(2);
    expect(d.check).toEqual({ indexBlocks: 2, inFlightBlocks: 0, routedBlocks: 2 });
    d.lease.free();
  });

  test("distrusted: its false index is not used; its own decisions are, from the first one on", async () => {
    const distrusted = new Set(["1:0"]);
    const router = build(distrusted);
    indexOnWorker1(router);
    const first = await router.routing.route({ tokens, requestId: "a", allowedWorkerIds: only1 });
    // Scored from the fallback (empty so far), checked against the events' index all the same.
    expect(first.overlapBlocks).toBe(0);
    expect(first.check?.indexBlocks).toBe(2);
    first.lease.free();
    const second = await router.routing.route({ tokens, requestId: "b", allowedWorkerIds: only1 });
    expect(second.overlapBlocks).toBe(2); // the router sent it there itself
    second.lease.free();
    // Without allowed workers, the false index no longer pulls the prompt onto worker 1 over worker 2:
    // worker 1 has its own decisions (2 blocks), worker 2 nothing; and a prompt it never sent there scores 0.
    const other = new Uint32Array([9, 9, 9, 9, 8, 8, 8, 8, 1]);
    const { hashes } = router.routing.prepare(other, undefined);
    router.index.applyEvent(
      storedEvent(
        1n,
        1n,
        [...hashes].map((h, i) => ({ blockHash: 200n + BigInt(i), tokensHash: h })),
        null,
        0,
      ),
    );
    const third = await router.routing.route({
      tokens: other,
      requestId: "c",
      allowedWorkerIds: only1,
    });
    expect(third.overlapBlocks).toBe(0);
    expect(third.check?.indexBlocks).toBe(2);
    third.lease.free();
    // Trusted again: the events' index scores it again.
    distrusted.clear();
    const back = await router.routing.route({
      tokens: other,
      requestId: "d",
      allowedWorkerIds: only1,
    });
    expect(back.overlapBlocks).toBe(2);
    back.lease.free();
  });

  test("a request in flight on the rank counts as predicted for the check", async () => {
    const router = build(new Set());
    const a = await router.routing.route({ tokens, requestId: "a", allowedWorkerIds: only1 });
    const b = await router.routing.route({ tokens, requestId: "b", allowedWorkerIds: only1 });
    expect(b.check).toEqual({ indexBlocks: 0, inFlightBlocks: 2, routedBlocks: 2 });
    a.lease.free();
    b.lease.free();
  });

  test("without the port, decisions carry no check facts", async () => {
    const router = build(undefined);
    const d = await router.routing.route({ tokens, requestId: "a" });
    expect(d.check).toBeUndefined();
    d.lease.free();
  });
});
