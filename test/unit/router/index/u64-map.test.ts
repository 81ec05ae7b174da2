/**
 * The two open-addressing tables against a JS Map, under random insert / overwrite / delete
 * churn with colliding keys (backward-shift deletion and shrinking are where bugs hide).
 */
import { describe, expect, test } from "bun:test";
import { ChildTable } from "../../../../src/router/index/child-table.ts";
import { U64Map } from "../../../../src/router/index/u64-map.ts";
import { lcgNumericalRecipes as lcg } from "../../../support/prng.ts";

describe("U64Map", () => {
  test.each([1, 2, 3])("matches a Map under random churn (seed %d)", (seed) => {
    const rnd = lcg(seed);
    const m = new U64Map();
    const ref = new Map<string, number>();
    // Few distinct high halves and low halves: many keys share hash inputs.
    const key = (): [number, number] => [Math.floor(rnd() * 300) * 0x10001, rnd() < 0.5 ? 0 : 0xffffffff];
    for (let i = 0; i < 20000; i++) {
      const [lo, hi] = key();
      const k = `${lo >>> 0}:${hi >>> 0}`;
      const r = rnd();
      if (r < 0.55) {
        expect(m.set(lo, hi, i)).toBe(ref.get(k) ?? -1);
        ref.set(k, i);
      } else if (r < 0.9) {
        expect(m.delete(lo, hi)).toBe(ref.get(k) ?? -1);
        ref.delete(k);
      } else {
        expect(m.get(lo, hi)).toBe(ref.get(k) ?? -1);
      }
      expect(m.size).toBe(ref.size);
    }
    const seen = new Map<string, number>();
    m.forEach((lo, hi, v) => seen.set(`${lo}:${hi}`, v));
    expect(seen).toEqual(ref);
    for (const k of [...ref.keys()]) {
      const [lo, hi] = k.split(":").map(Number) as [number, number];
      expect(m.delete(lo, hi)).toBe(ref.get(k)!);
    }
    expect(m.size).toBe(0);
    expect(m.capacity).toBe(8); // shrank back
  });
});

describe("ChildTable", () => {
  test("matches a Map under random churn; parent is part of the key", () => {
    const rnd = lcg(7);
    const t = new ChildTable();
    const ref = new Map<string, number>();
    for (let i = 0; i < 20000; i++) {
      const parent = Math.floor(rnd() * 4);
      const lo = Math.floor(rnd() * 200) | 0;
      const hi = -1; // same path hash for different parents must stay distinct
      const k = `${parent}:${lo}`;
      const r = rnd();
      if (r < 0.55) {
        t.set(parent, lo, hi, i);
        ref.set(k, i);
      } else if (r < 0.9) {
        expect(t.delete(parent, lo, hi)).toBe(ref.get(k) ?? -1);
        ref.delete(k);
      } else {
        expect(t.get(parent, lo, hi)).toBe(ref.get(k) ?? -1);
      }
      expect(t.size).toBe(ref.size);
    }
    for (const [k, v] of ref) {
      const [parent, lo] = k.split(":").map(Number) as [number, number];
      expect(t.get(parent, lo, -1)).toBe(v);
      expect(t.delete(parent, lo, -1)).toBe(v);
    }
    expect(t.size).toBe(0);
  });
});
