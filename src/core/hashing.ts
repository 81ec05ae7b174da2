/**
 * Block and sequence hashes (spec §2): XXH3-64 with a 64-bit seed, in portable TypeScript.
 *
 * The router hashes every request (8k–128k tokens), so the hot paths avoid BigInt: a u64 is
 * a pair of uint32 numbers (hi, lo), 32x32->64 products use Math.imul for the low half and a
 * double-precision product for the high half, and BigInt appears only at the API boundary
 * (results are written as lo/hi halves into a BigUint64Array's buffer). Token blocks are
 * hashed straight from the token array: token i is bytes 4i..4i+3 little-endian, so a
 * 64-bit lane is (tok[2k] | tok[2k+1] << 32). Block sizes 16 (64 bytes, the 17–128 class)
 * and 512 (2048 bytes, the long class) have specialised paths; every other length goes
 * through the general code, which covers all XXH3 length classes.
 *
 * No I/O and nothing runtime-specific: this file runs on any JS engine. A native batch
 * hasher (bun:ffi) can be injected through `computeBlockHashesWith`.
 */

/** Salt of every block hash and the seed of the sequence-hash chain (spec §2.1). */
export const XXH3_SEED = 1337n;

// ---------------------------------------------------------------------------------------
// Constants

const TWO32 = 4294967296;
const INV32 = 1 / TWO32;
const M64 = (1n << 64n) - 1n;

/** True on little-endian hosts: typed-array views of token/result buffers are then LE. */
const LE = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
/** Index of the low u32 half of a u64 inside a Uint32Array view of a BigUint64Array. */
const LO = LE ? 0 : 1;
const HI = LE ? 1 : 0;

const K_SECRET_HEX =
  "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f" +
  "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c" +
  "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8" +
  "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364" +
  "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e" +
  "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e";
const K_SECRET = new Uint8Array(192);
for (let i = 0; i < 192; i++) K_SECRET[i] = parseInt(K_SECRET_HEX.slice(2 * i, 2 * i + 2), 16);

const P32_1 = 0x9e3779b1;
const P32_2 = 0x85ebca77;
const P32_3 = 0xc2b2ae3d;
const P64_1 = 0x9e3779b185ebca87n;
const P64_2 = 0xc2b2ae3d27d4eb4fn;
const P64_3 = 0x165667b19e3779f9n;
const P64_4 = 0x85ebca77c2b2ae63n;
const P64_5 = 0x27d4eb2f165667c5n;
const P64_1_H = 0x9e3779b1, P64_1_L = 0x85ebca87;
const P64_2_H = 0xc2b2ae3d, P64_2_L = 0x27d4eb4f;
const P64_3_H = 0x165667b1, P64_3_L = 0x9e3779f9;
const MX1_H = 0x16566791, MX1_L = 0x9e3779f9;
const MX2_H = 0x9fb21c65, MX2_L = 0x1e98df25;

/** Initial long-path accumulators as [hi, lo] pairs. */
const INIT_ACC = new Uint32Array(16);
[BigInt(P32_3), P64_1, P64_2, P64_3, P64_4, BigInt(P32_2), P64_5, BigInt(P32_1)].forEach((v, i) => {
  INIT_ACC[2 * i] = Number(v >> 32n);
  INIT_ACC[2 * i + 1] = Number(v & 0xffffffffn);
});

// ---------------------------------------------------------------------------------------
// 64-bit arithmetic on (hi, lo) uint32 pairs. Results land in rH/rL (module registers) so
// no object is allocated per operation.

let rH = 0;
let rL = 0;

/** 32x32 -> 64 unsigned product of a and b (both uint32). */
function mul32(a: number, b: number): void {
  const lo = Math.imul(a, b) >>> 0;
  // a*b as a double is within 2^11 of the exact product; (p - lo) / 2^32 is then within
  // 2^-20 of the exact high word, so rounding recovers it.
  rH = Math.round((a * b - lo) * INV32);
  rL = lo;
}

/** (aH:aL) * (bH:bL) mod 2^64. */
function mul64(aH: number, aL: number, bH: number, bL: number): void {
  mul32(aL, bL);
  rH = (rH + Math.imul(aL, bH) + Math.imul(aH, bL)) >>> 0;
}

/** XXH3_mul128_fold64: low ^ high halves of the 128-bit product. */
function mul128Fold(aH: number, aL: number, bH: number, bL: number): void {
  const llL = Math.imul(aL, bL) >>> 0;
  const llH = Math.round((aL * bL - llL) * INV32);
  const hlL = Math.imul(aH, bL) >>> 0;
  const hlH = Math.round((aH * bL - hlL) * INV32);
  const lhL = Math.imul(aL, bH) >>> 0;
  const lhH = Math.round((aL * bH - lhL) * INV32);
  const hhL = Math.imul(aH, bH) >>> 0;
  const hhH = Math.round((aH * bH - hhL) * INV32);
  const crossSum = llH + hlL + lhL; // < 3 * 2^32, exact
  const crossL = crossSum >>> 0;
  const crossH = lhH + (crossSum - crossL) * INV32;
  const upSum = hlH + crossH + hhL;
  const upL = upSum >>> 0;
  const upH = (hhH + (upSum - upL) * INV32) >>> 0;
  rH = (crossL ^ upH) >>> 0;
  rL = (llL ^ upL) >>> 0;
}

/** XXH3_avalanche on (h, l). */
function avalanche(h: number, l: number): void {
  l = (l ^ (h >>> 5)) >>> 0;
  mul64(h, l, MX1_H, MX1_L);
  rL = (rL ^ rH) >>> 0;
}

/** XXH64_avalanche on (h, l). */
function avalanche64(h: number, l: number): void {
  l = (l ^ (h >>> 1)) >>> 0;
  mul64(h, l, P64_2_H, P64_2_L);
  h = rH;
  l = (rL ^ ((h << 3) | (rL >>> 29))) >>> 0;
  h = (h ^ (h >>> 29)) >>> 0;
  mul64(h, l, P64_3_H, P64_3_L);
  rL = (rL ^ rH) >>> 0;
}

/** XXH3_rrmxmx on (h, l) with input length len. */
function rrmxmx(h: number, l: number, len: number): void {
  // rotl64(h, 49) and rotl64(h, 24)
  const r49H = (l << 17) | (h >>> 15);
  const r49L = (h << 17) | (l >>> 15);
  const r24H = (h << 24) | (l >>> 8);
  const r24L = (l << 24) | (h >>> 8);
  h = (h ^ r49H ^ r24H) >>> 0;
  l = (l ^ r49L ^ r24L) >>> 0;
  mul64(h, l, MX2_H, MX2_L);
  h = rH;
  l = (rL ^ ((h >>> 3) + len)) >>> 0;
  mul64(h, l, MX2_H, MX2_L);
  h = rH;
  rL = (rL ^ ((h << 4) | (rL >>> 28))) >>> 0;
  rH = (h ^ (h >>> 28)) >>> 0;
}

function bswap32(x: number): number {
  return (((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24)) >>> 0;
}

function rd32(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

// ---------------------------------------------------------------------------------------
// Per-seed context: everything that depends on the seed, precomputed once (BigInt is fine
// here; it runs once per distinct seed and the last few are cached).

interface SeedCtx {
  readonly seed: bigint;
  /** Result for the empty input. */
  readonly emptyH: number;
  readonly emptyL: number;
  /** Bit flips of the 1–3, 4–8 and 9–16 classes, as [hi, lo]. */
  readonly bf13: Uint32Array;
  readonly bf48: Uint32Array;
  readonly bf916: Uint32Array; // [bf1H, bf1L, bf2H, bf2L]
  /**
   * mix16B keys at every byte offset o in 0..176: [aH, aL, bH, bL] at 4*o with
   * a = secret64(o) + seed, b = secret64(o + 8) - seed.
   */
  readonly mixKeys: Uint32Array;
  /** Derived 192-byte secret of the long path as u32 words, [lo, hi] per u64 (LE order). */
  readonly longKeys: Uint32Array;
  /** Long-path keys for the last stripe (secret + 121) and the merge (secret + 11). */
  readonly lastKeys: Uint32Array;
  readonly mergeKeys: Uint32Array;
}

function secret64(s: Uint8Array, o: number): bigint {
  let v = 0n;
  for (let i = 7; i >= 0; i--) v = (v << 8n) | BigInt(s[o + i]!);
  return v;
}

function split(v: bigint, out: Uint32Array, at: number, hiFirst: boolean): void {
  const h = Number((v >> 32n) & 0xffffffffn);
  const l = Number(v & 0xffffffffn);
  out[at] = hiFirst ? h : l;
  out[at + 1] = hiFirst ? l : h;
}

function xxh64AvalancheBig(h: bigint): bigint {
  h ^= h >> 33n;
  h = (h * P64_2) & M64;
  h ^= h >> 29n;
  h = (h * P64_3) & M64;
  return h ^ (h >> 32n);
}

function buildSeedCtx(seed: bigint): SeedCtx {
  const s = BigInt.asUintN(64, seed);
  const k = K_SECRET;
  const empty = xxh64AvalancheBig(s ^ secret64(k, 56) ^ secret64(k, 64));
  const bf13 = new Uint32Array(2);
  split((BigInt((rd32(k, 0) ^ rd32(k, 4)) >>> 0) + s) & M64, bf13, 0, true);
  const lo32 = Number(s & 0xffffffffn);
  const s48 = s ^ (BigInt(bswap32(lo32)) << 32n);
  const bf48 = new Uint32Array(2);
  split((secret64(k, 8) ^ secret64(k, 16)) - s48 & M64, bf48, 0, true);
  const bf916 = new Uint32Array(4);
  split((secret64(k, 24) ^ secret64(k, 32)) + s & M64, bf916, 0, true);
  split((secret64(k, 40) ^ secret64(k, 48)) - s & M64, bf916, 2, true);
  const mixKeys = new Uint32Array(177 * 4);
  for (let o = 0; o <= 176; o++) {
    split((secret64(k, o) + s) & M64, mixKeys, 4 * o, true);
    split((secret64(k, o + 8) - s) & M64, mixKeys, 4 * o + 2, true);
  }
  // Standard custom-secret init (XXH3_initCustomSecret): +seed on even u64s, -seed on odd.
  const custom = new Uint8Array(192);
  for (let i = 0; i < 12; i++) {
    const a = (secret64(k, 16 * i) + s) & M64;
    const b = (secret64(k, 16 * i + 8) - s) & M64;
    for (let j = 0; j < 8; j++) {
      custom[16 * i + j] = Number((a >> BigInt(8 * j)) & 0xffn);
      custom[16 * i + 8 + j] = Number((b >> BigInt(8 * j)) & 0xffn);
    }
  }
  const words = (from: number, n: number): Uint32Array => {
    const w = new Uint32Array(n);
    for (let i = 0; i < n; i++) w[i] = rd32(custom, from + 4 * i);
    return w;
  };
  return {
    seed: s,
    emptyH: Number(empty >> 32n),
    emptyL: Number(empty & 0xffffffffn),
    bf13,
    bf48,
    bf916,
    mixKeys,
    longKeys: words(0, 48),
    lastKeys: words(192 - 64 - 7, 16),
    mergeKeys: words(11, 16),
  };
}

const SEED_CACHE_SIZE = 16;
const seedCache = new Map<bigint, SeedCtx>();
let lastCtx: SeedCtx = buildSeedCtx(XXH3_SEED);

function seedCtx(seed: bigint): SeedCtx {
  if (lastCtx.seed === seed) return lastCtx;
  const s = BigInt.asUintN(64, seed);
  let ctx = seedCache.get(s);
  if (ctx === undefined) {
    ctx = buildSeedCtx(s);
    if (seedCache.size >= SEED_CACHE_SIZE) seedCache.delete(seedCache.keys().next().value!);
    seedCache.set(s, ctx);
  }
  lastCtx = ctx;
  return ctx;
}
seedCache.set(XXH3_SEED, lastCtx);

// ---------------------------------------------------------------------------------------
// General short path (0..240 bytes) over a byte array.

/** acc += mix16B(b[off + i ..], keys at secret offset o). acc lives in sums (see callers). */
function mix16(b: Uint8Array, i: number, keys: Uint32Array, o: number): void {
  const k = 4 * o;
  const aL = rd32(b, i) ^ keys[k + 1]!;
  const aH = rd32(b, i + 4) ^ keys[k]!;
  const bL = rd32(b, i + 8) ^ keys[k + 3]!;
  const bH = rd32(b, i + 12) ^ keys[k + 2]!;
  mul128Fold(aH >>> 0, aL >>> 0, bH >>> 0, bL >>> 0);
}

/** Hash b[off .. off+len) with len <= 240; result in rH/rL. */
function hashShort(b: Uint8Array, off: number, len: number, ctx: SeedCtx): void {
  if (len <= 16) {
    if (len > 8) {
      const f = ctx.bf916;
      const inLoL = (rd32(b, off) ^ f[1]!) >>> 0;
      const inLoH = (rd32(b, off + 4) ^ f[0]!) >>> 0;
      const inHiL = (rd32(b, off + len - 8) ^ f[3]!) >>> 0;
      const inHiH = (rd32(b, off + len - 4) ^ f[2]!) >>> 0;
      mul128Fold(inLoH, inLoL, inHiH, inHiL);
      // len + swap64(inLo) + inHi + fold
      const sL = len + bswap32(inLoH) + inHiL + rL;
      const l = sL >>> 0;
      const h = (bswap32(inLoL) + inHiH + rH + (sL - l) * INV32) >>> 0;
      avalanche(h, l);
      return;
    }
    if (len >= 4) {
      const in1 = rd32(b, off);
      const in2 = rd32(b, off + len - 4);
      rrmxmx((in1 ^ ctx.bf48[0]!) >>> 0, (in2 ^ ctx.bf48[1]!) >>> 0, len);
      return;
    }
    if (len > 0) {
      const c1 = b[off]!, c2 = b[off + (len >> 1)]!, c3 = b[off + len - 1]!;
      const combined = ((c1 << 16) | (c2 << 24) | c3 | (len << 8)) >>> 0;
      avalanche64(ctx.bf13[0]!, (combined ^ ctx.bf13[1]!) >>> 0);
      return;
    }
    rH = ctx.emptyH;
    rL = ctx.emptyL;
    return;
  }
  const keys = ctx.mixKeys;
  mul64(0, len, P64_1_H, P64_1_L);
  let accH = rH;
  let accL = rL;
  if (len <= 128) {
    let sH = accH, sL = accL;
    if (len > 32) {
      if (len > 64) {
        if (len > 96) {
          mix16(b, off + 48, keys, 96); sH += rH; sL += rL;
          mix16(b, off + len - 64, keys, 112); sH += rH; sL += rL;
        }
        mix16(b, off + 32, keys, 64); sH += rH; sL += rL;
        mix16(b, off + len - 48, keys, 80); sH += rH; sL += rL;
      }
      mix16(b, off + 16, keys, 32); sH += rH; sL += rL;
      mix16(b, off + len - 32, keys, 48); sH += rH; sL += rL;
    }
    mix16(b, off, keys, 0); sH += rH; sL += rL;
    mix16(b, off + len - 16, keys, 16); sH += rH; sL += rL;
    const l = sL >>> 0;
    avalanche((sH + (sL - l) * INV32) >>> 0, l);
    return;
  }
  // 129..240
  let sH = accH, sL = accL;
  for (let i = 0; i < 8; i++) {
    mix16(b, off + 16 * i, keys, 16 * i);
    sH += rH;
    sL += rL;
  }
  let l = sL >>> 0;
  avalanche((sH + (sL - l) * INV32) >>> 0, l);
  accH = rH;
  accL = rL;
  mix16(b, off + len - 16, keys, 136 - 17);
  let eH = rH, eL = rL;
  const nbRounds = len >> 4;
  for (let i = 8; i < nbRounds; i++) {
    mix16(b, off + 16 * i, keys, 16 * (i - 8) + 3);
    eH += rH;
    eL += rL;
  }
  sL = accL + eL;
  l = sL >>> 0;
  avalanche((accH + eH + (sL - l) * INV32) >>> 0, l);
}

// ---------------------------------------------------------------------------------------
// Long path (> 240 bytes) over u32 words. w[base + j] holds bytes 4j..4j+3 (LE) of the
// input; the last stripe (bytes len-64..len) is read from lastW[lastBase ..] because it may
// not be word-aligned for general inputs.

const acc = new Uint32Array(16); // [hi, lo] per lane

/** One 64-byte stripe: w[p..p+16) against keys[k..k+16). */
function accumulate512(w: ArrayLike<number>, p: number, keys: Uint32Array, k: number): void {
  for (let i = 0; i < 8; i++) {
    const dvL = w[p + 2 * i]! >>> 0;
    const dvH = w[p + 2 * i + 1]! >>> 0;
    const dkL = (dvL ^ keys[k + 2 * i]!) >>> 0;
    const dkH = (dvH ^ keys[k + 2 * i + 1]!) >>> 0;
    // acc[i ^ 1] += dv
    const j = 2 * (i ^ 1);
    let s = acc[j + 1]! + dvL;
    let l = s >>> 0;
    acc[j] = acc[j]! + dvH + (s - l) * INV32;
    acc[j + 1] = l;
    // acc[i] += lo32(dk) * hi32(dk)
    const pL = Math.imul(dkL, dkH) >>> 0;
    const pH = Math.round((dkL * dkH - pL) * INV32);
    s = acc[2 * i + 1]! + pL;
    l = s >>> 0;
    acc[2 * i] = acc[2 * i]! + pH + (s - l) * INV32;
    acc[2 * i + 1] = l;
  }
}

/** XXH3_scrambleAcc with keys[k..k+16). */
function scramble(keys: Uint32Array, k: number): void {
  for (let i = 0; i < 8; i++) {
    const h = acc[2 * i]!;
    const l = (acc[2 * i + 1]! ^ (h >>> 15) ^ keys[k + 2 * i]!) >>> 0;
    const hk = (h ^ keys[k + 2 * i + 1]!) >>> 0;
    mul32(l, P32_1);
    acc[2 * i] = rH + Math.imul(hk, P32_1);
    acc[2 * i + 1] = rL;
  }
}

function hashLongWords(
  w: ArrayLike<number>,
  base: number,
  len: number,
  lastW: ArrayLike<number>,
  lastBase: number,
  ctx: SeedCtx,
): void {
  acc.set(INIT_ACC);
  const keys = ctx.longKeys;
  const nbBlocks = Math.floor((len - 1) / 1024);
  let p = base;
  for (let n = 0; n < nbBlocks; n++) {
    for (let s = 0; s < 16; s++, p += 16) accumulate512(w, p, keys, 2 * s);
    scramble(keys, 32);
  }
  const nbStripes = ((len - 1 - 1024 * nbBlocks) / 64) | 0;
  for (let s = 0; s < nbStripes; s++, p += 16) accumulate512(w, p, keys, 2 * s);
  accumulate512(lastW, lastBase, ctx.lastKeys, 0);
  mergeAccs(len, ctx.mergeKeys);
}

function mergeAccs(len: number, mk: Uint32Array): void {
  mul64(0, len, P64_1_H, P64_1_L);
  let sH = rH, sL = rL;
  for (let i = 0; i < 4; i++) {
    const aL = (acc[4 * i + 1]! ^ mk[4 * i]!) >>> 0;
    const aH = (acc[4 * i]! ^ mk[4 * i + 1]!) >>> 0;
    const bL = (acc[4 * i + 3]! ^ mk[4 * i + 2]!) >>> 0;
    const bH = (acc[4 * i + 2]! ^ mk[4 * i + 3]!) >>> 0;
    mul128Fold(aH, aL, bH, bL);
    sH += rH;
    sL += rL;
  }
  const l = sL >>> 0;
  avalanche((sH + (sL - l) * INV32) >>> 0, l);
}

// ---------------------------------------------------------------------------------------
// Public primitive

let wordScratch = new Uint32Array(1024);
const lastScratch = new Uint32Array(16);

/** XXH3_64bits_withSeed(data, seed): the full 64-bit XXH3, every length class. */
export function xxh3_64(data: Uint8Array, seed: bigint = 0n): bigint {
  const ctx = seedCtx(seed);
  hashBytes(data, ctx);
  return (BigInt(rH) << 32n) | BigInt(rL);
}

function hashBytes(data: Uint8Array, ctx: SeedCtx): void {
  const len = data.length;
  if (len <= 240) {
    hashShort(data, 0, len, ctx);
    return;
  }
  const nw = len >>> 2;
  let w: Uint32Array;
  if (LE && (data.byteOffset & 3) === 0) {
    w = new Uint32Array(data.buffer, data.byteOffset, nw);
  } else {
    if (wordScratch.length < nw) wordScratch = new Uint32Array(nw);
    w = wordScratch;
    for (let i = 0; i < nw; i++) w[i] = rd32(data, 4 * i);
  }
  for (let i = 0; i < 16; i++) lastScratch[i] = rd32(data, len - 64 + 4 * i);
  hashLongWords(w, 0, len, lastScratch, 0, ctx);
}

// ---------------------------------------------------------------------------------------
// Seeds (spec §2.2 step 2)

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
// Block hashes (spec §2.2)

/** One multimodal object inside a block; only mmHash affects hashing. */
export interface BlockMmObjectInfo {
  mmHash: bigint;
  offsets: readonly (readonly [number, number])[];
}
/** Multimodal metadata of one block (spec §1.2). */
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
export type BatchBlockHasher = (tokens: Uint32Array, blockSize: number, seed: bigint) => BigUint64Array;

/** Portable (pure TypeScript) batch hasher. */
export const portableBatchHasher: BatchBlockHasher = (tokens, blockSize, seed) => {
  const n = blockSize > 0 ? Math.floor(tokens.length / blockSize) : 0;
  const out = new BigUint64Array(n);
  if (n === 0) return out;
  const out32 = new Uint32Array(out.buffer);
  const ctx = seedCtx(seed);
  if (blockSize === 16) {
    hashBlocks16(tokens, n, ctx, out32);
    return out;
  }
  const len = 4 * blockSize;
  if (len > 240) {
    for (let j = 0; j < n; j++) {
      const base = j * blockSize;
      hashLongWords(tokens, base, len, tokens, base + blockSize - 16, ctx);
      out32[2 * j + LO] = rL;
      out32[2 * j + HI] = rH;
    }
    return out;
  }
  const bytes = tokenBytes(tokens, n * blockSize);
  for (let j = 0; j < n; j++) {
    hashShort(bytes, j * len, len, ctx);
    out32[2 * j + LO] = rL;
    out32[2 * j + HI] = rH;
  }
  return out;
};

/** The tokens as LE bytes: a view on LE hosts, a copy otherwise. */
function tokenBytes(tokens: Uint32Array, count: number): Uint8Array {
  if (LE) return new Uint8Array(tokens.buffer, tokens.byteOffset, 4 * count);
  const b = new Uint8Array(4 * count);
  for (let i = 0; i < count; i++) {
    const t = tokens[i]!;
    b[4 * i] = t & 0xff;
    b[4 * i + 1] = (t >>> 8) & 0xff;
    b[4 * i + 2] = (t >>> 16) & 0xff;
    b[4 * i + 3] = t >>> 24;
  }
  return b;
}

/**
 * Block size 16: 64 bytes, the 17–128 class with four mix16B rounds. Input offsets
 * 0, 16, 32, 48 use secret offsets 0, 32, 48, 16.
 */
function hashBlocks16(tokens: Uint32Array, n: number, ctx: SeedCtx, out32: Uint32Array): void {
  const k = ctx.mixKeys;
  mul64(0, 64, P64_1_H, P64_1_L);
  const initH = rH, initL = rL;
  const k0 = 0, k1 = 4 * 32, k2 = 4 * 48, k3 = 4 * 16;
  for (let j = 0, t = 0; j < n; j++, t += 16) {
    let sH = initH, sL = initL;
    mul128Fold(
      (tokens[t + 1]! ^ k[k0]!) >>> 0, (tokens[t]! ^ k[k0 + 1]!) >>> 0,
      (tokens[t + 3]! ^ k[k0 + 2]!) >>> 0, (tokens[t + 2]! ^ k[k0 + 3]!) >>> 0);
    sH += rH; sL += rL;
    mul128Fold(
      (tokens[t + 5]! ^ k[k1]!) >>> 0, (tokens[t + 4]! ^ k[k1 + 1]!) >>> 0,
      (tokens[t + 7]! ^ k[k1 + 2]!) >>> 0, (tokens[t + 6]! ^ k[k1 + 3]!) >>> 0);
    sH += rH; sL += rL;
    mul128Fold(
      (tokens[t + 9]! ^ k[k2]!) >>> 0, (tokens[t + 8]! ^ k[k2 + 1]!) >>> 0,
      (tokens[t + 11]! ^ k[k2 + 2]!) >>> 0, (tokens[t + 10]! ^ k[k2 + 3]!) >>> 0);
    sH += rH; sL += rL;
    mul128Fold(
      (tokens[t + 13]! ^ k[k3]!) >>> 0, (tokens[t + 12]! ^ k[k3 + 1]!) >>> 0,
      (tokens[t + 15]! ^ k[k3 + 2]!) >>> 0, (tokens[t + 14]! ^ k[k3 + 3]!) >>> 0);
    sH += rH; sL += rL;
    const l = sL >>> 0;
    avalanche((sH + (sL - l) * INV32) >>> 0, l);
    out32[2 * j + LO] = rL;
    out32[2 * j + HI] = rH;
  }
}

/** LocalBlockHash per full block (spec §2.2), using the portable hasher. */
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

function hashBlocksWithMm(
  tokens: Uint32Array,
  blockSize: number,
  n: number,
  seed: bigint,
  mm: readonly (BlockExtraInfo | null | undefined)[],
): BigUint64Array {
  const out = portableBatchHasher(tokens.subarray(0, n * blockSize), blockSize, seed);
  const ctx = seedCtx(seed);
  const end = Math.min(n, mm.length);
  for (let i = 0; i < end; i++) {
    const objs = mm[i]?.mmObjects;
    if (objs === undefined || objs.length === 0) continue;
    // Token bytes, then every mm_hash sorted ascending (unsigned) as u64 LE.
    const hashes = BigUint64Array.from(objs, (o) => BigInt.asUintN(64, o.mmHash)).sort();
    const bytes = new Uint8Array(4 * blockSize + 8 * hashes.length);
    bytes.set(tokenBytes(tokens.subarray(i * blockSize, (i + 1) * blockSize), blockSize));
    const dv = new DataView(bytes.buffer);
    for (let h = 0; h < hashes.length; h++) dv.setBigUint64(4 * blockSize + 8 * h, hashes[h]!, true);
    hashBytes(bytes, ctx);
    out[i] = (BigInt(rH) << 32n) | BigInt(rL);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Sequence hashes (spec §2.3)

const CHAIN = buildSeedCtx(XXH3_SEED);

/** seq[0] = block[0]; seq[i] = XXH3(u64le(seq[i-1]) ‖ u64le(block[i]), 1337). */
export function computeSeqHashes(blockHashes: BigUint64Array): BigUint64Array {
  const n = blockHashes.length;
  const out = new BigUint64Array(n);
  if (n === 0) return out;
  const in32 = new Uint32Array(blockHashes.buffer, blockHashes.byteOffset, 2 * n);
  const out32 = new Uint32Array(out.buffer);
  const f = CHAIN.bf916;
  const b1H = f[0]!, b1L = f[1]!, b2H = f[2]!, b2L = f[3]!;
  let pH = in32[HI]!, pL = in32[LO]!;
  out32[LO] = pL;
  out32[HI] = pH;
  for (let i = 1; i < n; i++) {
    // The 9–16 class with len = 16: inLo = prev ^ bf1, inHi = block ^ bf2.
    const inLoH = (pH ^ b1H) >>> 0, inLoL = (pL ^ b1L) >>> 0;
    const inHiH = (in32[2 * i + HI]! ^ b2H) >>> 0, inHiL = (in32[2 * i + LO]! ^ b2L) >>> 0;
    mul128Fold(inLoH, inLoL, inHiH, inHiL);
    const sL = 16 + bswap32(inLoH) + inHiL + rL;
    const l = sL >>> 0;
    avalanche((bswap32(inLoL) + inHiH + rH + (sL - l) * INV32) >>> 0, l);
    pH = rH;
    pL = rL;
    out32[2 * i + LO] = pL;
    out32[2 * i + HI] = pH;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Helpers (spec §2.2)

const HEX64 = /^[0-9a-fA-F]{64}$/;

/** hash_mm_identifier: "" -> undefined; 64-hex digest -> its first 16 hex chars; else XXH3(id, 0). */
export function hashMmIdentifier(id: string): bigint | undefined {
  if (id === "") return undefined;
  if (HEX64.test(id)) return BigInt("0x" + id.slice(0, 16));
  return xxh3_64(utf8.encode(id), 0n);
}

/** XXH3(data, 1337): Dynamo's compute_block_hash. */
export function computeBlockHash(data: Uint8Array): bigint {
  return xxh3_64(data, XXH3_SEED);
}

/** SGLang's pad value for an MM hash: u32(1_000_000 + (h & (2^30 - 1))). */
export function padValueForMmHash(h: bigint): number {
  return 1_000_000 + Number(h & 0x3fffffffn);
}
