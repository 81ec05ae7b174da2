import { describe, expect, test } from "bun:test";
import { computeBlockHashes, computeSeqHashes } from "../../../../src/core/block-hash.ts";
import { worker } from "../../../../src/core/ids.ts";
import { ApproxIndex } from "../../../../src/router/kv-index/approx.ts";
import { PruneManager } from "../../../../src/router/kv-index/prune-manager.ts";
import { createStoreEvent, scoresOf } from "./helpers.ts";

const BLOCK = 4; // Dynamo's approx tests use KV_BLOCK_SIZE = 4

function hashes(tokens: number[]): { local: BigUint64Array; seq: BigUint64Array } {
  const local = computeBlockHashes(tokens, BLOCK);
  return { local, seq: computeSeqHashes(local) };
}

function record(
  index: ApproxIndex,
  tokens: number[],
  workerId: number,
  now: number,
  dpRank = 0,
): void {
  const { local, seq } = hashes(tokens);
  index.recordDecision(local, seq, worker(workerId, dpRank), now);
}

function match(index: ApproxIndex, tokens: number[], now?: number): Record<string, number> {
  return scoresOf(index.findMatches(hashes(tokens).local, now));
}

/** Keys of the PruneManager tests are small ints: lo = key, hi = 0, worker slot 0. */
function pm(ttlMs: number, maxTreeSize: number, pruneTargetRatio: number): PruneManager {
  return new PruneManager({ ttlMs, maxTreeSize, pruneTargetRatio });
}
function collect(): { sink: (w: number, lo: number, hi: number) => void; keys: number[] } {
  const keys: number[] = [];
  return { keys, sink: (_w, lo) => keys.push(lo) };
}

describe("PruneManager (Dynamo approx.rs cases)", () => {
  test("test_prune_manager_expiry: timers fire after the TTL", () => {
    const m = pm(50, Number.MAX_SAFE_INTEGER, 0.5);
    for (const k of [1, 2, 3]) m.insert(0, k, 0, 0, 0 + 50);
    m.endInsert();
    for (const k of [1, 2, 3]) expect(m.expiryOf(0, k, 0)).toBe(50);
    const c = collect();
    expect(m.popExpired(49, c.sink)).toBe(0);
    expect(m.popExpired(70, c.sink)).toBe(3);
    expect(c.keys.sort()).toEqual([1, 2, 3]);
    for (const k of [1, 2, 3]) expect(m.expiryOf(0, k, 0)).toBeUndefined();
  });

  test("test_prune_manager_update_resets_ttl: re-insert refreshes, the stale heap entry is ignored", () => {
    const m = pm(50, Number.MAX_SAFE_INTEGER, 0.5);
    m.insert(0, 42, 0, 0, 0 + 50);
    const first = m.expiryOf(0, 42, 0)!;
    m.insert(0, 42, 0, 0, 25 + 50);
    expect(m.expiryOf(0, 42, 0)!).toBeGreaterThan(first);
    const c = collect();
    expect(m.popExpired(55, c.sink)).toBe(0); // the first expiry passed: stale, ignored
    expect(m.popExpired(85, c.sink)).toBe(1);
    expect(c.keys).toEqual([42]);
  });

  test("test_prune_manager_no_prune_when_within_bounds", () => {
    const m = pm(10_000, 100, 0.5);
    for (let k = 0; k < 50; k++) m.insert(0, k, 0, 0, 10_000);
    const c = collect();
    expect(m.prune(50, c.sink)).toBe(0);
    expect(m.size).toBe(50);
  });

  test("test_prune_manager_prune_removes_oldest_first", () => {
    const m = pm(10_000, 10, 0.5);
    for (let k = 1; k <= 15; k++) m.insert(0, k, 0, 0, k + 10_000);
    const c = collect();
    expect(m.prune(15, c.sink)).toBe(10); // down to 10 * 0.5 = 5
    expect(c.keys.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for (let k = 11; k <= 15; k++) expect(m.expiryOf(0, k, 0)).toBeDefined();
  });

  test("test_prune_manager_prune_reinsertion_updates_position", () => {
    const m = pm(10_000, 5, 0.8);
    for (let k = 1; k <= 10; k++) m.insert(0, k, 0, 0, k + 10_000);
    m.insert(0, 1, 0, 0, 11 + 10_000);
    const c = collect();
    expect(m.prune(10, c.sink)).toBe(6); // target 4
    expect(c.keys.sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7]);
    for (const k of [8, 9, 10, 1]) expect(m.expiryOf(0, k, 0)).toBeDefined();
  });

  test("test_block_entry_ordering: same expiry pops the deepest position first", () => {
    const m = pm(10_000, 0, 0);
    m.insert(0, 100, 0, 0, 5);
    m.insert(0, 50, 0, 1, 5);
    m.insert(0, 70, 0, 2, 5);
    m.insert(0, 10, 0, 0, 4); // earlier expiry beats depth
    const c = collect();
    m.popExpired(5, c.sink);
    expect(c.keys).toEqual([10, 70, 50, 100]);
  });

  test("equal expiry and position: the larger key pops first", () => {
    const m = pm(10_000, 0, 0);
    for (const k of [3, 9, 1]) m.insert(0, k, 0, 0, 5);
    const c = collect();
    m.popExpired(5, c.sink);
    expect(c.keys).toEqual([9, 3, 1]);
  });

  test("the heap is rebuilt when stale entries exceed 50x the timers", () => {
    const m = pm(10_000, 0, 0);
    for (let i = 0; i < 50; i++) m.insert(0, 7, 0, 0, i);
    m.endInsert();
    expect(m.heapSize).toBe(50);
    m.insert(0, 7, 0, 0, 50);
    m.endInsert();
    expect(m.heapSize).toBe(1);
    expect(m.size).toBe(1);
    const c = collect();
    expect(m.popExpired(49, c.sink)).toBe(0);
    expect(m.popExpired(50, c.sink)).toBe(1);
  });

  test("removeWorker forgets its timers; their heap entries turn stale", () => {
    const m = pm(10_000, 0, 0);
    m.insert(0, 1, 0, 0, 5);
    m.insert(1, 1, 0, 0, 5);
    m.removeWorker(0);
    expect(m.size).toBe(1);
    const fired: number[] = [];
    m.popExpired(10, (w) => fired.push(w));
    expect(fired).toEqual([1]);
  });
});

describe("ApproxIndex (Dynamo approx.rs end-to-end cases, with explicit time)", () => {
  test("test_approx_kv_indexer_basic_flow: no match, match after the decision, none after the TTL", () => {
    const index = new ApproxIndex({
      ttlMs: 200,
      maxTreeSize: Number.MAX_SAFE_INTEGER,
      pruneTargetRatio: 0.5,
    });
    const tokens = [1, 2, 3, 4];
    expect(match(index, tokens, 0)).toEqual({});
    record(index, tokens, 0, 0);
    expect(match(index, tokens, 100)).toEqual({ "0:0": 1 });
    expect(match(index, tokens, 199)).toEqual({ "0:0": 1 });
    expect(match(index, tokens, 250)).toEqual({});
    expect(index.size()).toBe(0);
    expect(index.nodeCount()).toBe(0);
  });

  test("expire(now) alone removes expired entries; findMatches without now does not expire", () => {
    const index = new ApproxIndex({ ttlMs: 100 });
    record(index, [1, 2, 3, 4, 5, 6, 7, 8], 3, 1000);
    expect(match(index, [1, 2, 3, 4, 5, 6, 7, 8])).toEqual({ "3:0": 2 });
    expect(index.nextExpiry()).toBe(1100);
    index.expire(1099);
    expect(index.size()).toBe(2);
    index.expire(1100);
    expect(index.size()).toBe(0);
    expect(index.timerCount()).toBe(0);
  });

  test("a repeated decision refreshes the TTL", () => {
    const index = new ApproxIndex({ ttlMs: 100 });
    record(index, [1, 2, 3, 4], 0, 0);
    record(index, [1, 2, 3, 4], 0, 80);
    expect(match(index, [1, 2, 3, 4], 150)).toEqual({ "0:0": 1 });
    expect(match(index, [1, 2, 3, 4], 180)).toEqual({});
  });

  test("test_remove_worker", () => {
    const index = new ApproxIndex({ ttlMs: 5000 });
    record(index, [10, 11, 12, 13], 7, 0);
    expect(match(index, [10, 11, 12, 13], 1)).toEqual({ "7:0": 1 });
    index.removeWorker(7n);
    expect(match(index, [10, 11, 12, 13], 2)).toEqual({});
    expect(index.timerCount()).toBe(0);
  });

  test("test_remove_worker_preserves_other_workers", () => {
    const index = new ApproxIndex({ ttlMs: 5000 });
    record(index, [100, 101, 102, 103], 30, 0);
    record(index, [100, 101, 102, 103], 31, 0);
    expect(match(index, [100, 101, 102, 103], 1)).toEqual({ "30:0": 1, "31:0": 1 });
    index.removeWorker(30n);
    expect(match(index, [100, 101, 102, 103], 2)).toEqual({ "31:0": 1 });
    expect(index.timerCount()).toBe(1);
  });

  test("test_common_prefix_overlap", () => {
    const index = new ApproxIndex({ ttlMs: 5000 });
    record(index, [1, 2, 3, 4], 11, 0);
    expect(match(index, [1, 2, 3, 4, 5, 6, 7, 8], 1)).toEqual({ "11:0": 1 });
  });

  test("test_multiple_workers_same_block", () => {
    const index = new ApproxIndex({ ttlMs: 5000 });
    record(index, [9, 8, 7, 6], 21, 0);
    record(index, [9, 8, 7, 6], 22, 0);
    expect(match(index, [9, 8, 7, 6], 1)).toEqual({ "21:0": 1, "22:0": 1 });
  });

  test("test_approx_indexer_e2e_pruning: over max size, prune the oldest down to max * ratio", () => {
    const index = new ApproxIndex({ ttlMs: 60_000, maxTreeSize: 5, pruneTargetRatio: 0.4 });
    const seqOf = (i: number) => [i * 10, i * 10 + 1, i * 10 + 2, i * 10 + 3];
    for (let i = 0; i < 5; i++) record(index, seqOf(i), 42, i);
    for (let i = 0; i < 5; i++) expect(match(index, seqOf(i))).toEqual({ "42:0": 1 });
    record(index, seqOf(5), 42, 5); // 6 > 5: prune to 2
    for (let i = 0; i < 4; i++) expect(match(index, seqOf(i))).toEqual({});
    for (let i = 4; i < 6; i++) expect(match(index, seqOf(i))).toEqual({ "42:0": 1 });
    expect(index.size()).toBe(2);
  });

  test("pruning inside one decision removes the deepest blocks first", () => {
    const index = new ApproxIndex({ ttlMs: 60_000, maxTreeSize: 8, pruneTargetRatio: 0.5 });
    const tokens = Array.from({ length: 40 }, (_, i) => i); // 10 blocks
    record(index, tokens, 1, 0); // 10 > 8: prune to 4
    expect(match(index, tokens)).toEqual({ "1:0": 4 });
    expect(index.nodeCount()).toBe(4);
  });

  test("the stored block hashes are the sequence hashes, tokens hashes the local hashes", () => {
    const index = new ApproxIndex();
    const { local, seq } = hashes([5, 6, 7, 8, 9, 10, 11, 12]);
    index.recordDecision(local, seq, worker(4, 1), 0);
    const dump = index.dump();
    expect(dump).toHaveLength(2);
    const blocks = dump.map((e) =>
      e.event.data.type === "stored" ? e.event.data.blocks[0]! : null,
    );
    expect(blocks).toEqual([
      { tokensHash: local[0]!, blockHash: seq[0]! },
      { tokensHash: local[1]!, blockHash: seq[1]! },
    ]);
    expect(dump.map((e) => e.event.dpRank)).toEqual([1, 1]);
    expect(dump[1]!.event.data.type === "stored" && dump[1]!.event.data.parentHash).toBe(seq[0]!);
  });

  test("defaults: 120 s TTL, 2^20 entries, ratio 0.8", () => {
    expect(new ApproxIndex().config).toEqual({
      ttlMs: 120_000,
      maxTreeSize: 1_048_576,
      pruneTargetRatio: 0.8,
    });
    expect(() => new ApproxIndex({ ttlMs: 0 })).toThrow(RangeError);
    expect(() => new ApproxIndex({ pruneTargetRatio: 2 })).toThrow(RangeError);
  });

  test("dp ranks are separate targets; removeWorkerDpRank drops one", () => {
    const index = new ApproxIndex({ ttlMs: 1000 });
    record(index, [1, 2, 3, 4], 5, 0, 0);
    record(index, [1, 2, 3, 4], 5, 0, 1);
    expect(match(index, [1, 2, 3, 4], 1)).toEqual({ "5:0": 1, "5:1": 1 });
    index.removeWorkerDpRank(5n, 1);
    expect(match(index, [1, 2, 3, 4], 2)).toEqual({ "5:0": 1 });
    expect(index.timerCount()).toBe(1);
  });

  test("engine events still apply; Cleared drops its rank's timers too, not the worker's other ranks'", () => {
    const index = new ApproxIndex({ ttlMs: 1000 });
    record(index, [1, 2, 3, 4], 5, 0);
    record(index, [1, 2, 3, 4], 5, 0, 1);
    expect(index.applyEvent(createStoreEvent(6, 0, [1, 2]))).toBe("ok");
    expect(scoresOf(index.findMatches(BigUint64Array.from([1n, 2n])))).toEqual({ "6:0": 2 });
    expect(index.timerCount()).toBe(2);
    index.applyEvent({
      workerId: 5n,
      event: { eventId: 1n, dpRank: 0, data: { type: "cleared" } },
    });
    expect(index.timerCount()).toBe(1);
    expect(match(index, [1, 2, 3, 4], 1)).toEqual({ "5:1": 1 });
    index.applyEvent({
      workerId: 5n,
      event: { eventId: 1n, dpRank: 1, data: { type: "cleared" } },
    });
    expect(index.timerCount()).toBe(0);
    expect(match(index, [1, 2, 3, 4], 1)).toEqual({});
    expect(index.counters().stored.ok).toBe(1);
  });

  test("mismatched hash arrays are a programming error", () => {
    const index = new ApproxIndex();
    expect(() =>
      index.recordDecision(new BigUint64Array(2), new BigUint64Array(1), worker(0), 0),
    ).toThrow(RangeError);
  });
});
