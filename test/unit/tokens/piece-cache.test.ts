/**
 * The byte-level BPE's piece cache (src/tokens/piece-cache.ts): a piece is found by where it lies
 * in any text, only with the ids stored for exactly those characters; every bound (entries, key
 * characters, ids) clears it rather than growing; crowded slots give misses, never a wrong hit.
 */
import { describe, expect, test } from "bun:test";
import { PieceCache } from "../../../src/tokens/piece-cache.ts";
import { mulberry32 } from "../../support/prng.ts";

function idsOf(c: PieceCache, e: number): number[] {
  return [...c.ids.subarray(c.idsFrom(e), c.idsTo(e))];
}

function lookup(c: PieceCache, text: string, start = 0, end = text.length): number[] | undefined {
  const e = c.find(text, start, end, PieceCache.hash(text, start, end));
  return e < 0 ? undefined : idsOf(c, e);
}

function store(c: PieceCache, text: string, ids: number[], start = 0, end = text.length): void {
  c.add(text, start, end, PieceCache.hash(text, start, end), ids, ids.length);
}

describe("PieceCache", () => {
  test("finds a piece by its characters wherever it lies, with the ids stored for it", () => {
    const c = new PieceCache();
    store(c, "say hello there", [7, 8], 3, 9); // " hello"
    expect(lookup(c, " hello")).toEqual([7, 8]);
    expect(lookup(c, "xx hello yy", 2, 8)).toEqual([7, 8]);
    expect(lookup(c, " hellO")).toBeUndefined();
    expect(lookup(c, " hell")).toBeUndefined();
    expect(lookup(c, " hello!")).toBeUndefined();
    expect(c.size).toBe(1);
  });

  test("astral and lone-surrogate pieces are keys like any other (UTF-16 units)", () => {
    const c = new PieceCache();
    store(c, "😀", [1, 2, 3, 4]);
    store(c, "\ud800", [9]);
    expect(lookup(c, "a😀b", 1, 3)).toEqual([1, 2, 3, 4]);
    expect(lookup(c, "\ud800")).toEqual([9]);
    expect(lookup(c, "\udc00")).toBeUndefined();
  });

  test("clears itself at each bound: entries, key characters, ids", () => {
    const byEntries = new PieceCache(4, 1000, 1000);
    for (const w of ["a1", "a2", "a3", "a4"]) store(byEntries, w, [1]);
    expect(byEntries.size).toBe(4);
    store(byEntries, "a5", [5]);
    expect(byEntries.size).toBe(1);
    expect(lookup(byEntries, "a1")).toBeUndefined();
    expect(lookup(byEntries, "a5")).toEqual([5]);

    const byChars = new PieceCache(100, 10, 1000);
    store(byChars, "abcdef", [1]);
    store(byChars, "ghijkl", [2]); // 12 > 10 characters
    expect(byChars.size).toBe(1);
    expect(lookup(byChars, "abcdef")).toBeUndefined();
    expect(lookup(byChars, "ghijkl")).toEqual([2]);

    const byIds = new PieceCache(100, 1000, 5);
    store(byIds, "x", [1, 2, 3]);
    store(byIds, "y", [4, 5, 6]);
    expect(byIds.size).toBe(1);
    expect(lookup(byIds, "y")).toEqual([4, 5, 6]);
    store(byIds, "z", [1, 2, 3, 4, 5, 6]); // larger than the whole cache: not stored
    expect(lookup(byIds, "z")).toBeUndefined();
  });

  test("seeded random pieces: every hit is the last ids stored for those characters, in a crowded table too", () => {
    for (const seed of [1, 2, 3]) {
      const rng = mulberry32(seed);
      const c = new PieceCache(64, 4096, 4096); // small: collisions, probe limits and clears all happen
      const truth = new Map<string, number[]>();
      let hits = 0;
      for (let i = 0; i < 20_000; i++) {
        const len = 1 + Math.floor(rng() * 6);
        let w = "";
        for (let k = 0; k < len; k++) w += String.fromCharCode(0x61 + Math.floor(rng() * 4));
        const got = lookup(c, w);
        if (got !== undefined) {
          hits++;
          if (JSON.stringify(got) !== JSON.stringify(truth.get(w)))
            throw new Error(`seed ${seed}: ${w} -> ${got} (stored ${truth.get(w)})`);
        } else {
          const ids = [Math.floor(rng() * 1000), i];
          truth.set(w, ids);
          store(c, w, ids);
        }
      }
      expect(hits).toBeGreaterThan(1000);
    }
  });
});
