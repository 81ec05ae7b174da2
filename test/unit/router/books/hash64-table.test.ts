import { describe, expect, test } from "bun:test";
import { Hash64Table, u32Halves } from "../../../../src/router/books/hash64-table.ts";
import { seededRng } from "../choose/helpers.ts";

describe("Hash64Table", () => {
  test("stores, overwrites and deletes 64-bit keys given as halves", () => {
    const t = new Hash64Table();
    t.set(1, 0, 10);
    t.set(0, 1, 20); // same bits in the other half: a different key
    expect(t.get(1, 0)).toBe(10);
    expect(t.get(0, 1)).toBe(20);
    t.set(1, 0, 11);
    expect(t.get(1, 0)).toBe(11);
    expect(t.size).toBe(2);
    expect(t.delete(1, 0)).toBe(true);
    expect(t.delete(1, 0)).toBe(false);
    expect(t.get(1, 0)).toBe(-1);
    expect(t.get(0, 1)).toBe(20);
    expect(t.size).toBe(1);
  });

  test("agrees with a Map under random inserts and deletes across growth (seed 42)", () => {
    const rng = seededRng(42);
    const t = new Hash64Table(4);
    const ref = new Map<string, number>();
    // A small key space forces long probe runs, collisions and backward shifts.
    for (let op = 0; op < 50_000; op++) {
      const lo = Math.floor(rng() * 3000);
      const hi = Math.floor(rng() * 3);
      const k = `${lo}:${hi}`;
      if (rng() < 0.6) {
        t.set(lo, hi, op);
        ref.set(k, op);
      } else {
        expect(t.delete(lo, hi)).toBe(ref.delete(k));
      }
    }
    expect(t.size).toBe(ref.size);
    for (let lo = 0; lo < 3000; lo++)
      for (let hi = 0; hi < 3; hi++) expect(t.get(lo, hi)).toBe(ref.get(`${lo}:${hi}`) ?? -1);
  });

  test("u32Halves reads a BigUint64Array as low then high halves", () => {
    const h = u32Halves(BigUint64Array.of(0x0000000500000007n, 0xffffffff00000001n));
    expect([...h]).toEqual([7, 5, 1, 0xffffffff]);
  });

  test("u32Halves respects a subarray's offset", () => {
    const all = BigUint64Array.of(1n, 2n, 3n);
    expect([...u32Halves(all.subarray(1))]).toEqual([2, 0, 3, 0]);
  });
});
