/**
 * XXH3-64 with a 64-bit seed (XXH3_64bits_withSeed), in portable TypeScript, bit for bit the
 * reference algorithm for every input length. It is a hash function and nothing more: it
 * knows no tokens, blocks, LoRA salts or Dynamo's definitions (block-hash.ts builds those on
 * it), allocates no result arrays (callers pass them) and does no I/O, so it runs on any JS
 * engine.
 *
 * Three ways in, because the router hashes every request (8k–128k tokens) and the shapes
 * it hashes have fast paths:
 *   - `xxh3_64(bytes, seed)`: any byte string (LoRA names, ids, the sequence-hash input);
 *   - `xxh3_64Chunks(words, chunkBytes, seed, out)`: many equal chunks of a u32 word array,
 *     each hashed on its own (a prompt's token blocks), with their own loops for 64-byte
 *     chunks (block size 16) and for the long class (> 240 bytes, e.g. block size 512);
 *   - `xxh3_64Chain(values, seed, out)`: a running hash over u64 values, each step one
 *     16-byte input (the 9–16 byte class, unrolled);
 *   plus `xxh3_64Words` for word arrays of any length.
 *
 * The hot paths avoid BigInt. A u64 is a pair of int32 halves (hi, lo); 32x32->64 products
 * take the low word from Math.imul and the high word from a double-precision product. BigInt
 * appears only at the API boundary: results are written as lo/hi halves into a
 * BigUint64Array's buffer. Word input is read as little-endian bytes (word i is bytes
 * 4i..4i+3), so token arrays are hashed in place. Everything that depends on the seed (the
 * derived secret of the long class included) is precomputed once per seed and cached.
 */

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
const P64_1_H = 0x9e3779b1 | 0,
  P64_1_L = 0x85ebca87 | 0;
const P64_2_H = 0xc2b2ae3d | 0,
  P64_2_L = 0x27d4eb4f;
const P64_3_H = 0x165667b1,
  P64_3_L = 0x9e3779f9 | 0;
const MX1_H = 0x16566791,
  MX1_L = 0x9e3779f9 | 0;
const MX2_H = 0x9fb21c65 | 0,
  MX2_L = 0x1e98df25;

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
  const uaH = aH >>> 0,
    uaL = aL >>> 0,
    ubH = bH >>> 0,
    ubL = bL >>> 0;
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
let lastCtx: SeedCtx = buildSeedCtx(0n);
seedCache.set(0n, lastCtx);

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
  mul128Fold(
    wd(w, i + 4) ^ keys[k]!,
    wd(w, i) ^ keys[k + 1]!,
    wd(w, i + 12) ^ keys[k + 2]!,
    wd(w, i + 8) ^ keys[k + 3]!,
  );
}

/** Hash bytes off .. off+len of w with len <= 240; result in rH/rL. */
function hashShort(w: Int32Array, off: number, len: number, ctx: SeedCtx): void {
  if (len <= 16) {
    if (len > 8) {
      const f = ctx.bf916;
      const inLoL = wd(w, off) ^ f[1]!,
        inLoH = wd(w, off + 4) ^ f[0]!;
      const inHiL = wd(w, off + len - 8) ^ f[3]!,
        inHiH = wd(w, off + len - 4) ^ f[2]!;
      mul128Fold(inLoH, inLoL, inHiH, inHiL);
      // len + swap64(inLo) + inHi + fold
      const sL = len + (bswap32(inLoH) >>> 0) + (inHiL >>> 0) + (rL >>> 0);
      avalanche((bswap32(inLoL) + inHiH + rH + Math.floor(sL * INV32)) | 0, sL | 0);
    } else if (len >= 4) {
      const f = ctx.bf48;
      rrmxmx(wd(w, off) ^ f[0]!, wd(w, off + len - 4) ^ f[1]!, len);
    } else if (len > 0) {
      const c1 = byteAt(w, off),
        c2 = byteAt(w, off + (len >> 1)),
        c3 = byteAt(w, off + len - 1);
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
  let sH = rH,
    sL = rL >>> 0;
  if (len <= 128) {
    if (len > 32) {
      if (len > 64) {
        if (len > 96) {
          mix16(w, off + 48, keys, 96);
          sH = (sH + rH) | 0;
          sL += rL >>> 0;
          mix16(w, off + len - 64, keys, 112);
          sH = (sH + rH) | 0;
          sL += rL >>> 0;
        }
        mix16(w, off + 32, keys, 64);
        sH = (sH + rH) | 0;
        sL += rL >>> 0;
        mix16(w, off + len - 48, keys, 80);
        sH = (sH + rH) | 0;
        sL += rL >>> 0;
      }
      mix16(w, off + 16, keys, 32);
      sH = (sH + rH) | 0;
      sL += rL >>> 0;
      mix16(w, off + len - 32, keys, 48);
      sH = (sH + rH) | 0;
      sL += rL >>> 0;
    }
    mix16(w, off, keys, 0);
    sH = (sH + rH) | 0;
    sL += rL >>> 0;
    mix16(w, off + len - 16, keys, 16);
    sH = (sH + rH) | 0;
    sL += rL >>> 0;
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
function hashLongWords(
  w: Int32Array,
  base: number,
  len: number,
  lastW: Int32Array,
  lastBase: number,
  ctx: SeedCtx,
): void {
  const keys = ctx.longKeys;
  // Lane v = a_h * 2^32 + a_l, with a_l a running sum of signed lo words (exact as a
  // double) and the sign bits folded into a_h; normalized before scrambles and the merge.
  let a0h = (INIT_ACC[0]! + (INIT_ACC[1]! >>> 31)) | 0,
    a0l = INIT_ACC[1]!;
  let a1h = (INIT_ACC[2]! + (INIT_ACC[3]! >>> 31)) | 0,
    a1l = INIT_ACC[3]!;
  let a2h = (INIT_ACC[4]! + (INIT_ACC[5]! >>> 31)) | 0,
    a2l = INIT_ACC[5]!;
  let a3h = (INIT_ACC[6]! + (INIT_ACC[7]! >>> 31)) | 0,
    a3l = INIT_ACC[7]!;
  let a4h = (INIT_ACC[8]! + (INIT_ACC[9]! >>> 31)) | 0,
    a4l = INIT_ACC[9]!;
  let a5h = (INIT_ACC[10]! + (INIT_ACC[11]! >>> 31)) | 0,
    a5l = INIT_ACC[11]!;
  let a6h = (INIT_ACC[12]! + (INIT_ACC[13]! >>> 31)) | 0,
    a6l = INIT_ACC[13]!;
  let a7h = (INIT_ACC[14]! + (INIT_ACC[15]! >>> 31)) | 0,
    a7l = INIT_ACC[15]!;
  const nbBlocks = Math.floor((len - 1) / 1024);
  const nbStripes = Math.floor((len - 1 - 1024 * nbBlocks) / 64);
  let p = base;
  for (let n = 0; n <= nbBlocks; n++) {
    const full = n < nbBlocks;
    const stripes = full ? 16 : nbStripes + 1;
    for (let s = 0; s < stripes; s++) {
      let src = w,
        q = p,
        key = keys,
        k = 2 * s;
      if (!full && s === nbStripes) {
        src = lastW;
        q = lastBase;
        key = ctx.lastKeys;
        k = 0;
      } else {
        p += 16;
      }
      {
        const dvL = src[q + 0]!,
          dvH = src[q + 1]!;
        const dkL = dvL ^ key[k + 0]!,
          dkH = dvH ^ key[k + 1]!;
        a1h = (a1h + dvH + (dvL >>> 31)) | 0;
        a1l += dvL;
        const pL = Math.imul(dkL, dkH);
        a0h = (a0h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a0l += pL;
      }
      {
        const dvL = src[q + 2]!,
          dvH = src[q + 3]!;
        const dkL = dvL ^ key[k + 2]!,
          dkH = dvH ^ key[k + 3]!;
        a0h = (a0h + dvH + (dvL >>> 31)) | 0;
        a0l += dvL;
        const pL = Math.imul(dkL, dkH);
        a1h = (a1h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a1l += pL;
      }
      {
        const dvL = src[q + 4]!,
          dvH = src[q + 5]!;
        const dkL = dvL ^ key[k + 4]!,
          dkH = dvH ^ key[k + 5]!;
        a3h = (a3h + dvH + (dvL >>> 31)) | 0;
        a3l += dvL;
        const pL = Math.imul(dkL, dkH);
        a2h = (a2h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a2l += pL;
      }
      {
        const dvL = src[q + 6]!,
          dvH = src[q + 7]!;
        const dkL = dvL ^ key[k + 6]!,
          dkH = dvH ^ key[k + 7]!;
        a2h = (a2h + dvH + (dvL >>> 31)) | 0;
        a2l += dvL;
        const pL = Math.imul(dkL, dkH);
        a3h = (a3h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a3l += pL;
      }
      {
        const dvL = src[q + 8]!,
          dvH = src[q + 9]!;
        const dkL = dvL ^ key[k + 8]!,
          dkH = dvH ^ key[k + 9]!;
        a5h = (a5h + dvH + (dvL >>> 31)) | 0;
        a5l += dvL;
        const pL = Math.imul(dkL, dkH);
        a4h = (a4h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a4l += pL;
      }
      {
        const dvL = src[q + 10]!,
          dvH = src[q + 11]!;
        const dkL = dvL ^ key[k + 10]!,
          dkH = dvH ^ key[k + 11]!;
        a4h = (a4h + dvH + (dvL >>> 31)) | 0;
        a4l += dvL;
        const pL = Math.imul(dkL, dkH);
        a5h = (a5h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a5l += pL;
      }
      {
        const dvL = src[q + 12]!,
          dvH = src[q + 13]!;
        const dkL = dvL ^ key[k + 12]!,
          dkH = dvH ^ key[k + 13]!;
        a7h = (a7h + dvH + (dvL >>> 31)) | 0;
        a7l += dvL;
        const pL = Math.imul(dkL, dkH);
        a6h = (a6h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a6l += pL;
      }
      {
        const dvL = src[q + 14]!,
          dvH = src[q + 15]!;
        const dkL = dvL ^ key[k + 14]!,
          dkH = dvH ^ key[k + 15]!;
        a6h = (a6h + dvH + (dvL >>> 31)) | 0;
        a6l += dvL;
        const pL = Math.imul(dkL, dkH);
        a7h = (a7h + mulHi(dkL, dkH, pL) + (pL >>> 31)) | 0;
        a7l += pL;
      }
    }
    if (full) {
      {
        const h = (a0h + Math.floor(a0l * INV32)) | 0,
          l = a0l | 0;
        mul32(l ^ (h >>> 15) ^ keys[32]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[33]!, P32_1)) | 0;
        a0h = (nh + (rL >>> 31)) | 0;
        a0l = rL;
      }
      {
        const h = (a1h + Math.floor(a1l * INV32)) | 0,
          l = a1l | 0;
        mul32(l ^ (h >>> 15) ^ keys[34]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[35]!, P32_1)) | 0;
        a1h = (nh + (rL >>> 31)) | 0;
        a1l = rL;
      }
      {
        const h = (a2h + Math.floor(a2l * INV32)) | 0,
          l = a2l | 0;
        mul32(l ^ (h >>> 15) ^ keys[36]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[37]!, P32_1)) | 0;
        a2h = (nh + (rL >>> 31)) | 0;
        a2l = rL;
      }
      {
        const h = (a3h + Math.floor(a3l * INV32)) | 0,
          l = a3l | 0;
        mul32(l ^ (h >>> 15) ^ keys[38]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[39]!, P32_1)) | 0;
        a3h = (nh + (rL >>> 31)) | 0;
        a3l = rL;
      }
      {
        const h = (a4h + Math.floor(a4l * INV32)) | 0,
          l = a4l | 0;
        mul32(l ^ (h >>> 15) ^ keys[40]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[41]!, P32_1)) | 0;
        a4h = (nh + (rL >>> 31)) | 0;
        a4l = rL;
      }
      {
        const h = (a5h + Math.floor(a5l * INV32)) | 0,
          l = a5l | 0;
        mul32(l ^ (h >>> 15) ^ keys[42]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[43]!, P32_1)) | 0;
        a5h = (nh + (rL >>> 31)) | 0;
        a5l = rL;
      }
      {
        const h = (a6h + Math.floor(a6l * INV32)) | 0,
          l = a6l | 0;
        mul32(l ^ (h >>> 15) ^ keys[44]!, P32_1);
        const nh = (rH + Math.imul(h ^ keys[45]!, P32_1)) | 0;
        a6h = (nh + (rL >>> 31)) | 0;
        a6l = rL;
      }
      {
        const h = (a7h + Math.floor(a7l * INV32)) | 0,
          l = a7l | 0;
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
  let sH = rH,
    sL = rL >>> 0;
  for (let i = 0; i < 4; i++) {
    mul128Fold(
      acc[4 * i]! ^ mk[4 * i + 1]!,
      acc[4 * i + 1]! ^ mk[4 * i]!,
      acc[4 * i + 2]! ^ mk[4 * i + 3]!,
      acc[4 * i + 3]! ^ mk[4 * i + 2]!,
    );
    sH = (sH + rH) | 0;
    sL += rL >>> 0;
  }
  avalanche((sH + Math.floor(sL * INV32)) | 0, sL | 0);
}

// ---------------------------------------------------------------------------------------
// The three ways in: bytes, runs of equal word-aligned chunks, and a chain of u64 pairs

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

/** XXH3 of the first `byteLength` bytes of a little-endian u32 word array. */
export function xxh3_64Words(words: Int32Array, byteLength: number, seed: bigint): bigint {
  hashWords(words, 0, byteLength, seedCtx(seed));
  return toBig(rH, rL);
}

/**
 * out[j] = XXH3 of bytes j·chunkBytes .. (j+1)·chunkBytes of the little-endian u32 word array
 * `words`, for every j < out.length. `chunkBytes` is a positive multiple of 4 and `words`
 * holds at least out.length chunks.
 */
export function xxh3_64Chunks(
  words: Int32Array,
  chunkBytes: number,
  seed: bigint,
  out: BigUint64Array,
): void {
  const n = out.length;
  if (n === 0) return;
  const out32 = new Int32Array(out.buffer, out.byteOffset, 2 * n);
  const ctx = seedCtx(seed);
  if (chunkBytes === 64) {
    hashChunks64(words, n, ctx, out32);
    return;
  }
  const chunkWords = chunkBytes >> 2;
  if (chunkBytes > 240) {
    for (let j = 0; j < n; j++) {
      const base = j * chunkWords;
      hashLongWords(words, base, chunkBytes, words, base + chunkWords - 16, ctx);
      out32[2 * j + LO] = rL;
      out32[2 * j + HI] = rH;
    }
    return;
  }
  for (let j = 0; j < n; j++) {
    hashShort(words, j * chunkBytes, chunkBytes, ctx);
    out32[2 * j + LO] = rL;
    out32[2 * j + HI] = rH;
  }
}

/**
 * 64-byte chunks: the 17–128 class with four mix16B rounds. Input offsets 0, 16, 32, 48 use
 * secret offsets 0, 32, 48, 16.
 */
function hashChunks64(w: Int32Array, n: number, ctx: SeedCtx, out32: Int32Array): void {
  const k = ctx.mixKeys;
  const a0H = k[0]!,
    a0L = k[1]!,
    b0H = k[2]!,
    b0L = k[3]!;
  const a1H = k[128]!,
    a1L = k[129]!,
    b1H = k[130]!,
    b1L = k[131]!;
  const a2H = k[192]!,
    a2L = k[193]!,
    b2H = k[194]!,
    b2L = k[195]!;
  const a3H = k[64]!,
    a3L = k[65]!,
    b3H = k[66]!,
    b3L = k[67]!;
  mul64(0, 64, P64_1_H, P64_1_L);
  const initH = rH,
    initL = rL >>> 0;
  for (let j = 0, t = 0; j < n; j++, t += 16) {
    mul128Fold(w[t + 1]! ^ a0H, w[t]! ^ a0L, w[t + 3]! ^ b0H, w[t + 2]! ^ b0L);
    let sH = (initH + rH) | 0,
      sL = initL + (rL >>> 0);
    mul128Fold(w[t + 5]! ^ a1H, w[t + 4]! ^ a1L, w[t + 7]! ^ b1H, w[t + 6]! ^ b1L);
    sH = (sH + rH) | 0;
    sL += rL >>> 0;
    mul128Fold(w[t + 9]! ^ a2H, w[t + 8]! ^ a2L, w[t + 11]! ^ b2H, w[t + 10]! ^ b2L);
    sH = (sH + rH) | 0;
    sL += rL >>> 0;
    mul128Fold(w[t + 13]! ^ a3H, w[t + 12]! ^ a3L, w[t + 15]! ^ b3H, w[t + 14]! ^ b3L);
    sH = (sH + rH) | 0;
    sL += rL >>> 0;
    avalanche((sH + Math.floor(sL * INV32)) | 0, sL | 0);
    out32[2 * j + LO] = rL;
    out32[2 * j + HI] = rH;
  }
}

/**
 * The running hash over u64 values, into `out` (same length as `values`):
 * out[0] = values[0]; out[i] = XXH3(u64le(out[i−1]) ‖ u64le(values[i]), seed).
 */
export function xxh3_64Chain(values: BigUint64Array, seed: bigint, out: BigUint64Array): void {
  const n = values.length;
  if (out.length !== n)
    throw new RangeError(`xxh3_64Chain: out has ${out.length} slots for ${n} values`);
  if (n === 0) return;
  const in32 = new Int32Array(values.buffer, values.byteOffset, 2 * n);
  const out32 = new Int32Array(out.buffer, out.byteOffset, 2 * n);
  const f = seedCtx(seed).bf916;
  const b1H = f[0]!,
    b1L = f[1]!,
    b2H = f[2]!,
    b2L = f[3]!;
  let pH = in32[HI]!,
    pL = in32[LO]!;
  out32[LO] = pL;
  out32[HI] = pH;
  for (let i = 1; i < n; i++) {
    // The 9–16 byte class with len = 16: inLo = prev ^ bf1, inHi = value ^ bf2.
    const inLoH = pH ^ b1H,
      inLoL = pL ^ b1L;
    const inHiH = in32[2 * i + HI]! ^ b2H,
      inHiL = in32[2 * i + LO]! ^ b2L;
    mul128Fold(inLoH, inLoL, inHiH, inHiL);
    const sL = 16 + (bswap32(inLoH) >>> 0) + (inHiL >>> 0) + (rL >>> 0);
    avalanche((bswap32(inLoL) + inHiH + rH + Math.floor(sL * INV32)) | 0, sL | 0);
    pH = rH;
    pL = rL;
    out32[2 * i + LO] = pL;
    out32[2 * i + HI] = pH;
  }
}
