/**
 * A prompt is routed on its first MAX_ROUTED_BLOCKS blocks: hashing, matching and booking stay
 * bounded however long the prompt, while its whole length still counts as prefill load.
 */
import { describe, expect, test } from "bun:test";
import { portableBatchHasher } from "../../../src/core/block-hash.ts";
import { RouterMetrics } from "../../../src/observe/names.ts";
import { createRouter } from "../../../src/router/create-router.ts";
import { MAX_ROUTED_BLOCKS } from "../../../src/router/routing-service.ts";
import { MemoryAffinityStore } from "../../../src/router/sessions/memory-store.ts";
import { StickyRouter } from "../../../src/router/sessions/sticky.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";

const BS = 4;

function build() {
  let clock = 0;
  const registry = new WorkerRegistry();
  const router = createRouter(
    { policy: "kv", scheduler: { blockSize: BS }, sessionTtlMs: 60_000 },
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
    },
  );
  registry.add(1n, "http://w1:1", 1, true, "base");
  router.tracker.updateWorkers([{ workerId: 1n, dpRank: 0 }]);
  return router;
}

describe("routed blocks", () => {
  test("a prompt 3x past the bound is hashed to the bound; a shorter one whole; the same prefix gives the same hashes", () => {
    const { routing } = build();
    const long = new Uint32Array(3 * MAX_ROUTED_BLOCKS * BS).map((_, i) => i % 50_000);
    const p = routing.prepare(long, undefined);
    expect(p.hashes.length).toBe(MAX_ROUTED_BLOCKS);
    expect(p.seqHashes.length).toBe(MAX_ROUTED_BLOCKS);
    const short = routing.prepare(long.subarray(0, 10 * BS), undefined);
    expect(short.hashes.length).toBe(10);
    expect([...p.hashes.subarray(0, 10)]).toEqual([...short.hashes]);
  });

  test("the whole prompt still counts as prefill load", async () => {
    const router = build();
    const tokens = new Uint32Array(2 * MAX_ROUTED_BLOCKS * BS).map((_, i) => i % 50_000);
    const d = await router.routing.route({ tokens, approximate: true, requestId: "r1" });
    const load = router.tracker.loads(0).reduce((a, l) => a + l.activePrefillTokens, 0);
    expect(load).toBe(tokens.length);
    d.lease.free();
  });
});
