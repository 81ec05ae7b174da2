import { describe, expect, test } from "bun:test";
import { clearedEvent, removedEvent, storedEvent } from "../../../../src/core/events.ts";
import { RadixTree } from "../../../../src/router/kv-index/radix-tree.ts";
import { lcgAnsiC } from "../../../support/prng.ts";
import { createRemoveEvent, createStoreEvent, q, scoresOf } from "./helpers.ts";

function replay(events: ReturnType<RadixTree["dump"]>): RadixTree {
  const t = new RadixTree();
  for (const e of events) expect(t.applyEvent(e)).toBe("ok");
  return t;
}

describe("RadixTree (Dynamo radix_tree.rs cases)", () => {
  test("test_radix_tree: store, share a prefix, remove, continue from a parent", () => {
    const trie = new RadixTree();
    expect(trie.applyEvent(createStoreEvent(0, 1, [1, 2, 3]))).toBe("ok");
    expect(scoresOf(trie.findMatches(q(1, 2, 3)))).toEqual({ "0:0": 3 });
    expect(trie.workerSize("0:0")).toBe(3);
    expect(trie.knownWorkers()).toHaveLength(1);
    expect(trie.nodeCount()).toBe(3);

    expect(trie.applyEvent(createStoreEvent(1, 1, [1, 4, 5]))).toBe("ok");
    expect(scoresOf(trie.findMatches(q(1, 2, 3)))).toEqual({ "0:0": 3, "1:0": 1 });
    expect(trie.workerSize("0:0")).toBe(3);
    expect(trie.workerSize("1:0")).toBe(3);
    expect(trie.nodeCount()).toBe(5); // 1 shared, then 2,3 and 4,5

    expect(trie.applyEvent(createRemoveEvent(1, 2, [5]))).toBe("ok");
    expect(trie.workerSize("1:0")).toBe(2);
    expect(trie.nodeCount()).toBe(4);

    expect(trie.applyEvent(createRemoveEvent(1, 3, [4]))).toBe("ok");
    expect(trie.workerSize("1:0")).toBe(1);
    // Dynamo keeps the emptied node 4 as a child of 1 (children.len() == 2); we free it.
    expect(trie.nodeCount()).toBe(3);

    expect(trie.applyEvent(createStoreEvent(1, 4, [2, 6, 7], 100))).toBe("ok");
    expect(scoresOf(trie.findMatches(q(1, 2, 3)))).toEqual({ "0:0": 3, "1:0": 2 });
    expect(trie.workerSize("0:0")).toBe(3);
    expect(trie.workerSize("1:0")).toBe(4);
    expect(trie.size()).toBe(7);
    expect(scoresOf(trie.findMatches(q(1, 2, 6, 7)))).toEqual({ "0:0": 2, "1:0": 4 });
  });

  test("test_radix_tree_apply_event_errors: unknown parent, unknown block, self reference", () => {
    const trie = new RadixTree();
    expect(trie.applyEvent(createStoreEvent(0, 0, [1, 2, 3], 12345))).toBe(
      "parent_block_not_found",
    );
    expect(trie.nodeCount()).toBe(0);
    expect(trie.applyEvent(createRemoveEvent(0, 0, [1, 2, 3]))).toBe("block_not_found");
    expect(trie.applyEvent(createStoreEvent(0, 4, [1]))).toBe("ok");
    // parent = 100 (block 1) and block 1 again: a block would be its own parent.
    expect(trie.applyEvent(createStoreEvent(0, 5, [1, 2, 3], 100))).toBe("invalid_block");
    expect(trie.nodeCount()).toBe(1);
    expect(trie.workerSize("0:0")).toBe(1);
    const c = trie.counters();
    expect(c.stored).toEqual({
      ok: 1,
      parent_block_not_found: 1,
      block_not_found: 0,
      invalid_block: 1,
    });
    expect(c.removed).toEqual({
      ok: 0,
      parent_block_not_found: 0,
      block_not_found: 1,
      invalid_block: 0,
    });
  });

  test("test_clear_all_blocks: Cleared keeps worker keys, other workers untouched", () => {
    const trie = new RadixTree();
    expect(trie.findMatches(q(0)).scores.size).toBe(0);
    trie.applyEvent(createStoreEvent(0, 0, [0, 1, 3]));
    trie.applyEvent(createStoreEvent(1, 0, [0, 2, 3]));
    expect(scoresOf(trie.findMatches(q(0)))).toEqual({ "0:0": 1, "1:0": 1 });

    trie.applyEvent(clearedEvent(0n, 1n));
    expect(trie.knownWorkers().map((w) => w.workerId)).toEqual([0n, 1n]);
    expect(trie.workerSize("0:0")).toBe(0);
    expect(scoresOf(trie.findMatches(q(0, 2)))).toEqual({ "1:0": 2 });
    expect(scoresOf(trie.findMatches(q(0, 1, 3)))).toEqual({ "1:0": 1 });

    trie.applyEvent(createStoreEvent(0, 0, [4, 5]));
    expect(scoresOf(trie.findMatches(q(4, 5)))).toEqual({ "0:0": 2 });

    trie.applyEvent(clearedEvent(0n, 2n));
    trie.applyEvent(clearedEvent(0n, 3n));
    trie.applyEvent(clearedEvent(1n, 4n));
    expect(trie.knownWorkers()).toHaveLength(2);
    expect(trie.size()).toBe(0);
    expect(trie.nodeCount()).toBe(0);

    trie.applyEvent(createStoreEvent(0, 0, [6]));
    trie.applyEvent(createStoreEvent(1, 0, [6]));
    trie.removeWorker(0n);
    expect(trie.knownWorkers().map((w) => w.workerId)).toEqual([1n]);
    expect(scoresOf(trie.findMatches(q(6)))).toEqual({ "1:0": 1 });

    // Clearing an unknown worker through an event makes it known (as Dynamo's tree does).
    trie.applyEvent(clearedEvent(2n, 0n));
    expect(trie.knownWorkers().map((w) => w.workerId)).toEqual([1n, 2n]);
    expect(scoresOf(trie.findMatches(q(6)))).toEqual({ "1:0": 1 });
  });

  test("test_radix_tree_default: a new tree is empty", () => {
    const trie = new RadixTree();
    expect(trie.nodeCount()).toBe(0);
    expect(trie.size()).toBe(0);
    expect(trie.knownWorkers()).toEqual([]);
    expect(trie.dump()).toEqual([]);
  });

  test("test_remove_worker_verifies_hash_removal", () => {
    const trie = new RadixTree();
    trie.applyEvent(createStoreEvent(0, 0, [1, 2, 3]));
    trie.applyEvent(createStoreEvent(1, 0, [1, 2, 3]));
    trie.applyEvent(createStoreEvent(2, 0, [1, 4, 5]));
    expect(trie.workerSize("0:0")).toBe(3);
    expect(scoresOf(trie.findMatches(q(1)))).toEqual({ "0:0": 1, "1:0": 1, "2:0": 1 });
    trie.removeWorker(0n);
    expect(trie.workerSize("0:0")).toBe(0);
    expect(trie.knownWorkers()).toHaveLength(2);
    expect(scoresOf(trie.findMatches(q(1)))).toEqual({ "1:0": 1, "2:0": 1 });
    expect(scoresOf(trie.findMatches(q(1, 2, 3)))).toEqual({ "1:0": 3, "2:0": 1 });
    expect(trie.nodeCount()).toBe(5);
  });
});

describe("RadixTree statuses", () => {
  test("a Removed with some unknown hashes applies the known ones and reports block_not_found", () => {
    const t = new RadixTree();
    t.applyEvent(createStoreEvent(0, 0, [1, 2, 3]));
    expect(t.applyEvent(createRemoveEvent(0, 1, [9, 3, 8]))).toBe("block_not_found");
    expect(scoresOf(t.findMatches(q(1, 2, 3)))).toEqual({ "0:0": 2 });
    expect(t.counters().removed.block_not_found).toBe(1);
  });

  test("duplicate block hashes inside one Stored are rejected whole", () => {
    const t = new RadixTree();
    const ev = storedEvent(0n, 0n, [
      { tokensHash: 1n, blockHash: 100n },
      { tokensHash: 2n, blockHash: 200n },
      { tokensHash: 3n, blockHash: 100n },
    ]);
    expect(t.applyEvent(ev)).toBe("invalid_block");
    expect(t.nodeCount()).toBe(0);
    expect(t.size()).toBe(0);
  });

  test("duplicate check also holds for long events (hash-set path)", () => {
    const t = new RadixTree();
    const blocks = Array.from({ length: 100 }, (_, i) => ({
      tokensHash: BigInt(i + 1),
      blockHash: BigInt(i + 1) * 100n,
    }));
    blocks.push({ tokensHash: 999n, blockHash: 5000n });
    expect(t.applyEvent(storedEvent(0n, 0n, blocks))).toBe("invalid_block");
    blocks.pop();
    expect(t.applyEvent(storedEvent(0n, 0n, blocks))).toBe("ok");
    expect(t.findMatches(q(...blocks.map((_, i) => i + 1))).scores.get("0:0")).toBe(100);
  });

  test("a repeated Stored changes nothing", () => {
    const t = new RadixTree();
    expect(t.applyEvent(createStoreEvent(0, 0, [1, 2]))).toBe("ok");
    expect(t.applyEvent(createStoreEvent(0, 1, [1, 2]))).toBe("ok");
    expect(t.size()).toBe(2);
    expect(t.applyEvent(createRemoveEvent(0, 2, [2, 1]))).toBe("ok");
    expect(t.nodeCount()).toBe(0);
  });

  test("an empty Stored, Removed or query is fine", () => {
    const t = new RadixTree();
    expect(t.applyEvent(storedEvent(0n, 0n, []))).toBe("ok");
    expect(t.applyEvent(removedEvent(0n, 0n, []))).toBe("ok");
    expect(t.findMatches(new BigUint64Array(0)).scores.size).toBe(0);
    expect(t.nodeCount()).toBe(0);
  });

  test("full 64-bit and negative hashes are exact (no precision loss)", () => {
    const t = new RadixTree();
    const big = (1n << 64n) - 1n;
    const near = (1n << 64n) - 2n;
    t.applyEvent(storedEvent(0n, 0n, [{ tokensHash: big, blockHash: big }]));
    t.applyEvent(storedEvent(0n, 1n, [{ tokensHash: near, blockHash: near }], big));
    expect(scoresOf(t.findMatches(BigUint64Array.from([big, near])))).toEqual({ "0:0": 2 });
    expect(t.findMatches(BigUint64Array.from([big - (1n << 32n), near])).scores.size).toBe(0);
    // -1 as i64 is the same block as 2^64 - 1.
    expect(t.applyEvent(removedEvent(0n, 2n, [-1n]))).toBe("ok");
    expect(t.findMatches(BigUint64Array.from([big])).scores.size).toBe(0);
  });

  test("a query given as a subarray view reads the right hashes", () => {
    const t = new RadixTree();
    t.applyEvent(createStoreEvent(0, 0, [1, 2, 3]));
    const buf = BigUint64Array.from([9n, 1n, 2n, 3n]);
    expect(scoresOf(t.findMatches(buf.subarray(1)))).toEqual({ "0:0": 3 });
  });
});

describe("RadixTree per-worker engine hashes", () => {
  test("workers may name the same block with different engine hashes", () => {
    const t = new RadixTree();
    t.applyEvent(
      storedEvent(0n, 0n, [
        { tokensHash: 1n, blockHash: 11n },
        { tokensHash: 2n, blockHash: 12n },
      ]),
    );
    t.applyEvent(storedEvent(1n, 0n, [{ tokensHash: 1n, blockHash: 21n }]));
    expect(t.applyEvent(storedEvent(1n, 1n, [{ tokensHash: 2n, blockHash: 22n }], 21n))).toBe("ok");
    expect(t.nodeCount()).toBe(2);
    expect(scoresOf(t.findMatches(q(1, 2)))).toEqual({ "0:0": 2, "1:0": 2 });
    // Worker 1 cannot name worker 0's hash as a parent.
    expect(t.applyEvent(storedEvent(1n, 2n, [{ tokensHash: 3n, blockHash: 23n }], 12n))).toBe(
      "parent_block_not_found",
    );
    // Removing by the other worker's hash is unknown for this worker.
    expect(t.applyEvent(removedEvent(1n, 3n, [11n]))).toBe("block_not_found");
    expect(t.applyEvent(removedEvent(1n, 4n, [22n]))).toBe("ok");
    expect(scoresOf(t.findMatches(q(1, 2)))).toEqual({ "0:0": 2, "1:0": 1 });
    // The dump keeps each worker's own hashes.
    const r = replay(t.dump());
    expect(r.applyEvent(removedEvent(1n, 5n, [21n]))).toBe("ok");
    expect(r.applyEvent(removedEvent(0n, 5n, [12n]))).toBe("ok");
  });

  test("one block under two hashes (two copies) stays until both are removed", () => {
    const t = new RadixTree();
    t.applyEvent(storedEvent(0n, 0n, [{ tokensHash: 1n, blockHash: 100n }]));
    t.applyEvent(storedEvent(0n, 1n, [{ tokensHash: 1n, blockHash: 101n }]));
    expect(t.size()).toBe(2);
    expect(t.nodeCount()).toBe(1);
    const r = replay(t.dump());
    for (const tree of [t, r]) {
      expect(tree.applyEvent(removedEvent(0n, 2n, [100n]))).toBe("ok");
      expect(scoresOf(tree.findMatches(q(1)))).toEqual({ "0:0": 1 });
      expect(tree.applyEvent(removedEvent(0n, 3n, [101n]))).toBe("ok");
      expect(tree.findMatches(q(1)).scores.size).toBe(0);
      expect(tree.nodeCount()).toBe(0);
    }
  });

  test("a hash re-stored at another position moves there (no graft, no cycle)", () => {
    const t = new RadixTree();
    t.applyEvent(createStoreEvent(0, 0, [1, 2])); // 100 -> 200
    // Block hash 100 again, now as tokens 3 under 200: Dynamo would graft node 1 under 2.
    expect(t.applyEvent(storedEvent(0n, 1n, [{ tokensHash: 3n, blockHash: 100n }], 200n))).toBe(
      "ok",
    );
    expect(t.size()).toBe(2);
    // Worker 0 no longer holds block 1, so nothing matches from the root...
    expect(t.findMatches(q(1, 2, 3)).scores.size).toBe(0);
    // ...but 1 stays as a path node above 2, and a re-store of 1 re-attaches 2 and 3.
    expect(t.nodeCount()).toBe(3);
    t.applyEvent(storedEvent(0n, 2n, [{ tokensHash: 1n, blockHash: 101n }]));
    expect(scoresOf(t.findMatches(q(1, 2, 3)))).toEqual({ "0:0": 3 });
    const dump = t.dump();
    expect(replay(dump).dump()).toEqual(dump);
  });
});

describe("RadixTree evicted parents (path nodes)", () => {
  test("a child kept after its parent is removed: no match through it, still a valid parent", () => {
    const t = new RadixTree();
    t.applyEvent(createStoreEvent(0, 0, [1, 2, 3]));
    expect(t.applyEvent(createRemoveEvent(0, 1, [1]))).toBe("ok");
    expect(t.findMatches(q(1, 2, 3)).scores.size).toBe(0);
    expect(t.size()).toBe(2);
    expect(t.nodeCount()).toBe(3);
    expect(t.applyEvent(createStoreEvent(0, 2, [4], 300))).toBe("ok");
    expect(t.applyEvent(createStoreEvent(0, 3, [1]))).toBe("ok");
    expect(scoresOf(t.findMatches(q(1, 2, 3, 4)))).toEqual({ "0:0": 4 });
  });

  test("matching stops for a worker that lacks a middle block, not for the others", () => {
    const t = new RadixTree();
    t.applyEvent(createStoreEvent(0, 0, [1, 2, 3, 4]));
    t.applyEvent(createStoreEvent(1, 0, [1, 2, 3, 4]));
    t.applyEvent(createRemoveEvent(1, 1, [2]));
    expect(scoresOf(t.findMatches(q(1, 2, 3, 4)))).toEqual({ "0:0": 4, "1:0": 1 });
    t.removeWorker(0n);
    expect(scoresOf(t.findMatches(q(1, 2, 3, 4)))).toEqual({ "1:0": 1 });
    expect(t.nodeCount()).toBe(4);
    t.applyEvent(createRemoveEvent(1, 2, [4, 3]));
    expect(t.nodeCount()).toBe(1);
  });

  test("dump of a worker holding a block without its parent replays exactly", () => {
    const t = new RadixTree();
    t.applyEvent(createStoreEvent(0, 0, [1, 2, 3, 4]));
    t.applyEvent(createStoreEvent(1, 0, [1, 2]));
    t.applyEvent(createRemoveEvent(0, 1, [2, 1]));
    const dump = t.dump();
    const r = replay(dump);
    expect(r.nodeCount()).toBe(t.nodeCount());
    expect(r.size()).toBe(t.size());
    expect(scoresOf(r.findMatches(q(1, 2, 3, 4)))).toEqual({ "1:0": 2 });
    expect(r.applyEvent(createStoreEvent(0, 9, [1, 2]))).toBe("ok");
    expect(scoresOf(r.findMatches(q(1, 2, 3, 4)))).toEqual({ "0:0": 4, "1:0": 2 });
    expect(r.applyEvent(createRemoveEvent(0, 10, [3, 4, 1, 2]))).toBe("ok");
  });
});

describe("RadixTree dump (§3.5)", () => {
  test("one Stored per (block, worker), per worker in BFS order, ids from 0", () => {
    const t = new RadixTree();
    t.applyEvent(createStoreEvent(1, 0, [1, 2, 3]));
    t.applyEvent(createStoreEvent(0, 0, [1, 4], null, 2));
    t.applyEvent(createStoreEvent(0, 0, [5]));
    const dump = t.dump();
    expect(dump.map((e) => e.event.eventId)).toEqual([0n, 1n, 2n, 3n, 4n, 5n]);
    const rows = dump.map((e) => {
      const d = e.event.data;
      if (d.type !== "stored") throw new Error("stored expected");
      return [
        `${e.workerId}:${e.event.dpRank}`,
        d.parentHash,
        d.blocks.map((b) => [b.tokensHash, b.blockHash]),
      ];
    });
    expect(rows).toEqual([
      ["0:0", null, [[5n, 500n]]],
      ["0:2", null, [[1n, 100n]]],
      ["0:2", 100n, [[4n, 400n]]],
      ["1:0", null, [[1n, 100n]]],
      ["1:0", 100n, [[2n, 200n]]],
      ["1:0", 200n, [[3n, 300n]]],
    ]);
  });

  test("dump -> replay -> equal matches and sizes (Dynamo test_dump_and_restore)", () => {
    const t = new RadixTree();
    t.applyEvent(createStoreEvent(0, 0, [1, 2, 3]));
    t.applyEvent(createStoreEvent(1, 0, [1, 2, 4]));
    const r = replay(t.dump());
    for (const query of [q(1, 2), q(1, 2, 3), q(1, 2, 4)]) {
      expect(scoresOf(r.findMatches(query))).toEqual(scoresOf(t.findMatches(query)));
    }
    expect(r.dump()).toEqual(t.dump());
  });
});

describe("RadixTree memory", () => {
  test("removing every worker empties the tree", () => {
    const t = new RadixTree();
    for (let w = 0; w < 40; w++) {
      t.applyEvent(createStoreEvent(w, 0, [1, 2, 3, w + 10], null, w % 3));
      t.applyEvent(createStoreEvent(w, 1, [7, w + 100]));
    }
    expect(t.nodeCount()).toBeGreaterThan(40);
    for (let w = 0; w < 40; w++) t.removeWorker(BigInt(w));
    expect(t.nodeCount()).toBe(0);
    expect(t.size()).toBe(0);
    expect(t.knownWorkers()).toEqual([]);
  });

  test("store/remove churn returns node count and typed-array memory to baseline", () => {
    const t = new RadixTree();
    const rnd = lcgAnsiC(12345);
    t.applyEvent(createStoreEvent(99, 0, [1, 2, 3]));
    const baseNodes = t.nodeCount();
    const runChurn = () => {
      const live: [number, number[]][] = [];
      for (let i = 0; i < 4000; i++) {
        const w = Math.floor(rnd() * 8);
        const len = 1 + Math.floor(rnd() * 20);
        const first = 1 + Math.floor(rnd() * 50);
        const locals = Array.from(
          { length: len },
          (_, k) => first * 1000 + k + Math.floor(rnd() * 3),
        );
        t.applyEvent(createStoreEvent(w, i, locals));
        live.push([w, locals]);
        if (rnd() < 0.45 && live.length > 0) {
          const [rw, rl] = live.splice(Math.floor(rnd() * live.length), 1)[0]!;
          t.applyEvent(createRemoveEvent(rw, i, rl));
        }
      }
      for (const [w, l] of live) t.applyEvent(createRemoveEvent(w, 0, l));
    };
    runChurn();
    const memAfterFirst = t.memoryBytes();
    expect(t.nodeCount()).toBe(baseNodes);
    runChurn();
    expect(t.nodeCount()).toBe(baseNodes);
    expect(t.memoryBytes()).toBeLessThanOrEqual(memAfterFirst);
    for (let w = 0; w < 8; w++) t.removeWorker(BigInt(w));
    t.removeWorker(99n);
    expect(t.nodeCount()).toBe(0);
    expect(t.memoryBytes()).toBe(new RadixTree().memoryBytes());
  });

  test("more than 32 and more than 64 workers (bitset grows)", () => {
    const t = new RadixTree();
    for (let w = 0; w < 130; w++)
      t.applyEvent(createStoreEvent(w, 0, w % 2 === 0 ? [1, 2, 3] : [1, 2]));
    const s = t.findMatches(q(1, 2, 3));
    expect(s.scores.size).toBe(130);
    for (let w = 0; w < 130; w++) expect(s.scores.get(`${w}:0`)).toBe(w % 2 === 0 ? 3 : 2);
    expect(s.treeSizes.get("129:0")).toBe(2);
    for (let w = 0; w < 130; w += 2) t.removeWorker(BigInt(w));
    expect(t.findMatches(q(1, 2, 3)).scores.size).toBe(65);
    t.applyEvent(createStoreEvent(1000, 0, [1, 2, 3])); // reuses a freed slot
    expect(scoresOf(t.findMatches(q(1, 2, 3)))["1000:0"]).toBe(3);
    for (let w = 1; w < 130; w += 2) t.removeWorker(BigInt(w));
    t.removeWorker(1000n);
    expect(t.nodeCount()).toBe(0);
  });
});
