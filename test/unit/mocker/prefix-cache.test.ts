import { describe, expect, test } from "bun:test";
import { PrefixCache } from "../../../src/mocker/prefix-cache.ts";
import { mulberry32 } from "../../support/prng.ts";

const seq = (...xs: number[]) => BigUint64Array.from(xs.map(BigInt));
/** tokens_hash stand-ins: 1000 + engine hash. */
const toks = (h: BigUint64Array) => h.map((x) => x + 1000n);

/** Store `hashes` fully as one request would (prefix pinned, rest stored) and return its slots. */
function use(cache: PrefixCache, hashes: BigUint64Array, evicted: bigint[] = []) {
  const slots = new Int32Array(hashes.length);
  const n = cache.matchPrefix(hashes);
  cache.pinPrefix(hashes, n, slots);
  const stored: number[] = [];
  const end = cache.storeAndPin(hashes, toks(hashes), n, slots, stored, evicted);
  return { slots, end, stored, cached: n };
}

describe("PrefixCache", () => {
  test("a stored sequence is found again as a prefix, and partially for a divergent one", () => {
    const c = new PrefixCache(8);
    const a = use(c, seq(1, 2, 3));
    c.release(a.slots, a.end);
    expect(c.matchPrefix(seq(1, 2, 3, 4))).toBe(3);
    expect(c.matchPrefix(seq(1, 9))).toBe(1);
    expect(c.matchPrefix(seq(9, 2))).toBe(0);
    expect(c.size).toBe(3);
  });

  test("blocks of a running request are pinned and never evicted", () => {
    const c = new PrefixCache(3);
    const a = use(c, seq(1, 2, 3));
    expect(c.pinnedCount).toBe(3);
    const evicted: bigint[] = [];
    const b = use(c, seq(7, 8), evicted);
    expect(b.end).toBe(0); // no slot: nothing stored
    expect(evicted).toEqual([]);
    expect(c.has(1n) && c.has(2n) && c.has(3n)).toBe(true);
    c.release(a.slots, a.end);
    expect(c.pinnedCount).toBe(0);
    const b2 = use(c, seq(7, 8), evicted);
    expect(b2.end).toBe(2);
    // The tail of the released sequence goes first: 3, then 2; the shared root 1 survives.
    expect(evicted).toEqual([3n, 2n]);
  });

  test("eviction is least-recently-used among unpinned blocks", () => {
    const c = new PrefixCache(4);
    const a = use(c, seq(1, 2));
    c.release(a.slots, a.end);
    const b = use(c, seq(3, 4));
    c.release(b.slots, b.end);
    // Touch sequence a again: b's blocks are now the oldest.
    const a2 = use(c, seq(1, 2));
    expect(a2.cached).toBe(2);
    c.release(a2.slots, a2.end);
    expect(c.lruOrder()).toEqual([4n, 3n, 2n, 1n]);
    const evicted: bigint[] = [];
    const d = use(c, seq(5), evicted);
    expect(evicted).toEqual([4n]);
    c.release(d.slots, d.end);
  });

  test("a parent is never evicted before its cached children (the set stays prefix-closed)", () => {
    const c = new PrefixCache(5);
    const rng = mulberry32(7);
    for (let round = 0; round < 300; round++) {
      // Random sequences over a small alphabet so prefixes are shared.
      const len = 1 + Math.floor(rng() * 4);
      const hashes: bigint[] = [];
      let h = 0n;
      for (let i = 0; i < len; i++) {
        h = h * 31n + BigInt(1 + Math.floor(rng() * 3));
        hashes.push(h);
      }
      const u = use(c, BigUint64Array.from(hashes));
      c.release(u.slots, u.end);
      for (const b of c.blocks()) if (b.parentHash !== null) expect(c.has(b.parentHash)).toBe(true);
    }
  });

  test("stops storing at the first block without a slot, so no block lacks its parent", () => {
    const c = new PrefixCache(2);
    const u = use(c, seq(1, 2, 3, 4));
    expect(u.end).toBe(2);
    expect(u.stored).toEqual([0, 1]);
    expect(c.size).toBe(2);
    c.release(u.slots, u.end);
  });

  test("blocks() lists parents before children with their tokens hash", () => {
    const c = new PrefixCache(8);
    const u = use(c, seq(10, 20, 30));
    const v = use(c, seq(10, 21));
    expect(c.blocks().map((b) => [b.blockHash, b.parentHash, b.tokensHash, b.depth])).toEqual([
      [10n, null, 1010n, 0],
      [20n, 10n, 1020n, 1],
      [21n, 10n, 1021n, 1],
      [30n, 20n, 1030n, 2],
    ]);
    c.release(u.slots, u.end);
    c.release(v.slots, v.end);
  });

  test("clear drops pinned blocks too and bumps the generation", () => {
    const c = new PrefixCache(4);
    use(c, seq(1, 2));
    const g = c.generation;
    c.clear();
    expect(c.size).toBe(0);
    expect(c.pinnedCount).toBe(0);
    expect(c.generation).toBe(g + 1);
    const u = use(c, seq(1, 2, 3, 4));
    expect(u.end).toBe(4);
  });

  test("releasing more often than pinning is an error", () => {
    const c = new PrefixCache(2);
    const u = use(c, seq(1));
    c.release(u.slots, 1);
    expect(() => c.release(u.slots, 1)).toThrow();
  });
});
