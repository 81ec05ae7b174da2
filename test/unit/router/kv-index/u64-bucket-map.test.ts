/**
 * The bucketed map of the workers' block lookups against a JS Map: random churn with colliding
 * keys, the overflow path (a full home bucket, deletes inside and behind an overflow run, a
 * freed place reused), growth to 100k entries and shrinking back, and the bulk readers.
 */
import { describe, expect, test } from "bun:test";
import { U64BucketMap } from "../../../../src/router/kv-index/u64-bucket-map.ts";
import { lcgNumericalRecipes as lcg } from "../../../support/prng.ts";
import { churnAgainstMap } from "./u64-churn.ts";

/** Every bucket's meta word: count | overflow << 8 (the map's layout: 16 int32s a bucket). */
function metas(m: U64BucketMap): number[] {
  const out: number[] = [];
  for (let p = 0; p < m.raw.length; p += 16) out.push(m.raw[p]!);
  return out;
}

describe("U64BucketMap", () => {
  test.each([1, 2, 3])("matches a Map under random churn (seed %d)", (seed) => {
    const m = churnAgainstMap(new U64BucketMap(), seed, (t, ref) => {
      expect([...t.values()].sort((a, b) => a - b)).toEqual(
        [...ref.values()].sort((a, b) => a - b),
      );
    });
    expect(m.capacity).toBe(10); // shrank back to two buckets
    expect(metas(m)).toEqual([0, 0]); // no count and no overflow left behind
  });

  test("a full home bucket: keys overflow to the next ones, deletes anywhere in the run keep the rest found, freed room is reused", () => {
    const m = new U64BucketMap(1000);
    const capacity = m.capacity;
    const buckets = capacity / 5;
    const home = m.home(1, 1);
    const near = (h: number) =>
      [home, (home + 16) % (buckets * 16), (home + 32) % (buckets * 16)].includes(h);
    // Keys elsewhere, a sixth of the room: the deletes below never shrink the table (at an
    // eighth), nor do the inserts grow it.
    const FILLERS = Math.ceil(capacity / 6);
    let fillers = 0;
    for (let lo = 1; fillers < FILLERS; lo++)
      if (!near(m.home(lo, 8))) m.set(lo, 8, 1000 + fillers++);
    // 13 keys with the same home bucket: 5 fill it, 5 the next, 3 the one after.
    const keys: [number, number][] = [];
    for (let lo = 1; keys.length < 13; lo++) if (m.home(lo, 7) === home) keys.push([lo, 7]);
    keys.forEach(([lo, hi], i) => expect(m.set(lo, hi, i)).toBe(-1));
    const b = home / 16;
    const meta = metas(m);
    expect(meta[b]! & 0xff).toBe(5);
    expect(meta[b]! >>> 8).toBe(8); // 8 keys passed it
    expect(meta[(b + 1) % buckets]!).toBe(5 | (3 << 8));
    expect(meta[(b + 2) % buckets]!).toBe(3);
    keys.forEach(([lo, hi], i) => expect(m.get(lo, hi)).toBe(i));

    // Delete one key of the home bucket, one of the middle and the last overflowed one.
    for (const i of [0, 7, 12]) expect(m.delete(keys[i]![0], keys[i]![1])).toBe(i);
    keys.forEach(([lo, hi], i) => expect(m.get(lo, hi)).toBe([0, 7, 12].includes(i) ? -1 : i));
    expect(metas(m)[b]! >>> 8).toBe(6);

    // A new key of the same home takes the room freed in the home bucket.
    let extra = keys.at(-1)![0] + 1;
    while (m.home(extra, 7) !== home) extra++;
    expect(m.set(extra, 7, 99)).toBe(-1);
    expect(metas(m)[b]! & 0xff).toBe(5);
    expect(m.set(extra, 7, 100)).toBe(99); // overwrite, not a second entry
    expect(m.size).toBe(FILLERS + 11);
    expect(m.capacity).toBe(capacity);

    for (const [i, [lo, hi]] of keys.entries())
      if (![0, 7, 12].includes(i)) expect(m.delete(lo, hi)).toBe(i);
    expect(m.delete(extra, 7)).toBe(100);
    expect(m.size).toBe(FILLERS);
    // Nothing of the run is left: its buckets are empty and count no overflow.
    expect([metas(m)[b], metas(m)[(b + 1) % buckets], metas(m)[(b + 2) % buckets]]).toEqual([
      0, 0, 0,
    ]);
  });

  test("grows to 100k entries and shrinks back as they leave; remapValues renumbers every value", () => {
    const rnd = lcg(11);
    const m = new U64BucketMap();
    const keys: [number, number][] = [];
    for (let i = 0; i < 100_000; i++) {
      const k: [number, number] = [(rnd() * 2 ** 32) >>> 0, (rnd() * 2 ** 32) >>> 0];
      keys.push(k);
      m.set(k[0], k[1], i);
    }
    expect(m.size).toBe(100_000);
    // Load stays at most 0.7 of the entries the buckets hold.
    expect(m.size / m.capacity).toBeLessThanOrEqual(0.7);
    expect(m.bytes()).toBe((m.capacity / 5) * 64);
    const remap = Int32Array.from({ length: 100_000 }, (_, i) => 100_000 - i);
    m.remapValues(remap);
    keys.forEach(([lo, hi], i) => expect(m.get(lo, hi)).toBe(100_000 - i));
    for (let i = 0; i < 99_990; i++) m.delete(keys[i]![0], keys[i]![1]);
    expect(m.size).toBe(10);
    expect(m.capacity).toBeLessThanOrEqual(80);
    for (let i = 99_990; i < 100_000; i++)
      expect(m.get(keys[i]![0], keys[i]![1])).toBe(100_000 - i);
  });
});
