/**
 * The churn both u64 → int tables are checked with: random insert / overwrite / delete / get
 * against a JS Map, keys drawn from few distinct halves so many share hash inputs (collisions,
 * overflow, backward shifts), then every entry read back through forEach and deleted again.
 * Returns the table emptied, for the caller's own checks of what it shrank back to.
 */
import { expect } from "bun:test";
import { lcgNumericalRecipes as lcg } from "../../../support/prng.ts";

export interface U64IntTable {
  set(lo: number, hi: number, value: number): number;
  get(lo: number, hi: number): number;
  delete(lo: number, hi: number): number;
  forEach(fn: (lo: number, hi: number, value: number) => void): void;
  readonly size: number;
}

export function churnAgainstMap<T extends U64IntTable>(
  table: T,
  seed: number,
  afterChurn?: (table: T, ref: Map<string, number>) => void,
): T {
  const rnd = lcg(seed);
  const ref = new Map<string, number>();
  const key = (): [number, number] => [
    Math.floor(rnd() * 300) * 0x10001,
    rnd() < 0.5 ? 0 : 0xffffffff,
  ];
  for (let i = 0; i < 20000; i++) {
    const [lo, hi] = key();
    const k = `${lo >>> 0}:${hi >>> 0}`;
    const r = rnd();
    if (r < 0.55) {
      expect(table.set(lo, hi, i)).toBe(ref.get(k) ?? -1);
      ref.set(k, i);
    } else if (r < 0.9) {
      expect(table.delete(lo, hi)).toBe(ref.get(k) ?? -1);
      ref.delete(k);
    } else {
      expect(table.get(lo, hi)).toBe(ref.get(k) ?? -1);
    }
    expect(table.size).toBe(ref.size);
  }
  const seen = new Map<string, number>();
  table.forEach((lo, hi, v) => seen.set(`${lo}:${hi}`, v));
  expect(seen).toEqual(ref);
  afterChurn?.(table, ref);
  for (const k of [...ref.keys()]) {
    const [lo, hi] = k.split(":").map(Number) as [number, number];
    expect(table.delete(lo, hi)).toBe(ref.get(k)!);
  }
  expect(table.size).toBe(0);
  return table;
}
