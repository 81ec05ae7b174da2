/**
 * Block and sequence hashes (spec §2): XXH3-64 with a 64-bit seed, in portable TypeScript.
 *
 * The router hashes every request (8k–128k tokens), so the hot paths avoid BigInt. A u64 is
 * a pair of int32 halves (hi, lo); 32x32->64 products take the low word from Math.imul and
 * the high word from a double-precision product. BigInt appears only at the API boundary:
 * results are written as lo/hi halves into a BigUint64Array's buffer. Token blocks are
 * hashed straight from the token array (token i is bytes 4i..4i+3, little-endian), so no
 * byte array is built. Block size 16 (64 bytes, the 17–128 class) has its own loop and
 * the long class (> 240 bytes, e.g. block size 512) an unrolled one; every other length
 * goes through general code that covers all XXH3 length classes. Everything that depends
 * on the seed (the derived secret of the long class included) is precomputed once per seed
 * and cached.
 *
 * No I/O and nothing runtime-specific: this file runs on any JS engine. A native batch
 * hasher (bun:ffi) is injected through `computeBlockHashesWith`.
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

const P32_1 = 0x9e3779b1 | 0;
const P64_1 = 0x9e3779b185ebca87n;
const P64_2 = 0xc2b2ae3d27d4eb4fn;
const P64_3 = 0x165667b19e3779f9n;
const P64_4 = 0x85ebca77c2b2ae63n;
const P64_5 = 0x27d4eb2f165667c5n;
// The same primes as int32 halves for the hot paths.
const P64_1_H = 0x9e3779b1 | 0, P64_1_L = 0x85ebca87 | 0;
const P64_2_H = 0xc2b2ae3d | 0, P64_2_L = 0x27d4eb4f;
const P64_3_H = 0x165667b1, P64_3_L = 0x9e3779f9 | 0;
const MX1_H = 0x16566791, MX1_L = 0x9e3779f9 | 0;
const MX2_H = 0x9fb21c65 | 0, MX2_L = 0x1e98df25;

/** Initial long-path accumulators as [hi, lo] int32 pairs. */
const INIT_ACC = new Int32Array(16);
[0xc2b2ae3dn, P64_1, P64_2, P64_3, P64_4, 0x85ebca77n, P64_5, 0x9e3779b1n].forEach((v, i) => {
  INIT_ACC[2 * i] = Number(v >> 32n);
  INIT_ACC[2 * i + 1] = Number(v & 0xffffffffn);
});

// ---------------------------------------------------------------------------------------
// 64-bit arithmetic on (hi, lo) halves. Convention: every half is an int32 holding the bit
// pattern (`| 0`, never `>>> 0`), so JIT compilers keep them in integer registers and never
// see a value flip between int and double; unsigned views (`x >>> 0`) appear only inside
// double-precision expressions. Results land in rH/rL (module registers), so no object is
// allocated per operation.

const SIGN = 1 << 31; // x ^ SIGN turns unsigned order into signed order (carry tests)

let rH = 0;
let rL = 0;

/**
 * High word of the unsigned 32x32 product of a and b, given lo = Math.imul(a, b).
 * a * (b / 2^32) is the exact product / 2^32 to within 2^-21, so after removing the low
 * word the high word is the nearest integer: truncate (x + 0.5).
 */
function mulHi(a: number, b: number, lo: number): number {
  return ((a >>> 0) * ((b >>> 0) * INV32) - (lo >>> 0) * INV32 + 0.5) | 0;
}

/** 32x32 -> 64 unsigned product. */
function mul32(a: number, b: number): void {
  const lo = Math.imul(a, b);
  rH = mulHi(a, b, lo);
  rL = lo;
}

/** (aH:aL) * (bH:bL) mod 2^64. */
function mul64(aH: number, aL: number, bH: number, bL: number): void {
  mul32(aL, bL);
  rH = (rH + Math.imul(aL, bH) + Math.imul(aH, bL)) | 0;
}

/** XXH3_mul128_fold64: low ^ high halves of the 128-bit product. */
function mul128Fold(aH: number, aL: number, bH: number, bL: number): void {
  const uaH = aH >>> 0, uaL = aL >>> 0, ubH = bH >>> 0, ubL = bL >>> 0;
  const llL = Math.imul(aL, bL);
  const llH = (uaL * (ubL * INV32) - (llL >>> 0) * INV32 + 0.5) | 0;
  const hhL = Math.imul(aH, bH);
  const hhH = (uaH * (ubH * INV32) - (hhL >>> 0) * INV32 + 0.5) | 0;
  // Both cross products at once: x = aH*bL + aL*bH (65 bits) = xH * 2^32 + xL; the double
  // sum is within 2^-18 of xH after removing xL.
  const xL = (Math.imul(aH, bL) + Math.imul(aL, bH)) | 0;
  const xH = Math.round(uaH * (ubL * INV32) + uaL * (ubH * INV32) - (xL >>> 0) * INV32);
  const lowH = (llH + xL) | 0;
  const u = (hhL >>> 0) + xH + ((lowH ^ SIGN) < (xL ^ SIGN) ? 1 : 0);
  rH = lowH ^ ((hhH + Math.floor(u * INV32)) | 0);
  rL = llL ^ (u | 0);
}

/** XXH3_avalanche on (h, l). */
function avalanche(h: number, l: number): void {
  mul64(h, l ^ (h >>> 5), MX1_H, MX1_L);
  rL ^= rH;
}

/** XXH64_avalanche on (h, l). */
function avalanche64(h: number, l: number): void {
  mul64(h, l ^ (h >>> 1), P64_2_H, P64_2_L);
  h = rH;
  l = rL ^ ((h << 3) | (rL >>> 29));
  mul64(h ^ (h >>> 29), l, P64_3_H, P64_3_L);
  rL ^= rH;
}

/** XXH3_rrmxmx on (h, l) with input length len. */
function rrmxmx(h: number, l: number, len: number): void {
  // h ^= rotl64(h, 49) ^ rotl64(h, 24)
  const nh = h ^ ((l << 17) | (h >>> 15)) ^ ((h << 24) | (l >>> 8));
  const nl = l ^ ((h << 17) | (l >>> 15)) ^ ((l << 24) | (h >>> 8));
  mul64(nh, nl, MX2_H, MX2_L);
  h = rH;
  mul64(h, rL ^ ((h >>> 3) + len), MX2_H, MX2_L);
  h = rH;
  rL ^= (h << 4) | (rL >>> 28);
  rH = h ^ (h >>> 28);
}

function bswap32(x: number): number {
  return ((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24);
}

function rd32(b: Uint8Array, o: number): number {
  return b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24);
}

/**
 * The u32 at byte offset o of a little-endian word array (any alignment; the word after
 * an unaligned read must exist, which holds whenever o + 4 <= the input length).
 */
function wd(w: Int32Array, o: number): number {
  const i = o >> 2;
  const sh = (o & 3) << 3;
  return sh === 0 ? w[i]! : (w[i]! >>> sh) | (w[i + 1]! << (32 - sh));
}

function byteAt(w: Int32Array, o: number): number {
  return (w[o >> 2]! >>> ((o & 3) << 3)) & 0xff;
}

function toBig(h: number, l: number): bigint {
  return (BigInt(h >>> 0) << 32n) | BigInt(l >>> 0);
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
  readonly bf13: Int32Array;
  readonly bf48: Int32Array;
  readonly bf916: Int32Array; // [bf1H, bf1L, bf2H, bf2L]
  /**
   * mix16B keys at every byte offset o in 0..176: [aH, aL, bH, bL] at 4*o with
   * a = secret64(o) + seed, b = secret64(o + 8) - seed (the 17–240 byte classes).
   */
  readonly mixKeys: Int32Array;
  /** Long path: the derived 192-byte secret as u32 words in byte order ([lo, hi] per u64). */
  readonly longKeys: Int32Array;
  /** Long path: keys of the last stripe (secret + 121) and of the merge (secret + 11). */
  readonly lastKeys: Int32Array;
  readonly mergeKeys: Int32Array;
}

function secret64(s: Uint8Array, o: number): bigint {
  let v = 0n;
  for (let i = 7; i >= 0; i--) v = (v << 8n) | BigInt(s[o + i]!);
  return v;
}

/** Writes v as [hi, lo] int32 halves at out[at]. */
function split(v: bigint, out: Int32Array, at: number): void {
  out[at] = Number((v >> 32n) & 0xffffffffn);
  out[at + 1] = Number(v & 0xffffffffn);
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
  const bf13 = new Int32Array(2);
  split((BigInt((rd32(k, 0) ^ rd32(k, 4)) >>> 0) + s) & M64, bf13, 0);
  // 4–8 bytes: seed ^= swap32(lo32(seed)) << 32
  const s48 = s ^ (BigInt(bswap32(Number(s & 0xffffffffn)) >>> 0) << 32n);
  const bf48 = new Int32Array(2);
  split(((secret64(k, 8) ^ secret64(k, 16)) - s48) & M64, bf48, 0);
  const bf916 = new Int32Array(4);
  split(((secret64(k, 24) ^ secret64(k, 32)) + s) & M64, bf916, 0);
  split(((secret64(k, 40) ^ secret64(k, 48)) - s) & M64, bf916, 2);
  const mixKeys = new Int32Array(177 * 4);
  for (let o = 0; o <= 176; o++) {
    split((secret64(k, o) + s) & M64, mixKeys, 4 * o);
    split((secret64(k, o + 8) - s) & M64, mixKeys, 4 * o + 2);
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
  const words = (from: number, n: number): Int32Array => {
    const w = new Int32Array(n);
    for (let i = 0; i < n; i++) w[i] = rd32(custom, from + 4 * i);
    return w;
  };
  return {
    seed: s,
    emptyH: Number(empty >> 32n) | 0,
    emptyL: Number(empty & 0xffffffffn) | 0,
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
seedCache.set(XXH3_SEED, lastCtx);

/** The context for `seed`; the last few seeds (base, a handful of LoRAs) stay cached. */
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

// ---------------------------------------------------------------------------------------
// Short path (0..240 bytes) over little-endian u32 words: w holds the input bytes from
// byte offset `off` (token blocks are always word-aligned; general inputs are copied).

/** mix16B(bytes i..i+16, keys at secret offset o); result in rH/rL. */
function mix16(w: Int32Array, i: number, keys: Int32Array, o: number): void {
  const k = 4 * o;
  mul128Fold(wd(w, i + 4) ^ keys[k]!, wd(w, i) ^ keys[k + 1]!, wd(w, i + 12) ^ keys[k + 2]!, wd(w, i + 8) ^ keys[k + 3]!);
}

/** Hash bytes off .. off+len of w with len <= 240; result in rH/rL. */
function hashShort(w: Int32Array, off: number, len: number, ctx: SeedCtx): void {
  if (len <= 16) {
    if (len > 8) {
      const f = ctx.bf916;
      const inLoL = wd(w, off) ^ f[1]!, inLoH = wd(w, off + 4) ^ f[0]!;
      const inHiL = wd(w, off + len - 8) ^ f[3]!, inHiH = wd(w, off + len - 4) ^ f[2]!;
      mul128Fold(inLoH, inLoL, inHiH, inHiL);
      // len + swap64(inLo) + inHi + fold
      const sL = len + (bswap32(inLoH) >>> 0) + (inHiL >>> 0) + (rL >>> 0);
      avalanche((bswap32(inLoL) + inHiH + rH + Math.floor(sL * INV32)) | 0, sL | 0);
    } else if (len >= 4) {
      const f = ctx.bf48;
      rrmxmx(wd(w, off) ^ f[0]!, wd(w, off + len - 4) ^ f[1]!, len);
    } else if (len > 0) {
      const c1 = byteAt(w, off), c2 = byteAt(w, off + (len >> 1)), c3 = byteAt(w, off + len - 1);
      const combined = (c1 << 16) | (c2 << 24) | c3 | (len << 8);
      avalanche64(ctx.bf13[0]!, combined ^ ctx.bf13[1]!);
    } else {
      rH = ctx.emptyH;
      rL = ctx.emptyL;
    }
    return;
  }
  const keys = ctx.mixKeys;
  mul64(0, len, P64_1_H, P64_1_L);
  // Sum of 64-bit terms: hi halves wrap in int32, lo halves add up exactly as doubles.
  let sH = rH, sL = rL >>> 0;
  if (len <= 128) {
    if (len > 32) {
      if (len > 64) {
        if (len > 96) {
          mix16(w, off + 48, keys, 96); sH = (sH + rH) | 0; sL += rL >>> 0;
          mix16(w, off + len - 64, keys, 112); sH = (sH + rH) | 0; sL += rL >>> 0;
        }
        mix16(w, off + 32, keys, 64); sH = (sH + rH) | 0; sL += rL >>> 0;
        mix16(w, off + len - 48, keys, 80); sH = (sH + rH) | 0; sL += rL >>> 0;
      }
      mix16(w, off + 16, keys, 32); sH = (sH + rH) | 0; sL += rL >>> 0;
      mix16(w, off + len - 32, keys, 48); sH = (sH + rH) | 0; sL += rL >>> 0;
    }
    mix16(w, off, keys, 0); sH = (sH + rH) | 0; sL += rL >>> 0;
    mix16(w, off + len - 16, keys, 16); sH = (sH + rH) | 0; sL += rL >>> 0;
    avalanche((sH + Math.floor(sL * INV32)) | 0, sL | 0);
    return;
  }
  // 129..240: eight rounds, avalanche, then the remaining rounds and the last 16 bytes.
  for (let i = 0; i < 8; i++) {
    mix16(w, off + 16 * i, keys, 16 * i);
    sH = (sH + rH) | 0;
    sL += rL >>> 0;
  }
  avalanche((sH + Math.floor(sL * INV32)) | 0, sL | 0);
  sH = rH;
  sL = rL >>> 0;
  mix16(w, off + len - 16, keys, 136 - 17);
  sH = (sH + rH) | 0;
  sL += rL >>> 0;
  const nbRounds = len >> 4;
  for (let i = 8; i < nbRounds; i++) {
    mix16(w, off + 16 * i, keys, 16 * (i - 8) + 3);
    sH = (sH + rH) | 0;
    sL += rL >>> 0;
  }
  avalanche((sH + Math.floor(sL * INV32)) | 0, sL | 0);
}

// ---------------------------------------------------------------------------------------
// Long path (> 240 bytes) over u32 words. w[base + j] holds bytes 4j..4j+3 (LE) of the
// input; the last stripe (bytes len-64..len) is read from lastW[lastBase ..] because it
// need not be word-aligned for general inputs.

const acc = new Int32Array(16); // [hi, lo] per lane, handed to mergeAccs

/**
 * XXH3_hashLong_64b: stripes of 64 bytes accumulate into 8 lanes (acc[i ^ 1] += data,
 * acc[i] += lo32(data ^ key) * hi32(data ^ key)); every 16 stripes (1024 bytes) the lanes
 * are scrambled. The lanes live in local variables (unrolled by hand: this is the hot loop
 * of large block sizes).
 */
function hashLongWords(w: Int32Array, base: number, len: number, lastW: Int32Array, lastBase: number, ctx: SeedCtx): void {
  const keys = ctx.longKeys;
  // Lane v = a_h * 2^32 + a_l, with a_l a running sum of signed lo words (exact as a
  // double) and the sign bits folded into a_h; normalized before scrambles and the merge.
  let a0h = (INIT_ACC[0]! + (INIT_ACC[1]! >>> 31)) | 0, a0l = INIT_ACC[1]!;
  let a1h = (INIT_ACC[2]! + (INIT_ACC[3]! >>> 31)) | 0, a1l = INIT_ACC[3]!;
  let a2h = (INIT_ACC[4]! + (INIT_ACC[5]! >>> 31)) | 0, a2l = INIT_ACC[5]!;
  let a3h = (INIT_ACC[6]! + (INIT_ACC[7]! >>> 31)) | 0, a3l = INIT_ACC[7]!;
  let a4h = (INIT_ACC[8]! + (INIT_ACC[9]! >>> 31)) | 0, a4l = INIT_ACC[9]!;
  let a5h = (INIT_ACC[10]! + (INIT_ACC[11]! >>> 31)) | 0, a5l = INIT_ACC[11]!;
  let a6h = (INIT_ACC[12]! + (INIT_ACC[13]! >>> 31)) | 0, a6l = INIT_ACC[13]!;
  let a7h = (INIT_ACC[14]! + (INIT_ACC[15]! >>> 31)) | 0, a7l = INIT_ACC[15]!;
  const nbBlocks = Math.floor((len - 1) / 1024);
  const nbStripes = Math.floor((len - 1 - 1024 * nbBlocks) / 64);
  let p = base;
  for (let n = 0; n <= nbBlocks; n++) {
    const full = n < nbBlocks;
    const stripes = full ? 16 : nbStripes + 1;
    for (let s = 0; s < stripes; s++) {
      let src = w, q = p, key = keys, k = 2 * s;
      if (!full && s === nbStripes) {
        src = lastW;
        q = lastBase;
        key = ctx.lastKeys;
        k = 0;
      } else {
        p += 16;
      }
      {
        const dvL = src[q + 0]!, dvH = src[q + 1]!;
        const dkL = dvL ^ key[k + 0]!, dkH = dvH ^ key[k + 1]!;
        a1h = (a1h + dvH + (dvL >>> 31)) | 0;
        a1l += dvL;
        const pL = Math.imul(dkL, dkH);
        a0h = (a0h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a0l += pL;
      }
      {
        const dvL = src[q + 2]!, dvH = src[q + 3]!;
        const dkL = dvL ^ key[k + 2]!, dkH = dvH ^ key[k + 3]!;
        a0h = (a0h + dvH + (dvL >>> 31)) | 0;
        a0l += dvL;
        const pL = Math.imul(dkL, dkH);
        a1h = (a1h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a1l += pL;
      }
      {
        const dvL = src[q + 4]!, dvH = src[q + 5]!;
        const dkL = dvL ^ key[k + 4]!, dkH = dvH ^ key[k + 5]!;
        a3h = (a3h + dvH + (dvL >>> 31)) | 0;
        a3l += dvL;
        const pL = Math.imul(dkL, dkH);
        a2h = (a2h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a2l += pL;
      }
      {
        const dvL = src[q + 6]!, dvH = src[q + 7]!;
        const dkL = dvL ^ key[k + 6]!, dkH = dvH ^ key[k + 7]!;
        a2h = (a2h + dvH + (dvL >>> 31)) | 0;
        a2l += dvL;
        const pL = Math.imul(dkL, dkH);
        a3h = (a3h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a3l += pL;
      }
      {
        const dvL = src[q + 8]!, dvH = src[q + 9]!;
        const dkL = dvL ^ key[k + 8]!, dkH = dvH ^ key[k + 9]!;
        a5h = (a5h + dvH + (dvL >>> 31)) | 0;
        a5l += dvL;
        const pL = Math.imul(dkL, dkH);
        a4h = (a4h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a4l += pL;
      }
      {
        const dvL = src[q + 10]!, dvH = src[q + 11]!;
        const dkL = dvL ^ key[k + 10]!, dkH = dvH ^ key[k + 11]!;
        a4h = (a4h + dvH + (dvL >>> 31)) | 0;
        a4l += dvL;
        const pL = Math.imul(dkL, dkH);
        a5h = (a5h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a5l += pL;
      }
      {
        const dvL = src[q + 12]!, dvH = src[q + 13]!;
        const dkL = dvL ^ key[k + 12]!, dkH = dvH ^ key[k + 13]!;
        a7h = (a7h + dvH + (dvL >>> 31)) | 0;
        a7l += dvL;
        const pL = Math.imul(dkL, dkH);
        a6h = (a6h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a6l += pL;
      }
      {
        const dvL = src[q + 14]!, dvH = src[q + 15]!;
        const dkL = dvL ^ key[k + 14]!, dkH = dvH ^ key[k + 15]!;
        a6h = (a6h + dvH + (dvL >>> 31)) | 0;
        a6l += dvL;
        const pL = Math.imul(dkL, dkH);
        a7h = (a7h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a7l += pL;
      }
    }
    if (full) {
      {
        const h = (a0h + Math.floor(a0l * INV32)) | 0, l = a0l | 0;
        mul32(l ^ (h >>> 15) ^ keys[32]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[33]!, P32_1)) | 0;
        a0h = (nh + (rL >>> 31)) | 0;
        a0l = rL;
      }
      {
        const h = (a1h + Math.floor(a1l * INV32)) | 0, l = a1l | 0;
        mul32(l ^ (h >>> 15) ^ keys[34]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[35]!, P32_1)) | 0;
        a1h = (nh + (rL >>> 31)) | 0;
        a1l = rL;
      }
      {
        const h = (a2h + Math.floor(a2l * INV32)) | 0, l = a2l | 0;
        mul32(l ^ (h >>> 15) ^ keys[36]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[37]!, P32_1)) | 0;
        a2h = (nh + (rL >>> 31)) | 0;
        a2l = rL;
      }
      {
        const h = (a3h + Math.floor(a3l * INV32)) | 0, l = a3l | 0;
        mul32(l ^ (h >>> 15) ^ keys[38]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[39]!, P32_1)) | 0;
        a3h = (nh + (rL >>> 31)) | 0;
        a3l = rL;
      }
      {
        const h = (a4h + Math.floor(a4l * INV32)) | 0, l = a4l | 0;
        mul32(l ^ (h >>> 15) ^ keys[40]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[41]!, P32_1)) | 0;
        a4h = (nh + (rL >>> 31)) | 0;
        a4l = rL;
      }
      {
        const h = (a5h + Math.floor(a5l * INV32)) | 0, l = a5l | 0;
        mul32(l ^ (h >>> 15) ^ keys[42]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[43]!, P32_1)) | 0;
        a5h = (nh + (rL >>> 31)) | 0;
        a5l = rL;
      }
      {
        const h = (a6h + Math.floor(a6l * INV32)) | 0, l = a6l | 0;
        mul32(l ^ (h >>> 15) ^ keys[44]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[45]!, P32_1)) | 0;
        a6h = (nh + (rL >>> 31)) | 0;
        a6l = rL;
      }
      {
        const h = (a7h + Math.floor(a7l * INV32)) | 0, l = a7l | 0;
        mul32(l ^ (h >>> 15) ^ keys[46]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[47]!, P32_1)) | 0;
        a7h = (nh + (rL >>> 31)) | 0;
        a7l = rL;
      }
    }
  }
  acc[0] = a0h + Math.floor(a0l * INV32);
  acc[1] = a0l;
  acc[2] = a1h + Math.floor(a1l * INV32);
  acc[3] = a1l;
  acc[4] = a2h + Math.floor(a2l * INV32);
  acc[5] = a2l;
  acc[6] = a3h + Math.floor(a3l * INV32);
  acc[7] = a3l;
  acc[8] = a4h + Math.floor(a4l * INV32);
  acc[9] = a4l;
  acc[10] = a5h + Math.floor(a5l * INV32);
  acc[11] = a5l;
  acc[12] = a6h + Math.floor(a6l * INV32);
  acc[13] = a6l;
  acc[14] = a7h + Math.floor(a7l * INV32);
  acc[15] = a7l;
  mergeAccs(len, ctx.mergeKeys);
}

function mergeAccs(len: number, mk: Int32Array): void {
  mul64(0, len, P64_1_H, P64_1_L);
  let sH = rH, sL = rL >>> 0;
  for (let i = 0; i < 4; i++) {
    mul128Fold(acc[4 * i]! ^ mk[4 * i + 1]!, acc[4 * i + 1]! ^ mk[4 * i]!, acc[4 * i + 2]! ^ mk[4 * i + 3]!, acc[4 * i + 3]! ^ mk[4 * i + 2]!);
    sH = (sH + rH) | 0;
    sL += rL >>> 0;
  }
  avalanche((sH + Math.floor(sL * INV32)) | 0, sL | 0);
}

// ---------------------------------------------------------------------------------------
// Public primitive

let wordScratch = new Int32Array(1024);
const lastScratch = new Int32Array(16);

/** XXH3_64bits_withSeed(data, seed): the full 64-bit XXH3, every length class. */
export function xxh3_64(data: Uint8Array, seed: bigint = 0n): bigint {
  hashBytes(data, seedCtx(seed));
  return toBig(rH, rL);
}

/** General input: word-aligned LE view when possible, else a copy into scratch words. */
function hashBytes(data: Uint8Array, ctx: SeedCtx): void {
  const len = data.length;
  const nw = (len + 3) >>> 2;
  let w: Int32Array;
  if (LE && (data.byteOffset & 3) === 0 && (len & 3) === 0) {
    w = new Int32Array(data.buffer, data.byteOffset, nw);
  } else {
    if (wordScratch.length < nw + 1) wordScratch = new Int32Array(nw + 1);
    w = wordScratch;
    const full = len >>> 2;
    for (let i = 0; i < full; i++) w[i] = rd32(data, 4 * i);
    let tail = 0;
    for (let i = len - 1; i >= 4 * full; i--) tail = (tail << 8) | data[i]!;
    w[full] = tail;
  }
  hashWords(w, 0, len, ctx);
}

/** Hash bytes off .. off+len of the LE word array w (off word-aligned); result in rH/rL. */
function hashWords(w: Int32Array, off: number, len: number, ctx: SeedCtx): void {
  if (len <= 240) {
    hashShort(w, off, len, ctx);
    return;
  }
  const base = off >> 2;
  let lastBase = base + ((len - 64) >> 2);
  let lastW = w;
  if ((len & 3) !== 0) {
    for (let i = 0; i < 16; i++) lastScratch[i] = wd(w, off + len - 64 + 4 * i);
    lastW = lastScratch;
    lastBase = 0;
  }
  hashLongWords(w, base, len, lastW, lastBase, ctx);
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
export type BatchBlockHasher = ((tokens: Uint32Array, blockSize: number, seed: bigint) => BigUint64Array) & {
  /**
   * The same implementation's sequence hasher, when it has one (the native library: one
   * FFI call per prompt). Callers use `seqHasherOf(hasher)`.
   */
  readonly seqHasher?: SeqHasher;
};

/** Sequence hashes of block hashes (spec §2.3); every implementation agrees bit for bit with computeSeqHashes. */
export type SeqHasher = (blockHashes: BigUint64Array) => BigUint64Array;

/** The sequence hasher that goes with a block hasher: its own when it brings one, else the portable one. */
export function seqHasherOf(hasher: BatchBlockHasher): SeqHasher {
  return hasher.seqHasher ?? computeSeqHashes;
}

/** Sequence hashes through an injected implementation (native or portable). */
export function computeSeqHashesWith(seqHasher: SeqHasher, blockHashes: BigUint64Array): BigUint64Array {
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

/** Portable (pure TypeScript) batch hasher. */
export const portableBatchHasher: BatchBlockHasher = (tokens, blockSize, seed) => {
  const n = blockSize > 0 ? Math.floor(tokens.length / blockSize) : 0;
  const out = newU64Array(n);
  if (n === 0) return out;
  const out32 = new Int32Array(out.buffer);
  const ctx = seedCtx(seed);
  // Token values are the u32 LE words of the block bytes: view them as int32.
  const w = new Int32Array(tokens.buffer, tokens.byteOffset, n * blockSize);
  if (blockSize === 16) {
    hashBlocks16(w, n, ctx, out32);
    return out;
  }
  const len = 4 * blockSize;
  if (len > 240) {
    for (let j = 0; j < n; j++) {
      const base = j * blockSize;
      hashLongWords(w, base, len, w, base + blockSize - 16, ctx);
      out32[2 * j + LO] = rL;
      out32[2 * j + HI] = rH;
    }
    return out;
  }
  for (let j = 0; j < n; j++) {
    hashShort(w, j * len, len, ctx);
    out32[2 * j + LO] = rL;
    out32[2 * j + HI] = rH;
  }
  return out;
};

/**
 * Block size 16: 64 bytes, the 17–128 class with four mix16B rounds. Input offsets
 * 0, 16, 32, 48 use secret offsets 0, 32, 48, 16.
 */
function hashBlocks16(w: Int32Array, n: number, ctx: SeedCtx, out32: Int32Array): void {
  const k = ctx.mixKeys;
  const a0H = k[0]!, a0L = k[1]!, b0H = k[2]!, b0L = k[3]!;
  const a1H = k[128]!, a1L = k[129]!, b1H = k[130]!, b1L = k[131]!;
  const a2H = k[192]!, a2L = k[193]!, b2H = k[194]!, b2L = k[195]!;
  const a3H = k[64]!, a3L = k[65]!, b3H = k[66]!, b3L = k[67]!;
  mul64(0, 64, P64_1_H, P64_1_L);
  const initH = rH, initL = rL >>> 0;
  for (let j = 0, t = 0; j < n; j++, t += 16) {
    mul128Fold(w[t + 1]! ^ a0H, w[t]! ^ a0L, w[t + 3]! ^ b0H, w[t + 2]! ^ b0L);
    let sH = (initH + rH) | 0, sL = initL + (rL >>> 0);
    mul128Fold(w[t + 5]! ^ a1H, w[t + 4]! ^ a1L, w[t + 7]! ^ b1H, w[t + 6]! ^ b1L);
    sH = (sH + rH) | 0; sL += rL >>> 0;
    mul128Fold(w[t + 9]! ^ a2H, w[t + 8]! ^ a2L, w[t + 11]! ^ b2H, w[t + 10]! ^ b2L);
    sH = (sH + rH) | 0; sL += rL >>> 0;
    mul128Fold(w[t + 13]! ^ a3H, w[t + 12]! ^ a3L, w[t + 15]! ^ b3H, w[t + 14]! ^ b3L);
    sH = (sH + rH) | 0; sL += rL >>> 0;
    avalanche((sH + Math.floor(sL * INV32)) | 0, sL | 0);
    out32[2 * j + LO] = rL;
    out32[2 * j + HI] = rH;
  }
}

/** LocalBlockHash per full block (spec §2.2), using the portable hasher. */
export function computeBlockHashes(tokens: ArrayLike<number>, blockSize: number, opts?: BlockHashOptions): BigUint64Array {
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
  const ctx = seedCtx(seed);
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
    hashWords(words, 0, 4 * words.length, ctx);
    out[i] = toBig(rH, rL);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Sequence hashes (spec §2.3)

const CHAIN_BF = buildSeedCtx(XXH3_SEED).bf916;

/** seq[0] = block[0]; seq[i] = XXH3(u64le(seq[i-1]) ‖ u64le(block[i]), 1337). */
export function computeSeqHashes(blockHashes: BigUint64Array): BigUint64Array {
  const n = blockHashes.length;
  const out = newU64Array(n);
  if (n === 0) return out;
  const in32 = new Int32Array(blockHashes.buffer, blockHashes.byteOffset, 2 * n);
  const out32 = new Int32Array(out.buffer);
  const b1H = CHAIN_BF[0]!, b1L = CHAIN_BF[1]!, b2H = CHAIN_BF[2]!, b2L = CHAIN_BF[3]!;
  let pH = in32[HI]!, pL = in32[LO]!;
  out32[LO] = pL;
  out32[HI] = pH;
  for (let i = 1; i < n; i++) {
    // The 9–16 byte class with len = 16: inLo = prev ^ bf1, inHi = block ^ bf2.
    const inLoH = pH ^ b1H, inLoL = pL ^ b1L;
    const inHiH = in32[2 * i + HI]! ^ b2H, inHiL = in32[2 * i + LO]! ^ b2L;
    mul128Fold(inLoH, inLoL, inHiH, inHiL);
    const sL = 16 + (bswap32(inLoH) >>> 0) + (inHiL >>> 0) + (rL >>> 0);
    avalanche((bswap32(inLoL) + inHiH + rH + Math.floor(sL * INV32)) | 0, sL | 0);
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
