/**
 * What a simulated KV block holds: bytes that are a deterministic function of the block's
 * engine hash (which chains every token of the prefix up to and including the block), so a
 * decode engine can regenerate what it should have received and detect any corruption, a
 * block from another prompt, or a block moved to the wrong slot. Pure arithmetic, no I/O.
 */

/** Fills `out` (length a multiple of 4) from `hash`: a xorshift32 stream seeded by both halves. */
export function fillBlock(hash: bigint, out: Uint8Array): void {
  const words = new Uint32Array(out.buffer, out.byteOffset, out.byteLength >>> 2);
  const lo = Number(hash & 0xffff_ffffn);
  const hi = Number((hash >> 32n) & 0xffff_ffffn);
  let x = (lo ^ 0x9e37_79b9) >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = (x ^ (hi + i)) >>> 0;
  }
}

/** Whether `data` is exactly the content of the block with engine hash `hash`. `scratch` has data's length. */
export function blockMatches(hash: bigint, data: Uint8Array, scratch: Uint8Array): boolean {
  fillBlock(hash, scratch);
  if (data.length !== scratch.length) return false;
  const a = new Uint32Array(data.buffer, data.byteOffset, data.byteLength >>> 2);
  const b = new Uint32Array(scratch.buffer, scratch.byteOffset, scratch.byteLength >>> 2);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
