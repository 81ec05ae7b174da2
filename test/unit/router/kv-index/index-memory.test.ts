/**
 * The index's memory follows its live nodes: a node costs the same whatever the number of
 * registered workers, the holder bitsets narrow when workers leave, and once most nodes are
 * gone the store compacts (ids renumbered, edges and lookups remapped) with every answer
 * unchanged.
 */
import { describe, expect, test } from "bun:test";
import { storedEvent, type RouterEvent } from "../../../../src/core/events.ts";
import { RadixTree } from "../../../../src/router/kv-index/radix-tree.ts";
import { scoresOf } from "./helpers.ts";

/** A chain of `len` blocks for `worker`, tokens `tag * 1e6 + i` (engine hash = token + worker salt). */
function chain(worker: number, tag: number, len: number, from = 0): RouterEvent {
  const blocks = Array.from({ length: len }, (_, i) => {
    const t = BigInt(tag * 1_000_000 + from + i);
    return { tokensHash: t, blockHash: (t << 8n) | BigInt(worker & 0xff) };
  });
  const parent =
    from === 0 ? null : (BigInt(tag * 1_000_000 + from - 1) << 8n) | BigInt(worker & 0xff);
  return storedEvent(BigInt(worker), 0n, blocks, parent, 0);
}

function query(tag: number, len: number): BigUint64Array {
  return BigUint64Array.from({ length: len }, (_, i) => BigInt(tag * 1_000_000 + i));
}

/** Events as sorted JSON lines (bigints as strings, dump-numbered ids left out), to compare dumps whatever their order. */
function canonical(events: readonly RouterEvent[]): string[] {
  return events
    .map((e) =>
      JSON.stringify({ ...e, event: { ...e.event, eventId: 0n } }, (_k, v) =>
        typeof v === "bigint" ? v.toString() : v,
      ),
    )
    .sort();
}

function nodeBytes(tree: RadixTree): number {
  return (tree as unknown as { nodes: { bytes(): number } }).nodes.bytes();
}

describe("index memory", () => {
  test("2,000 registered workers: a node held by one worker still costs one 32-byte record", () => {
    const wide = new RadixTree();
    const narrow = new RadixTree();
    for (let w = 0; w < 2_000; w++) wide.applyEvent(chain(w, 0, 1)); // every worker holds the root block
    for (const tree of [wide, narrow])
      for (let c = 1; c <= 100; c++) tree.applyEvent(chain(7, c, 1_000));
    expect(wide.nodeCount()).toBe(100_001);
    // Before: a 2,000-slot bitset in every record, 280 bytes a node (28 MB here).
    expect(nodeBytes(wide)).toBeLessThan(nodeBytes(narrow) + 64 * 1024);
    const m = wide.findMatches(query(0, 1));
    expect(m.scores.size).toBe(2_000);
    expect(scoresOf(wide.findMatches(query(5, 10)))).toEqual({ "7:0": 10 });
  });

  test("most nodes gone: the store compacts to the live ones; matches, sizes and the dump unchanged; it keeps working", () => {
    const tree = new RadixTree();
    for (let c = 0; c < 200; c++) tree.applyEvent(chain(1, c, 500)); // 100k nodes
    for (let c = 1_000; c < 1_010; c++) {
      tree.applyEvent(chain(2, c, 100));
      tree.applyEvent(chain(3, c, 60)); // shared prefixes: nodes held by two workers
    }
    const peak = nodeBytes(tree);
    const before = Array.from({ length: 10 }, (_, i) =>
      scoresOf(tree.findMatches(query(1_000 + i, 120))),
    );
    const dumpBefore = canonical(tree.dump().filter((e) => e.workerId !== 1n));
    tree.removeWorker(1n);
    expect(tree.nodeCount()).toBe(10 * 100);
    expect(nodeBytes(tree)).toBeLessThan(peak / 20); // before: the 100k-node peak, kept
    expect(
      Array.from({ length: 10 }, (_, i) => scoresOf(tree.findMatches(query(1_000 + i, 120)))),
    ).toEqual(before);
    expect(before[0]).toEqual({ "2:0": 100, "3:0": 60 });
    expect(canonical(tree.dump())).toEqual(dumpBefore);
    // Still a working tree: extend a chain, remove a worker, everything adds up.
    expect(tree.applyEvent(chain(2, 1_000, 20, 100))).toBe("ok");
    expect(scoresOf(tree.findMatches(query(1_000, 150)))).toEqual({ "2:0": 120, "3:0": 60 });
    tree.removeWorker(3n);
    expect(scoresOf(tree.findMatches(query(1_005, 150)))).toEqual({ "2:0": 100 });
    tree.removeWorker(2n);
    expect(tree.nodeCount()).toBe(0);
  });

  test("workers leaving narrow the holder rows again", () => {
    const tree = new RadixTree();
    for (let w = 0; w < 200; w++) tree.applyEvent(chain(w, 0, 5)); // 200 holders per node: 8-word rows
    const rows = (tree as unknown as { nodes: { rows: { words: number } } }).nodes.rows;
    expect(rows.words).toBe(8);
    for (let w = 199; w >= 10; w--) tree.removeWorker(BigInt(w));
    expect(rows.words).toBe(1);
    expect(Object.keys(scoresOf(tree.findMatches(query(0, 5)))).length).toBe(10);
  });
});
