/**
 * The facade, and Dynamo's indexer.rs interface tests (its `indexer_template` cases) run
 * against every event-applying mode behind KvIndex.
 */
import { describe, expect, test } from "bun:test";
import { removedEvent } from "../../../../src/core/events.ts";
import { worker } from "../../../../src/core/ids.ts";
import { ApproxIndex } from "../../../../src/router/kv-index/approx.ts";
import { createIndexer, NoIndex } from "../../../../src/router/kv-index/indexer.ts";
import { RadixTree } from "../../../../src/router/kv-index/radix-tree.ts";
import type { KvIndex } from "../../../../src/router/kv-index/types.ts";
import {
  createStoreEvent,
  makeClearEvent,
  makeRemoveEvent,
  makeStoreEvent,
  makeStoreEventWithParent,
  q,
  range,
  scoresOf,
  seqHashes,
} from "./helpers.ts";

describe("createIndexer", () => {
  test("precise, approximate and none build the matching implementation", () => {
    expect(createIndexer("precise")).toBeInstanceOf(RadixTree);
    expect(createIndexer("approximate")).toBeInstanceOf(ApproxIndex);
    expect(createIndexer("none")).toBeInstanceOf(NoIndex);
    const a = createIndexer("approximate", { prune: { ttlMs: 5 } }) as ApproxIndex;
    expect(a.config.ttlMs).toBe(5);
    expect(a.config.maxTreeSize).toBe(2 ** 20);
  });

  test("none: events are ignored and nothing ever matches", () => {
    const none = createIndexer("none");
    expect(none.applyEvent(makeStoreEvent(0, [1, 2, 3]))).toBe("ok");
    none.recordDecision(q(1), q(1), worker(0), 0);
    expect(none.findMatches(q(1, 2, 3)).scores.size).toBe(0);
    expect(none.size()).toBe(0);
    expect(none.dump()).toEqual([]);
    expect(none.counters().stored.ok).toBe(0);
  });

  test("precise: recordDecision and expire do nothing", () => {
    const p = createIndexer("precise");
    p.recordDecision(q(1), q(100), worker(0), 0);
    p.expire(1e12);
    expect(p.size()).toBe(0);
  });
});

for (const mode of ["precise", "approximate"] as const) {
  describe(`KvIndex contract (${mode}), Dynamo indexer_template cases`, () => {
    const make = (): KvIndex => createIndexer(mode);
    const score = (index: KvIndex, locals: number[], key = "0:0") =>
      index.findMatches(q(...locals)).scores.get(key);

    test("test_store_and_find", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      expect(scoresOf(index.findMatches(q(1, 2, 3)))).toEqual({ "0:0": 3 });
    });

    test("test_partial_match", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      expect(score(index, [1, 2, 999])).toBe(2);
    });

    test("test_remove", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      expect(index.applyEvent(makeRemoveEvent(0, [1, 2, 3]))).toBe("ok");
      expect(index.findMatches(q(1, 2, 3)).scores.size).toBe(0);
      expect(index.nodeCount()).toBe(0);
    });

    test("test_multiple_workers_shared_prefix", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2]));
      index.applyEvent(makeStoreEvent(1, [1, 3]));
      expect(scoresOf(index.findMatches(q(1)))).toEqual({ "0:0": 1, "1:0": 1 });
      expect(scoresOf(index.findMatches(q(1, 2)))).toEqual({ "0:0": 2, "1:0": 1 });
    });

    test("test_remove_worker", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      index.applyEvent(makeStoreEvent(1, [1, 2, 3]));
      index.removeWorker(0n);
      expect(scoresOf(index.findMatches(q(1, 2, 3)))).toEqual({ "1:0": 3 });
    });

    test("test_large_stores", () => {
      const index = make();
      for (let i = 0; i < 10; i++)
        index.applyEvent(
          makeStoreEvent(
            i,
            range(1, 1 << i).map((x) => x + i * 10000),
          ),
        );
      const last = range(1, 512).map((x) => x + 9 * 10000);
      expect(scoresOf(index.findMatches(q(...last)))).toEqual({ "9:0": 512 });
    });

    test("test_dump_and_restore", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      index.applyEvent(makeStoreEvent(1, [1, 2, 4]));
      const events = index.dump();
      expect(events.length).toBe(6);
      const restored = make();
      for (const e of events) expect(restored.applyEvent(e)).toBe("ok");
      expect(scoresOf(restored.findMatches(q(1, 2)))).toEqual(scoresOf(index.findMatches(q(1, 2))));
      expect(restored.size()).toBe(index.size());
    });

    test("test_clear_all_blocks", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      index.applyEvent(makeStoreEvent(1, [1, 2, 3]));
      index.applyEvent(makeClearEvent(0));
      expect(scoresOf(index.findMatches(q(1, 2, 3)))).toEqual({ "1:0": 3 });
    });

    test("test_empty_query and test_miss_query", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      expect(index.findMatches(q()).scores.size).toBe(0);
      expect(index.findMatches(q(999, 998)).scores.size).toBe(0);
    });

    test("test_parent_hash_chains", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      expect(index.applyEvent(makeStoreEventWithParent(0, [1, 2, 3], [4, 5]))).toBe("ok");
      expect(scoresOf(index.findMatches(q(1, 2, 3, 4, 5)))).toEqual({ "0:0": 5 });
      expect(score(index, [1, 2, 3])).toBe(3);
    });

    test("test_multiple_dp_ranks", () => {
      const index = make();
      for (const rank of [0, 1, 2]) index.applyEvent(makeStoreEvent(0, [1, 2, 3], rank));
      expect(scoresOf(index.findMatches(q(1, 2, 3)))).toEqual({ "0:0": 3, "0:1": 3, "0:2": 3 });
    });

    test("test_partial_block_removal", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      expect(score(index, [1, 2, 3])).toBe(3);
      index.applyEvent(removedEvent(0n, 0n, [seqHashes([1, 2, 3])[2]!]));
      expect(score(index, [1, 2, 3])).toBe(2);
      expect(score(index, [1, 2])).toBe(2);
    });

    test("test_remove_nonexistent_worker", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      index.removeWorker(999n);
      index.removeWorkerDpRank(0n, 7);
      expect(scoresOf(index.findMatches(q(1, 2, 3)))).toEqual({ "0:0": 3 });
    });

    test("test_remove_nonexistent_blocks: reported, counted, data kept", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      expect(index.applyEvent(makeRemoveEvent(0, [999, 998]))).toBe("block_not_found");
      expect(score(index, [1, 2, 3])).toBe(3);
      expect(index.counters().removed.block_not_found).toBe(1);
    });

    test("test_clear_then_reuse", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      index.applyEvent(makeClearEvent(0));
      expect(index.findMatches(q(1, 2, 3)).scores.size).toBe(0);
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      expect(scoresOf(index.findMatches(q(1, 2, 3)))).toEqual({ "0:0": 3 });
    });

    test("test_multiple_sequences_per_worker", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      index.applyEvent(makeStoreEvent(0, [100, 101, 102]));
      expect(score(index, [1, 2, 3])).toBe(3);
      expect(score(index, [100, 101, 102])).toBe(3);
      expect(score(index, [1, 100])).toBe(1);
    });

    // Dynamo's reference clears every dp rank of the worker; ids are dense per (worker, dp
    // rank) publisher, so here a Cleared speaks for the rank that sent it and no other.
    test("a Cleared clears only the dp rank that sent it", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3], 0));
      index.applyEvent(makeStoreEvent(0, [1, 2, 3], 1));
      expect(index.findMatches(q(1, 2, 3)).scores.size).toBe(2);
      index.applyEvent(makeClearEvent(0, 0));
      expect(scoresOf(index.findMatches(q(1, 2, 3)))).toEqual({ "0:1": 3 });
      index.applyEvent(makeClearEvent(0, 1));
      expect(index.findMatches(q(1, 2, 3)).scores.size).toBe(0);
    });

    test("test_long_sequence_single_store", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, range(1, 128)));
      expect(score(index, range(1, 128))).toBe(128);
      expect(score(index, range(1, 64))).toBe(64);
      const divergent = range(1, 100);
      divergent[49] = 99999;
      expect(score(index, divergent)).toBe(49);
    });

    test("test_long_sequence_multiple_continuations", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, range(1, 50)));
      index.applyEvent(makeStoreEventWithParent(0, range(1, 50), range(51, 100)));
      index.applyEvent(makeStoreEventWithParent(0, range(1, 100), range(101, 150)));
      expect(scoresOf(index.findMatches(q(...range(1, 150))))).toEqual({ "0:0": 150 });
      expect(index.findMatches(q(...range(45, 105))).scores.size).toBe(0);
    });

    test("test_long_sequence_branching_continuations", () => {
      const index = make();
      const common = range(1, 30);
      index.applyEvent(makeStoreEvent(0, common));
      index.applyEvent(makeStoreEventWithParent(0, common, range(31, 60)));
      index.applyEvent(makeStoreEvent(1, common));
      index.applyEvent(makeStoreEventWithParent(1, common, range(131, 160)));
      expect(scoresOf(index.findMatches(q(...common)))).toEqual({ "0:0": 30, "1:0": 30 });
      expect(scoresOf(index.findMatches(q(...range(1, 60))))).toEqual({ "0:0": 60, "1:0": 30 });
    });

    test("test_long_sequence_partial_removal", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, range(1, 100)));
      expect(score(index, range(1, 100))).toBe(100);
      index.applyEvent(removedEvent(0n, 0n, seqHashes(range(1, 100)).slice(79)));
      expect(score(index, range(1, 100))).toBe(79);
    });

    test("test_long_sequence_interleaved_workers", () => {
      const index = make();
      [100, 75, 50, 25].forEach((len, w) => index.applyEvent(makeStoreEvent(w, range(1, len))));
      expect(scoresOf(index.findMatches(q(...range(1, 60))))).toEqual({
        "0:0": 60,
        "1:0": 60,
        "2:0": 50,
        "3:0": 25,
      });
    });

    test("test_long_sequence_exact_and_off_by_one_jump_boundaries", () => {
      const index = make();
      const seqs = [
        range(1, 32),
        range(1001, 1064),
        range(2001, 2096),
        range(3001, 3031),
        range(3101, 3133),
        range(3201, 3263),
        range(3301, 3365),
      ];
      seqs.forEach((s, w) => index.applyEvent(makeStoreEvent(w, s)));
      seqs.forEach((s, w) => expect(score(index, s, `${w}:0`)).toBe(s.length));
    });

    test("test_long_sequence_divergence_at_jump_boundaries", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, range(1, 128)));
      for (const at of [31, 32, 33, 63, 64, 65, 95, 96, 97]) {
        const query = range(1, 128);
        query[at] = 99999;
        expect(score(index, query)).toBe(at);
      }
    });

    test("test_long_sequence_deep_continuation_chain", () => {
      const index = make();
      const prefix: number[] = [];
      for (let c = 0; c < 20; c++) {
        const chunk = range(c * 10 + 1, c * 10 + 10);
        expect(
          index.applyEvent(
            c === 0 ? makeStoreEvent(0, chunk) : makeStoreEventWithParent(0, prefix, chunk),
          ),
        ).toBe("ok");
        prefix.push(...chunk);
      }
      expect(score(index, range(1, 200))).toBe(200);
      expect(score(index, range(1, 75))).toBe(75);
    });

    test("test_long_sequence_clear_and_rebuild", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, range(1, 100)));
      index.applyEvent(makeClearEvent(0));
      expect(index.findMatches(q(...range(1, 100))).scores.size).toBe(0);
      index.applyEvent(makeStoreEvent(0, range(1001, 1100)));
      expect(score(index, range(1001, 1100))).toBe(100);
      expect(index.findMatches(q(...range(1, 100))).scores.size).toBe(0);
    });

    test("test_long_sequence_multiple_workers_diverging", () => {
      const index = make();
      const shared = range(1, 40);
      index.applyEvent(makeStoreEvent(0, range(1, 100)));
      index.applyEvent(makeStoreEvent(1, shared));
      index.applyEvent(makeStoreEventWithParent(1, shared, range(141, 180)));
      index.applyEvent(makeStoreEvent(2, shared));
      index.applyEvent(makeStoreEventWithParent(2, shared, range(241, 300)));
      expect(scoresOf(index.findMatches(q(...range(1, 100))))).toEqual({
        "0:0": 100,
        "1:0": 40,
        "2:0": 40,
      });
    });

    test("test_long_sequence_staggered_lengths", () => {
      const index = make();
      const lens = [10, 20, 35, 64, 100];
      lens.forEach((len, w) => index.applyEvent(makeStoreEvent(w, range(1, len))));
      expect(scoresOf(index.findMatches(q(...range(1, 100))))).toEqual({
        "0:0": 10,
        "1:0": 20,
        "2:0": 35,
        "3:0": 64,
        "4:0": 100,
      });
    });

    test("test_very_long_sequence", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, range(1, 1000)));
      expect(score(index, range(1, 1000))).toBe(1000);
      expect(score(index, range(1, 500))).toBe(500);
      const mid = range(1, 1000);
      mid[499] = 99999;
      expect(score(index, mid)).toBe(499);
    });

    test("test_increment_event_applied: counters by type and status", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1]));
      index.applyEvent(createStoreEvent(0, 1, [2], 424242));
      index.applyEvent(makeRemoveEvent(0, [77]));
      index.applyEvent(makeClearEvent(0));
      const c = index.counters();
      expect(c.stored.ok).toBe(1);
      expect(c.stored.parent_block_not_found).toBe(1);
      expect(c.removed.block_not_found).toBe(1);
      expect(c.cleared.ok).toBe(1);
      // A copy: mutating it does not touch the index.
      c.stored.ok = 99;
      expect(index.counters().stored.ok).toBe(1);
    });

    test("tree sizes accompany scores", () => {
      const index = make();
      index.applyEvent(makeStoreEvent(0, [1, 2, 3]));
      index.applyEvent(makeStoreEvent(0, [7, 8]));
      index.applyEvent(makeStoreEvent(1, [1]));
      const s = index.findMatches(q(1, 2));
      expect(Object.fromEntries(s.treeSizes)).toEqual({ "0:0": 5, "1:0": 1 });
      expect(index.workerSize("0:0")).toBe(5);
      expect(index.workerSize("bogus")).toBe(0);
      expect(s.frequencies).toEqual([]);
    });
  });
}
