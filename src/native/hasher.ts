/**
 * The native batch block hasher: one FFI call hashes every full block of a prompt
 * (XXH3-64 per block of u32-LE tokens, spec §2.2). It agrees bit for bit with
 * core/hashing.ts's portable hasher and is ~50-100x faster on long prompts. Multimodal
 * blocks are not its business: computeBlockHashesWith() hashes those on the portable path.
 *
 * @example
 * const r = loadNativeLibrary();
 * const hasher = r.ok ? createNativeBlockHasher(r.library) : portableBatchHasher;
 * const hashes = computeBlockHashesWith(hasher, tokens, 16, { loraName });
 */
import type { BatchBlockHasher } from "../core/hashing.ts";
import { loadNativeLibrary, type NativeLibrary } from "./library.ts";

const U32_MAX = 0xffff_ffff;

export function createNativeBlockHasher(lib: NativeLibrary): BatchBlockHasher {
  const hashBlocks = lib.unsafeSymbols.sy_hash_blocks;
  return (tokens, blockSize, seed) => {
    if (!Number.isInteger(blockSize) || blockSize < 0 || blockSize > U32_MAX) {
      throw new RangeError(`block size must be an integer in 0..${U32_MAX}, got ${blockSize}`);
    }
    const n = blockSize > 0 ? Math.floor(tokens.length / blockSize) : 0;
    const out = new BigUint64Array(n);
    if (n === 0) return out;
    const got = hashBlocks(tokens, tokens.length, blockSize, BigInt.asUintN(64, seed), out, n);
    if (got !== n) throw new Error(`sy_hash_blocks failed: ${lib.lastError()}`);
    return out;
  };
}

/** The native hasher when the library is built and loads, else undefined (use the portable one). */
export function loadNativeBlockHasher(): BatchBlockHasher | undefined {
  const r = loadNativeLibrary();
  return r.ok ? createNativeBlockHasher(r.library) : undefined;
}
