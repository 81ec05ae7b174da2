/**
 * The two open-addressing tables against a JS Map, under random insert / overwrite / delete
 * churn with colliding keys (backward-shift deletion and shrinking are where bugs hide).
 */
import { describe, expect, test } from "bun:test";
import { ChildTable } from "../../../../src/router/kv-index/child-table.ts";
import { U64Map } from "../../../../src/router/kv-index/u64-map.ts";
import { lcgNumericalRecipes as lcg } from "../../../support/prng.ts";
import { churnAgainstMap } from "./u64-churn.ts";

describe("U64Map", () => {
  test.each([1, 2, 3])("matches a Map under random churn (seed %d)", (seed) => {
    expect(churnAgainstMap(new U64Map(), seed).capacity).toBe(8); // shrank back
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
