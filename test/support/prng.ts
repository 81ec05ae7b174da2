/**
 * Seeded pseudo-random generators for tests and benches: the same seed gives the same
 * stream on every machine and run, so a failure reproduces from the seed in its message.
 * Not for anything that needs real randomness.
 *
 * `mulberry32` is the one to use. The two LCGs and `xorshift32` are kept because suites
 * drew their data from them: swapping generators would silently change what those suites
 * cover (the collisions, orders and sizes their seeds were chosen for), so they keep their
 * exact sequences here under their own names.
 */

import type { Rng } from "../../src/core/rng.ts";

export type { Rng };

/** mulberry32: 32-bit state, fast, passes the usual small-test batteries (the one in src/core, which the router uses too). */
export { mulberry32 } from "../../src/core/mulberry32.ts";

/** 32-bit LCG state' = a·state + c (mod 2^32), output state' / 2^32. The seed is the first state. */
function lcg32(seed: number, a: number, c: number): Rng {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, a) + c) >>> 0) / 2 ** 32;
}

/** Numerical Recipes' LCG (a = 1664525, c = 1013904223). Kept for the open-addressing churn tests. */
export function lcgNumericalRecipes(seed: number): Rng {
  return lcg32(seed, 1664525, 1013904223);
}

/** The ANSI C / glibc `rand` LCG (a = 1103515245, c = 12345). Kept for the radix-tree churn and LoRA hammer tests. */
export function lcgAnsiC(seed: number): Rng {
  return lcg32(seed, 1103515245, 12345);
}

/** Marsaglia's xorshift32 (13, 17, 5): the next uint32 word per call. Seed 0 is replaced by 1 (0 is a fixed point). */
export function xorshift32(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/** `n` token ids below `vocab` drawn from xorshift32(seed): a prompt for hashing benches. */
export function randomTokens(n: number, vocab: number, seed: number): Uint32Array {
  const next = xorshift32(seed);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = next() % vocab;
  return out;
}

/** An integer in [0, n). */
export function randInt(rng: Rng, n: number): number {
  return Math.floor(rng() * n);
}

/** One of `items`, uniformly. */
export function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[randInt(rng, items.length)]!;
}
