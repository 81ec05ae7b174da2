/**
 * Dynamo's block and sequence hashes, the identities the index, the load books and
 * the engines agree on: the seed of a request (1337, plus its LoRA name's hash, plus a cache
 * namespace's), LocalBlockHash per full block of `blockSize` tokens (token i is bytes
 * 4i..4i+3, little-endian; blocks with multimodal objects add their sorted mm hashes), the
 * SequenceHash chain over a prompt's block hashes, and the small helpers around them (mm
 * identifiers, SGLang's pad values). Also the seam a faster implementation comes in by: a
 * `BatchBlockHasher` (the native library over bun:ffi is one) with its own `SeqHasher`.
 *
 * It is not the hash function: XXH3 itself, and its fast loops, are xxh3.ts. No I/O and
 * nothing runtime-specific.
 */
import { xxh3_64, xxh3_64Chain, xxh3_64Chunks, xxh3_64Words } from "./xxh3.ts";

/** Salt of every block hash and the seed of the sequence-hash chain (XXH3-64 with seed 1337, as Dynamo hashes). */
export const XXH3_SEED = 1337n;

const M64 = (1n << 64n) - 1n;

// ---------------------------------------------------------------------------------------
// Seeds (Dynamo's compute_block_hash_for_seq)

const utf8 = new TextEncoder();

/** 1337 + XXH3(lora_name, 0) mod 2^64; absent or "" gives the base seed 1337. */
export function loraSeed(loraName?: string): bigint {
  if (loraName === undefined || loraName === "") return XXH3_SEED;
  return (XXH3_SEED + xxh3_64(utf8.encode(loraName), 0n)) & M64;
}

/** Seed for a request: base, then + XXH3(lora, 0), then + XXH3(namespace, 1) [newer]. */
export function blockHashSeed(loraName?: string, cacheNamespace?: string): bigint {
  let seed = loraSeed(loraName);
  if (cacheNamespace !== undefined && cacheNamespace !== "") {
    seed = (seed + xxh3_64(utf8.encode(cacheNamespace), 1n)) & M64;
  }
  return seed;
}

// ---------------------------------------------------------------------------------------
// Block hashes (Dynamo's compute_block_hash_for_seq)

/** One multimodal object inside a block; only mmHash affects hashing. */
export interface BlockMmObjectInfo {
  mmHash: bigint;
  offsets: readonly (readonly [number, number])[];
}
/** Multimodal metadata of one block (Dynamo's KvCacheEvent). */
export interface BlockExtraInfo {
  mmObjects: readonly BlockMmObjectInfo[];
}
export interface BlockHashOptions {
  /** LoRA adapter; absent or "" hashes like the base model. */
  loraName?: string;
  /** [newer] cache namespace salt; absent or "" means none. */
  cacheNamespace?: string;
  /** Per-block multimodal info, indexed by block; missing entries mean "no MM objects". */
  mmInfos?: readonly (BlockExtraInfo | null | undefined)[];
}

/** Hashes floor(len / blockSize) blocks of `tokens` (u32 LE bytes) with `seed`, no MM. */
export type BatchBlockHasher = ((
  tokens: Uint32Array,
  blockSize: number,
  seed: bigint,
) => BigUint64Array) & {
  /**
   * The same implementation's sequence hasher, when it has one (the native library: one
   * FFI call per prompt). Callers use `seqHasherOf(hasher)`.
   */
  readonly seqHasher?: SeqHasher;
};

/** Sequence hashes of block hashes (Dynamo's compute_seq_hash_for_block); every implementation agrees bit for bit with computeSeqHashes. */
export type SeqHasher = (blockHashes: BigUint64Array) => BigUint64Array;

/** The sequence hasher that goes with a block hasher: its own when it brings one, else the portable one. */
export function seqHasherOf(hasher: BatchBlockHasher): SeqHasher {
  return hasher.seqHasher ?? computeSeqHashes;
}

/** Sequence hashes through an injected implementation (native or portable). */
export function computeSeqHashesWith(
  seqHasher: SeqHasher,
  blockHashes: BigUint64Array,
): BigUint64Array {
  return seqHasher(blockHashes);
}

/**
 * A u64 array over its own ArrayBuffer. A small typed array made with `new X(n)` has no
 * ArrayBuffer until `.buffer` is first read, and that first read copies it into one; the
 * hot paths read `.buffer` of every hash array (u32 views), so they start with one.
 */
export function newU64Array(n: number): BigUint64Array {
  return new BigUint64Array(new ArrayBuffer(8 * n));
}

/**
 * Hands out small u64 arrays carved from shared ArrayBuffers ("slabs"): a view costs a
 * fraction of a fresh ArrayBuffer, which is allocated outside the JS heap and, made per
 * request, also makes the collector run more often. An array keeps its whole slab alive,
 * so slab arrays suit results that are used and dropped (a request's hashes); arrays above
 * `maxPieceBytes` get their own buffer. Contents are unspecified (the caller fills them).
 */
export class U64Slab {
  #slab: ArrayBuffer;
  #off = 0;

  constructor(
    readonly slabBytes = 16 * 1024,
    readonly maxPieceBytes = 2 * 1024,
  ) {
    this.#slab = new ArrayBuffer(slabBytes);
  }

  alloc(n: number): BigUint64Array {
    const bytes = 8 * n;
    if (bytes > this.maxPieceBytes) return newU64Array(n);
    if (this.#off + bytes > this.slabBytes) {
      this.#slab = new ArrayBuffer(this.slabBytes);
      this.#off = 0;
    }
    const out = new BigUint64Array(this.#slab, this.#off, n);
    this.#off += bytes;
    return out;
  }
}

/** Portable (pure TypeScript) batch hasher: each block's token words hashed in place. */
export const portableBatchHasher: BatchBlockHasher = (tokens, blockSize, seed) => {
  const n = blockSize > 0 ? Math.floor(tokens.length / blockSize) : 0;
  const out = newU64Array(n);
  if (n === 0) return out;
  // Token values are the u32 LE words of the block bytes: view them as int32.
  const words = new Int32Array(tokens.buffer, tokens.byteOffset, n * blockSize);
  xxh3_64Chunks(words, 4 * blockSize, seed, out);
  return out;
};

/** LocalBlockHash per full block (Dynamo's compute_block_hash_for_seq), using the portable hasher. */
export function computeBlockHashes(
  tokens: ArrayLike<number>,
  blockSize: number,
  opts?: BlockHashOptions,
): BigUint64Array {
  return computeBlockHashesWith(portableBatchHasher, tokens, blockSize, opts);
}

/**
 * LocalBlockHash per full block, using `hasher` when no block has MM objects (the usual
 * case) and the portable path otherwise. This is how a native hasher is injected.
 */
export function computeBlockHashesWith(
  hasher: BatchBlockHasher,
  tokens: ArrayLike<number>,
  blockSize: number,
  opts?: BlockHashOptions,
): BigUint64Array {
  if (!(blockSize > 0)) return new BigUint64Array(0);
  const seed = blockHashSeed(opts?.loraName, opts?.cacheNamespace);
  const t32 = tokens instanceof Uint32Array ? tokens : Uint32Array.from(tokens);
  const n = Math.floor(t32.length / blockSize);
  const mm = opts?.mmInfos;
  if (mm === undefined || !hasMmObjects(mm, n)) return hasher(t32, blockSize, seed);
  return hashBlocksWithMm(t32, blockSize, n, seed, mm);
}

function hasMmObjects(mm: readonly (BlockExtraInfo | null | undefined)[], n: number): boolean {
  const end = Math.min(n, mm.length);
  for (let i = 0; i < end; i++) if ((mm[i]?.mmObjects.length ?? 0) > 0) return true;
  return false;
}

/** Blocks with MM objects hash their token bytes followed by the sorted mm hashes (u64 LE). */
function hashBlocksWithMm(
  tokens: Uint32Array,
  blockSize: number,
  n: number,
  seed: bigint,
  mm: readonly (BlockExtraInfo | null | undefined)[],
): BigUint64Array {
  const out = portableBatchHasher(tokens.subarray(0, n * blockSize), blockSize, seed);
  const end = Math.min(n, mm.length);
  for (let i = 0; i < end; i++) {
    const objs = mm[i]?.mmObjects;
    if (objs === undefined || objs.length === 0) continue;
    const hashes = BigUint64Array.from(objs, (o) => BigInt.asUintN(64, o.mmHash)).sort();
    const words = new Int32Array(blockSize + 2 * hashes.length);
    words.set(tokens.subarray(i * blockSize, (i + 1) * blockSize));
    for (let h = 0; h < hashes.length; h++) {
      words[blockSize + 2 * h] = Number(hashes[h]! & 0xffffffffn);
      words[blockSize + 2 * h + 1] = Number(hashes[h]! >> 32n);
    }
    out[i] = xxh3_64Words(words, 4 * words.length, seed);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Sequence hashes (Dynamo's compute_seq_hash_for_block)

/** seq[0] = block[0]; seq[i] = XXH3(u64le(seq[i-1]) ‖ u64le(block[i]), 1337). */
export function computeSeqHashes(blockHashes: BigUint64Array): BigUint64Array {
  const out = newU64Array(blockHashes.length);
  xxh3_64Chain(blockHashes, XXH3_SEED, out);
  return out;
}

// ---------------------------------------------------------------------------------------
// Helpers (Dynamo's compute_block_hash_for_seq)

const HEX64 = /^[0-9a-fA-F]{64}$/;

/** hash_mm_identifier: "" -> undefined; 64-hex digest -> its first 16 hex chars; else XXH3(id, 0). */
export function hashMmIdentifier(id: string): bigint | undefined {
  if (id === "") return undefined;
  if (HEX64.test(id)) return BigInt("0x" + id.slice(0, 16));
  return xxh3_64(utf8.encode(id), 0n);
}

/** SGLang's pad value for an MM hash: u32(1_000_000 + (h & (2^30 - 1))). */
export function padValueForMmHash(h: bigint): number {
  return 1_000_000 + Number(h & 0x3fffffffn);
}
