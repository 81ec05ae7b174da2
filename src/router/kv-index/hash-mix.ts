/**
 * 32-bit mixing of split u64 keys for the open-addressing tables of the index.
 *
 * Keys are engine / router hashes (XXH3 outputs, already uniform) but tests and some engines
 * use small sequential numbers, so the mix must spread those too. Murmur3's finalizer does.
 */

/** Hash of a u64 given as (lo, hi) u32 halves, salted with a small int (parent node / 0). */
export function mix3(a: number, lo: number, hi: number): number {
  let h = lo ^ Math.imul(hi, 0x9e3779b1) ^ Math.imul(a, 0x7feb352d);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}

/** Smallest power of two >= n (n >= 1). */
export function pow2AtLeast(n: number): number {
  let c = 8;
  while (c < n) c *= 2;
  return c;
}
