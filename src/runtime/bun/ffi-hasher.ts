/**
 * The native batch block hasher: one FFI call hashes every full block of a prompt (XXH3-64 per
 * block of u32-LE tokens, seed 1337 plus the LoRA salt), and one more gives the prompt's sequence
 * hashes (XXH3-64 of the previous sequence hash and this block's, seed 1337). Both agree bit for
 * bit with core/block-hash.ts's portable code and are ~50-100x faster on long prompts. Multimodal
 * blocks are not their business: computeBlockHashesWith() hashes those on the portable path.
 *
 * Results of up to 256 hashes (4096 tokens at block size 16) are views into shared 16 KiB
 * buffers (U64Slab), which is what makes them cheap on every request; a caller that keeps
 * one for long (rather than reading it and dropping it) should keep a copy (`.slice()`).
 *
 * @example
 * const r = loadNativeLibrary();
 * const hasher = r.ok ? createNativeBlockHasher(r.library) : portableBatchHasher;
 * const hashes = computeBlockHashesWith(hasher, tokens, 16, { loraName });
 * const seq = seqHasherOf(hasher)(hashes);   // native when the library has sy_hash_seq
 */
import { dlopen } from "bun:ffi";
import { U64Slab, type BatchBlockHasher, type SeqHasher } from "../../core/block-hash.ts";
import { SY_SEQ_SYMBOLS } from "../../transfer/native/ffi.ts";
import { loadNativeLibrary, type NativeLibrary } from "../../transfer/native/library.ts";

const U32_MAX = 0xffff_ffff;

/** The block hasher; it carries the native sequence hasher when the library has one. */
export function createNativeBlockHasher(lib: NativeLibrary): BatchBlockHasher {
  const hashBlocks = lib.unsafeSymbols.sy_hash_blocks;
  const slab = new U64Slab();
  const hasher = (tokens: Uint32Array, blockSize: number, seed: bigint): BigUint64Array => {
    if (!Number.isInteger(blockSize) || blockSize < 0 || blockSize > U32_MAX) {
      throw new RangeError(`block size must be an integer in 0..${U32_MAX}, got ${blockSize}`);
    }
    const n = blockSize > 0 ? Math.floor(tokens.length / blockSize) : 0;
    const out = slab.alloc(n);
    if (n === 0) return out;
    const got = hashBlocks(tokens, tokens.length, blockSize, BigInt.asUintN(64, seed), out, n);
    if (got !== n) throw new Error(`sy_hash_blocks failed: ${lib.lastError()}`);
    return out;
  };
  const seqHasher = createNativeSeqHasher(lib);
  return seqHasher ? Object.assign(hasher, { seqHasher }) : hasher;
}

const seqHashers = new Map<string, SeqHasher | undefined>();

/**
 * The native sequence hasher, or undefined when this build of the library predates
 * sy_hash_seq (then use core/block-hash.ts's computeSeqHashes).
 */
export function createNativeSeqHasher(lib: NativeLibrary): SeqHasher | undefined {
  if (seqHashers.has(lib.path)) return seqHashers.get(lib.path);
  let seqHasher: SeqHasher | undefined;
  try {
    // A second handle on the already-loaded library; never closed, like the first.
    const hashSeq = dlopen(lib.path, SY_SEQ_SYMBOLS).symbols.sy_hash_seq;
    const slab = new U64Slab();
    seqHasher = (blocks) => {
      const n = blocks.length;
      const out = slab.alloc(n);
      if (n === 0) return out;
      const got = hashSeq(blocks, n, out, n);
      if (got !== n) throw new Error(`sy_hash_seq failed: ${lib.lastError()}`);
      return out;
    };
  } catch {
    seqHasher = undefined;
  }
  seqHashers.set(lib.path, seqHasher);
  return seqHasher;
}

/** The native hasher when the library is built and loads, else undefined (use the portable one). */
export function loadNativeBlockHasher(): BatchBlockHasher | undefined {
  const r = loadNativeLibrary();
  return r.ok ? createNativeBlockHasher(r.library) : undefined;
}

/** The native sequence hasher when the library is built, loads and has it, else undefined. */
export function loadNativeSeqHasher(): SeqHasher | undefined {
  const r = loadNativeLibrary();
  return r.ok ? createNativeSeqHasher(r.library) : undefined;
}
