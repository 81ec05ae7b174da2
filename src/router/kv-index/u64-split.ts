/**
 * bigint <-> (lo, hi) u32 halves without BigInt arithmetic (`Number(x & 0xffffffffn)` +
 * `Number(x >> 32n)` costs ~120 ns a value).
 *
 * bigint -> halves: `splitInto(x, out, at)` writes lo to out[at], hi to out[at + 1], through a
 * DataView, ~3 ns a value; the optimizing JIT inlines DataView's BigInt accessors, while a
 * store into a BigUint64Array element (`B64[0] = x`, ~13 ns) stays a call into the runtime.
 * Event apply splits two hashes per block, so this was a fifth of a block's cost.
 * halves -> bigint: `join(lo, hi)` through B64/B32.
 *
 * lo/hi follow the platform's byte order, like the Uint32Array views over callers'
 * BigUint64Arrays (`wordsOf`), so keys agree whichever way they were split.
 * Negative bigints wrap modulo 2^64, like `BigInt.asUintN(64, x)`.
 */

export const B64 = new BigUint64Array(1);
export const B32 = new Uint32Array(B64.buffer);

/** The platform's byte order, as the typed-array views see it. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const VIEW = new DataView(new ArrayBuffer(8));

/** out[at] = low half of x, out[at + 1] = high half (as B32[0], B32[1] after `B64[0] = x`). */
export function splitInto(x: bigint, out: Uint32Array, at: number): void {
  VIEW.setBigUint64(0, x, LITTLE_ENDIAN);
  out[at] = VIEW.getUint32(0, LITTLE_ENDIAN);
  out[at + 1] = VIEW.getUint32(4, LITTLE_ENDIAN);
}

export function join(lo: number, hi: number): bigint {
  B32[0] = lo;
  B32[1] = hi;
  return B64[0]!;
}

/** A Uint32Array view (two words per hash) over a BigUint64Array, no copy. */
export function wordsOf(hashes: BigUint64Array): Uint32Array {
  return new Uint32Array(hashes.buffer, hashes.byteOffset, hashes.length * 2);
}
