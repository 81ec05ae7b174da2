/**
 * Differential test: random event streams applied to RadixTree and to ReferenceIndex (a Map
 * and string model) must agree on every status, score, size and node count, and the tree's
 * dump must replay into the reference's exact state. The seed is in the test name.
 */
import { describe, expect, test } from "bun:test";
import type { RouterEvent, StoredBlock } from "../../../../src/core/events.ts";
import { clearedEvent, removedEvent, storedEvent } from "../../../../src/core/events.ts";
import { RadixTree } from "../../../../src/router/kv-index/radix-tree.ts";
import { mulberry32 } from "../../../support/prng.ts";
import { scoresOf } from "./helpers.ts";
import { ReferenceIndex } from "./reference-index.ts";

/** A 64-bit hash of a string (two FNV-1a lanes), so engine hashes use all 64 bits. */
function hash64(s: string): bigint {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < s.length; i++) {
    a = Math.imul(a ^ s.charCodeAt(i), 0x01000193);
    b = Math.imul(b ^ s.charCodeAt(i), 0x01000193 + 2);
  }
  return (BigInt(a >>> 0) << 32n) | BigInt(b >>> 0);
}

function runStream(seed: number, steps: number, workers = 5): void {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const tree = new RadixTree();
  const ref = new ReferenceIndex();
  // Per worker: does it hash like everyone else (true) or with its own salt?
  const sharedHashing = [true, true, false, true, false];
  const tokens = [1n, 2n, 3n, 4n, 5n, 0xffffffff00000001n];
  let eventId = 0n;

  const engineHash = (worker: number, path: string): bigint => {
    if (rnd() < 0.06) return BigInt(1 + Math.floor(rnd() * 12)); // small pool: moves, aliases, duplicates
    return hash64(sharedHashing[worker % 5]! ? path : `${worker}${path}`);
  };

  for (let step = 0; step < steps; step++) {
    const worker = Math.floor(rnd() * workers);
    const dpRank = rnd() < 0.8 ? 0 : 1;
    const key = `${worker}:${dpRank}`;
    const held = [...(ref.workers.get(key)?.entries() ?? [])];
    const r = rnd();
    let ev: RouterEvent | null = null;
    if (r < 0.5) {
      let parent: bigint | null = null;
      let path = "";
      const pr = rnd();
      if (pr < 0.6 && held.length > 0) [parent, path] = pick(held);
      else if (pr < 0.68) parent = hash64(`missing${step}`);
      const blocks: StoredBlock[] = [];
      for (let n = 1 + Math.floor(rnd() * 4); n > 0; n--) {
        const t = pick(tokens);
        path = `${path}/${t}`;
        // Now and then a chain that names a block twice (self-reference): invalid_block.
        const repeat: bigint | null =
          rnd() < 0.04 ? (blocks.length > 0 ? blocks[0]!.blockHash : parent) : null;
        blocks.push({ tokensHash: t, blockHash: repeat ?? engineHash(worker, path) });
      }
      ev = storedEvent(BigInt(worker), eventId++, blocks, parent, dpRank);
    } else if (r < 0.75) {
      const hashes: bigint[] = [];
      for (let n = 1 + Math.floor(rnd() * 3); n > 0; n--)
        hashes.push(
          held.length > 0 && rnd() < 0.75 ? pick(held)[0] : BigInt(Math.floor(rnd() * 12)),
        );
      ev = removedEvent(BigInt(worker), eventId++, hashes, dpRank);
    } else if (r < 0.79) {
      ev = clearedEvent(BigInt(worker), eventId++, dpRank);
    } else if (r < 0.82) {
      tree.removeWorker(BigInt(worker));
      ref.removeWorker(BigInt(worker));
    } else if (r < 0.84) {
      tree.removeWorkerDpRank(BigInt(worker), dpRank);
      ref.removeWorkerDpRank(BigInt(worker), dpRank);
    }
    if (ev) expect(tree.applyEvent(ev), `step ${step}`).toBe(ref.apply(ev));

    expect(tree.size(), `size at step ${step}`).toBe(ref.size());
    expect(tree.nodeCount(), `nodeCount at step ${step}`).toBe(ref.nodeCount());
    expect(
      tree
        .knownWorkers()
        .map((w) => `${w.workerId}:${w.dpRank}`)
        .sort(),
    ).toEqual([...ref.workers.keys()].sort());
    const paths = ref.heldPaths();
    const queries: bigint[][] = [
      Array.from({ length: 1 + Math.floor(rnd() * 6) }, () => pick(tokens)),
    ];
    if (paths.length > 0) queries.push([...pick(paths), pick(tokens)]);
    for (const query of queries) {
      const got = tree.findMatches(BigUint64Array.from(query));
      const want = ref.findMatches(query);
      expect(scoresOf(got), `query ${query} at step ${step}`).toEqual(want);
      for (const k of got.scores.keys())
        expect(got.treeSizes.get(k)).toBe(ref.workers.get(k)!.size);
    }

    if (step % 40 === 39) {
      const dump = tree.dump();
      const replayedRef = new ReferenceIndex();
      const replayedTree = new RadixTree();
      for (const e of dump) {
        expect(replayedRef.apply(e)).toBe("ok");
        expect(replayedTree.applyEvent(e)).toBe("ok");
      }
      expect(replayedRef.state()).toEqual(ref.state());
      expect(replayedTree.nodeCount()).toBe(tree.nodeCount());
      expect(replayedTree.size()).toBe(tree.size());
      expect(replayedTree.dump().length).toBe(dump.length);
    }
  }
  // The stream exercised every outcome.
  const c = tree.counters();
  for (const status of ["ok", "parent_block_not_found", "invalid_block"] as const)
    expect(c.stored[status]).toBeGreaterThan(0);
  expect(c.removed.block_not_found).toBeGreaterThan(0);
  // Forget everyone: nothing may be left behind.
  for (let w = 0; w < workers; w++) tree.removeWorker(BigInt(w));
  expect(tree.nodeCount()).toBe(0);
  expect(tree.size()).toBe(0);
}

describe("RadixTree vs reference model", () => {
  const seeds = Array.from({ length: 24 }, (_, i) => 1000 + i * 7919);
  test.each(seeds)("random stream, seed %d", (seed) => runStream(seed, 400));
  // Past 32 worker slots a node held by several workers keeps them in a multi-word row; most
  // nodes keep their one holder inline. Both, and the moves between them, against the model.
  test.each(seeds.slice(0, 6))("random stream over 70 workers (140 slots), seed %d", (seed) =>
    runStream(seed, 1_500, 70),
  );
});
