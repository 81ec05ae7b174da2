/**
 * Tiers in the precise index: a holder is (worker, dp rank, medium). GPU scores stay exactly what
 * they are without tiers; a tier's overlap comes beside them (OverlapScores.tierScores).
 */
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import type { KvMedium, RouterEvent } from "../../../../src/core/events.ts";
import {
  clearedEvent,
  fastRouterEventBatch,
  removedEvent,
  routerEventToWire,
  RouterEventBatchSchema,
  storedEvent,
} from "../../../../src/core/events.ts";
import type { OverlapScores } from "../../../../src/core/overlap.ts";
import { RadixTree } from "../../../../src/router/kv-index/radix-tree.ts";
import { lcgAnsiC, randInt } from "../../../support/prng.ts";
import { q, scoresOf } from "./helpers.ts";

/** tokens_hash = l, block_hash = l * 100 (Dynamo's test convention), on a medium. */
function store(
  worker: number,
  locals: readonly number[],
  parent: number | null,
  medium?: KvMedium,
  dpRank = 0,
): RouterEvent {
  return storedEvent(
    BigInt(worker),
    0n,
    locals.map((l) => ({ tokensHash: BigInt(l), blockHash: BigInt(l) * 100n })),
    parent === null ? null : BigInt(parent) * 100n,
    dpRank,
    medium,
  );
}
function remove(
  worker: number,
  locals: readonly number[],
  medium?: KvMedium,
  dpRank = 0,
): RouterEvent {
  return removedEvent(
    BigInt(worker),
    0n,
    locals.map((l) => BigInt(l) * 100n),
    dpRank,
    medium,
  );
}
function tiersOf(s: OverlapScores): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const [m, scores] of s.tierScores ?? []) out[m] = Object.fromEntries([...scores].sort());
  return out;
}

/** Dumped events as a sorted list, without their ids. */
function eventSet(events: RouterEvent[]): string[] {
  return events
    .map((e) =>
      JSON.stringify(
        { ...(routerEventToWire({ ...e, event: { ...e.event, eventId: 0n } }) as object) },
        (_k, x) => (typeof x === "bigint" ? x.toString() : x),
      ),
    )
    .sort();
}

describe("RadixTree tiers", () => {
  test("a CPU tier does not change GPU scores or tree sizes, and reports its own overlap", () => {
    const gpuOnly = new RadixTree();
    const tiered = new RadixTree();
    for (const t of [gpuOnly, tiered]) {
      t.applyEvent(store(1, [1, 2], null));
      t.applyEvent(store(2, [1, 2, 3], null));
    }
    // Worker 1 offloaded the whole prefix and more to CPU; worker 3 has it only on disk.
    tiered.applyEvent(store(1, [1, 2, 3, 4], null, "cpu"));
    tiered.applyEvent(store(3, [1, 2, 3], null, "disk"));
    const a = gpuOnly.findMatches(q(1, 2, 3, 4, 5));
    const b = tiered.findMatches(q(1, 2, 3, 4, 5));
    expect(scoresOf(b)).toEqual(scoresOf(a));
    expect(scoresOf(b)).toEqual({ "1:0": 2, "2:0": 3 });
    expect([...b.treeSizes].sort()).toEqual([...a.treeSizes].sort());
    expect(a.tierScores).toBeUndefined();
    expect(tiersOf(b)).toEqual({ cpu: { "1:0": 4 }, disk: { "3:0": 3 } });
    expect(tiered.workerSize("1:0")).toBe(2); // GPU blocks, as Dynamo's tree_sizes
    expect(tiered.mediumSize({ workerId: 1n, dpRank: 0 }, "cpu")).toBe(4);
    expect(tiered.size()).toBe(2 + 3 + 4 + 3);
    expect(tiered.knownWorkers()).toEqual([
      { workerId: 1n, dpRank: 0 },
      { workerId: 2n, dpRank: 0 },
      { workerId: 3n, dpRank: 0 },
    ]);
  });

  test("a block the GPU evicted stays matchable on the CPU; the GPU score stops there", () => {
    const t = new RadixTree();
    t.applyEvent(store(1, [1, 2, 3], null));
    t.applyEvent(store(1, [1, 2, 3], null, "cpu"));
    expect(t.applyEvent(remove(1, [3]))).toBe("ok");
    const s = t.findMatches(q(1, 2, 3));
    expect(scoresOf(s)).toEqual({ "1:0": 2 });
    expect(tiersOf(s)).toEqual({ cpu: { "1:0": 3 } });
    // Removing a hash the CPU does not hold is reported; the GPU's hashes are its own.
    expect(t.applyEvent(remove(1, [9], "cpu"))).toBe("block_not_found");
    expect(t.applyEvent(remove(1, [1, 2, 3], "cpu"))).toBe("ok");
    expect(t.findMatches(q(1, 2, 3)).tierScores).toBeUndefined();
    expect(scoresOf(t.findMatches(q(1, 2, 3)))).toEqual({ "1:0": 2 });
  });

  test("a tier's reach counts from the GPU prefix, as the engine loads: GPU head, CPU tail, disk after", () => {
    const t = new RadixTree();
    // Worker 1: blocks 1-2 on GPU only, 3-4 on CPU only, 5-6 on disk only.
    t.applyEvent(store(1, [1, 2], null));
    // Their parents are on another medium of the same rank: found there (one hash, every medium).
    expect(t.applyEvent(store(1, [3, 4], 2, "cpu"))).toBe("ok");
    expect(t.applyEvent(store(1, [5, 6], 4, "disk"))).toBe("ok");
    expect(t.applyEvent(store(2, [8], 7, "cpu"))).toBe("parent_block_not_found");
    // Worker 2: the whole prompt on CPU only. Worker 3: GPU only.
    t.applyEvent(store(2, [1, 2, 3, 4, 5, 6], null, "cpu"));
    t.applyEvent(store(3, [1, 2, 3], null));
    const s = t.findMatches(q(1, 2, 3, 4, 5, 6, 7));
    expect(scoresOf(s)).toEqual({ "1:0": 2, "3:0": 3 });
    expect(tiersOf(s)).toEqual({ cpu: { "1:0": 4, "2:0": 6 }, disk: { "1:0": 6 } });
    // A block the CPU lacks ends the run: the engine computes from there.
    t.applyEvent(remove(1, [3], "cpu"));
    expect(tiersOf(t.findMatches(q(1, 2, 3, 4, 5, 6, 7)))).toEqual({ cpu: { "2:0": 6 } });
  });

  test("GPU blocks after a gap the lower tiers do not fill are not reachable", () => {
    const t = new RadixTree();
    t.applyEvent(store(1, [1, 2, 3, 4], null));
    t.applyEvent(store(1, [1, 2], null, "cpu"));
    t.applyEvent(remove(1, [2])); // GPU 1, 3, 4 (3-4 kept as path descendants); CPU 1-2
    expect(scoresOf(t.findMatches(q(1, 2, 3, 4)))).toEqual({ "1:0": 1 });
    expect(tiersOf(t.findMatches(q(1, 2, 3, 4)))).toEqual({ cpu: { "1:0": 2 } });
  });

  test("a tier reference-counts repeated announcements; the GPU does not", () => {
    const t = new RadixTree();
    // Two offloaded chunks that share block 2 each announce it (vLLM offloading/events.py).
    t.applyEvent(store(1, [1, 2], null, "cpu"));
    t.applyEvent(store(1, [2, 3], 1, "cpu"));
    t.applyEvent(store(1, [1, 2], null));
    t.applyEvent(store(1, [1, 2], null)); // repeated on the GPU: nothing changes
    expect(t.applyEvent(remove(1, [2], "cpu"))).toBe("ok");
    expect(tiersOf(t.findMatches(q(1, 2, 3)))).toEqual({ cpu: { "1:0": 3 } }); // still held once
    expect(t.applyEvent(remove(1, [2], "cpu"))).toBe("ok");
    // Block 2 is gone from the CPU but still on the GPU: GPU 1-2, then CPU 3, reach 3.
    expect(tiersOf(t.findMatches(q(1, 2, 3)))).toEqual({ cpu: { "1:0": 3 } });
    expect(t.applyEvent(remove(1, [2]))).toBe("ok"); // one GPU removal is enough
    expect(scoresOf(t.findMatches(q(1, 2, 3)))).toEqual({ "1:0": 1 });
    expect(tiersOf(t.findMatches(q(1, 2, 3)))).toEqual({ cpu: { "1:0": 1 } });
  });

  test("Cleared with a medium empties that medium; without one, every medium of the rank only", () => {
    const t = new RadixTree();
    for (const m of [undefined, "cpu", "disk"] as const) {
      t.applyEvent(store(1, [1, 2], null, m, 0));
      t.applyEvent(store(1, [1, 2], null, m, 1));
    }
    t.applyEvent(clearedEvent(1n, 0n, 0, "cpu"));
    expect(tiersOf(t.findMatches(q(1, 2)))).toEqual({
      cpu: { "1:1": 2 },
      disk: { "1:0": 2, "1:1": 2 },
    });
    expect(scoresOf(t.findMatches(q(1, 2)))).toEqual({ "1:0": 2, "1:1": 2 });
    t.applyEvent(clearedEvent(1n, 0n, 0, "gpu"));
    expect(scoresOf(t.findMatches(q(1, 2)))).toEqual({ "1:1": 2 });
    t.applyEvent(clearedEvent(1n, 0n, 1));
    const s = t.findMatches(q(1, 2));
    expect(scoresOf(s)).toEqual({});
    expect(tiersOf(s)).toEqual({ disk: { "1:0": 2 } });
    expect(t.knownWorkers()).toEqual([
      { workerId: 1n, dpRank: 0 },
      { workerId: 1n, dpRank: 1 },
    ]);
  });

  test("removing a rank or a worker drops every medium and frees the tree", () => {
    const t = new RadixTree();
    t.applyEvent(store(1, [1, 2], null, undefined, 0));
    t.applyEvent(store(1, [1, 2, 3], null, "cpu", 0));
    t.applyEvent(store(1, [1, 2], null, "cpu", 1));
    t.removeWorkerDpRank(1n, 0);
    expect(tiersOf(t.findMatches(q(1, 2, 3)))).toEqual({ cpu: { "1:1": 2 } });
    t.removeWorker(1n);
    expect(t.nodeCount()).toBe(0);
    expect(t.size()).toBe(0);
    expect(t.knownWorkers()).toEqual([]);
  });

  test("dump replays into an equal index: every medium, repeats, path nodes", () => {
    const rng = lcgAnsiC(45);
    const t = new RadixTree();
    const media: (KvMedium | undefined)[] = [undefined, "cpu", "disk"];
    for (let i = 0; i < 400; i++) {
      const w = randInt(rng, 3);
      const m = media[randInt(rng, 3)];
      const len = 1 + randInt(rng, 5);
      const locals = Array.from({ length: len }, (_, k) => 1 + k + randInt(rng, 3) * 10);
      if (randInt(rng, 4) === 0) t.applyEvent(remove(w, [locals[randInt(rng, len)]!], m));
      else t.applyEvent(store(w, locals, null, m));
    }
    const copy = new RadixTree();
    for (const e of t.dump()) expect(copy.applyEvent(e)).toBe("ok");
    expect(copy.size()).toBe(t.size());
    expect(copy.nodeCount()).toBe(t.nodeCount());
    for (let i = 0; i < 50; i++) {
      const query = q(...Array.from({ length: 5 }, (_, k) => 1 + k + randInt(rng, 3) * 10));
      expect(scoresOf(copy.findMatches(query))).toEqual(scoresOf(t.findMatches(query)));
      expect(tiersOf(copy.findMatches(query))).toEqual(tiersOf(t.findMatches(query)));
    }
    // The copy dumps the same events (in another order of equal-depth nodes): repeats and media survive a second round.
    expect(eventSet(copy.dump())).toEqual(eventSet(t.dump()));
    expect(t.dump().some((e) => e.event.medium === "cpu")).toBe(true);
  });
});

describe("RadixTree chunks by reference (vLLM's offloading placeholders)", () => {
  function chunks(
    worker: number,
    tails: number[],
    span: number,
    medium: KvMedium = "cpu",
  ): RouterEvent {
    const e = storedEvent(BigInt(worker), 0n, [], null, 0, medium);
    const data = {
      type: "stored" as const,
      parentHash: null,
      blocks: [],
      chunks: { tailHashes: tails.map((l) => BigInt(l) * 100n), span },
    };
    return { ...e, event: { ...e.event, data } };
  }

  test("a chunk is its last block and the span - 1 above it; removing its hash removes them all", () => {
    const t = new RadixTree();
    t.applyEvent(store(1, [1, 2, 3, 4, 5, 6], null));
    expect(t.applyEvent(chunks(1, [3, 6], 3))).toBe("ok");
    expect(tiersOf(t.findMatches(q(1, 2, 3, 4, 5, 6)))).toEqual({ cpu: { "1:0": 6 } });
    expect(t.applyEvent(chunks(1, [6], 3))).toBe("ok"); // announced again: counted
    expect(t.applyEvent(remove(1, [6], "cpu"))).toBe("ok");
    expect(tiersOf(t.findMatches(q(1, 2, 3, 4, 5, 6)))).toEqual({ cpu: { "1:0": 6 } });
    expect(t.applyEvent(remove(1, [6], "cpu"))).toBe("ok");
    // The GPU still holds all six, so the reach stays 6; the CPU's own blocks are 1-3.
    expect(tiersOf(t.findMatches(q(1, 2, 3, 4, 5, 6)))).toEqual({ cpu: { "1:0": 6 } });
    expect(t.mediumSize({ workerId: 1n, dpRank: 0 }, "cpu")).toBe(3);
    expect(t.applyEvent(remove(1, [3], "cpu"))).toBe("ok");
    expect(t.mediumSize({ workerId: 1n, dpRank: 0 }, "cpu")).toBe(0);
    t.applyEvent(remove(1, [1, 2, 3, 4, 5, 6]));
    expect(t.nodeCount()).toBe(0);
  });

  test("unknown hashes, chunks longer than their path and GPU chunks are refused", () => {
    const t = new RadixTree();
    t.applyEvent(store(1, [1, 2], null));
    expect(t.applyEvent(chunks(1, [9, 2], 2))).toBe("block_not_found"); // 9 unknown; 2 placed
    expect(tiersOf(t.findMatches(q(1, 2)))).toEqual({ cpu: { "1:0": 2 } });
    expect(t.applyEvent(chunks(1, [2], 3, "disk"))).toBe("invalid_block");
    expect(t.applyEvent(chunks(1, [2], 1, "gpu"))).toBe("invalid_block");
    expect(t.applyEvent(chunks(2, [2], 1))).toBe("block_not_found"); // another engine's hash
  });
});

describe("storage_tier on the wire (Dynamo's RouterEvent.storage_tier)", () => {
  const events = [
    store(7, [1, 2], null),
    store(7, [1, 2], null, "cpu"),
    remove(7, [2], "disk"),
    clearedEvent(7n, 3n, 0, "cpu"),
    clearedEvent(7n, 4n, 0),
  ];

  test("round-trips through the writer, the schema and the fast path alike", () => {
    const wire = JSON.parse(
      JSON.stringify(events.map(routerEventToWire), (_k, x) =>
        typeof x === "bigint" ? x.toString() : x,
      ),
    );
    expect(wire.map((e: { storage_tier?: string }) => e.storage_tier)).toEqual([
      undefined,
      "host_pinned",
      "disk",
      "host_pinned",
      undefined,
    ]);
    const parsed = v.parse(RouterEventBatchSchema, wire);
    expect(parsed).toEqual(events);
    expect(fastRouterEventBatch(wire)).toEqual(parsed);
  });

  test("an external tier is refused by name; the fast path leaves it to the schema", () => {
    const wire = [
      { worker_id: 1, storage_tier: "external", event: { event_id: 0, data: "cleared" } },
    ];
    expect(fastRouterEventBatch(wire)).toBeUndefined();
    const r = v.safeParse(RouterEventBatchSchema, wire);
    expect(r.success).toBe(false);
    expect(r.issues?.[0]?.message).toContain("storage_tier");
  });
});
