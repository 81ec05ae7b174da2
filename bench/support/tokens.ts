/** Token arrays and block hashes the benches build prompts from. */

/** `n` token ids below `vocab`, drawn from `rand32` (the caller's seeded generator, so runs repeat). */
export function randomTokens(n: number, rand32: () => number, vocab: number): Uint32Array {
  const t = new Uint32Array(n);
  for (let i = 0; i < n; i++) t[i] = rand32() % vocab;
  return t;
}

/** `a` then `b`, as one prompt. */
export function concat(a: Uint32Array, b: Uint32Array): Uint32Array {
  const t = new Uint32Array(a.length + b.length);
  t.set(a);
  t.set(b, a.length);
  return t;
}

const U64 = new BigUint64Array(1);
const U64_WORDS = new Uint32Array(U64.buffer);

/** A 64-bit hash from two draws of `rand32` (the caller's seeded generator): low word first. */
export function randomU64(rand32: () => number): bigint {
  U64_WORDS[0] = rand32();
  U64_WORDS[1] = rand32();
  return U64[0]!;
}
