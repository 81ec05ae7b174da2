/**
 * An open-addressing hash table from a 64-bit key to a non-negative int32 value, with the
 * key given as two u32 halves. Sequence hashes arrive as a BigUint64Array; reading them
 * through a Uint32Array view of the same buffer gives both halves as plain numbers, so the
 * hot loops never materialise a bigint nor hash one (a `Map<bigint, …>` lookup costs
 * ~10x more, and the scheduler does one per prompt block per request).
 *
 * Buckets are interleaved [lo, hi, value, aux] so a probe touches one cache line: with a
 * million blocks the table outgrows the CPU caches and memory latency is the whole cost.
 * `aux` is a second int32 the owner may keep next to the value (0 on insert), read and
 * written through a bucket position from find(); positions stay valid until the next
 * set() or delete().
 * Linear probing with backward-shift deletion (no tombstones), load factor ≤ 1/2; the table
 * halves when it falls under 1/8, so a peak of booked blocks is not kept once they are freed.
 */
const EMPTY = -1;
const MIN_CAPACITY = 16;

export class Hash64Table {
  /** 4 int32 per bucket: lo, hi, value (EMPTY = free), aux. */
  #b: Int32Array;
  #mask: number;
  /** 32 − log2(capacity): Fibonacci hashing keeps the top bits. */
  #shift: number;
  #size = 0;

  constructor(initialCapacity = MIN_CAPACITY) {
    let cap = MIN_CAPACITY;
    while (cap < initialCapacity * 2) cap *= 2;
    this.#b = emptyBuckets(cap);
    this.#mask = cap - 1;
    this.#shift = 32 - Math.log2(cap);
  }

  get size(): number {
    return this.#size;
  }

  #home(lo: number, hi: number): number {
    // A multiplicative hash of both halves; it also spreads small test keys.
    return Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> this.#shift;
  }

  /** The value stored for the key, or -1. */
  get(lo: number, hi: number): number {
    const pos = this.find(lo, hi);
    return pos === EMPTY ? EMPTY : this.#b[(pos << 2) + 2]!;
  }

  /** The bucket position of the key, or -1. */
  find(lo: number, hi: number): number {
    const b = this.#b;
    const mask = this.#mask;
    lo |= 0;
    hi |= 0;
    let i = this.#home(lo, hi);
    for (;;) {
      const at = i << 2;
      if (b[at + 2] === EMPTY) return EMPTY;
      if (b[at] === lo && b[at + 1] === hi) return i;
      i = (i + 1) & mask;
    }
  }

  valueAt(pos: number): number {
    return this.#b[(pos << 2) + 2]!;
  }

  auxAt(pos: number): number {
    return this.#b[(pos << 2) + 3]!;
  }

  setAuxAt(pos: number, aux: number): void {
    this.#b[(pos << 2) + 3] = aux;
  }

  /** Insert (aux 0) or overwrite the value (aux kept). `value` must be ≥ 0. Returns the bucket position. */
  set(lo: number, hi: number, value: number): number {
    const pos = this.findOrInsert(lo, hi, value);
    if (pos < 0) return ~pos;
    this.#b[(pos << 2) + 2] = value;
    return pos;
  }

  /**
   * Find the key, or insert it with `value` (aux 0) when absent. Returns the bucket
   * position when it was present, ~position (negative) when it was just inserted.
   */
  findOrInsert(lo: number, hi: number, value: number): number {
    if ((this.#size + 1) * 2 > this.#mask + 1) this.#resize((this.#mask + 1) * 2);
    const b = this.#b;
    const mask = this.#mask;
    lo |= 0;
    hi |= 0;
    let i = this.#home(lo, hi);
    for (;;) {
      const at = i << 2;
      if (b[at + 2] === EMPTY) {
        b[at] = lo;
        b[at + 1] = hi;
        b[at + 2] = value;
        b[at + 3] = 0;
        this.#size++;
        return ~i;
      }
      if (b[at] === lo && b[at + 1] === hi) return i;
      i = (i + 1) & mask;
    }
  }

  /** Remove the key; returns whether it was present. */
  delete(lo: number, hi: number): boolean {
    const i = this.find(lo, hi);
    if (i === EMPTY) return false;
    const b = this.#b;
    const mask = this.#mask;
    // Backward shift: pull later members of the probe run into the hole when their home
    // does not lie cyclically in (hole, j].
    let hole = i;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const at = j << 2;
      if (b[at + 2] === EMPTY) break;
      const home = this.#home(b[at]!, b[at + 1]!);
      const stays = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (stays) continue;
      const to = hole << 2;
      b[to] = b[at]!;
      b[to + 1] = b[at + 1]!;
      b[to + 2] = b[at + 2]!;
      b[to + 3] = b[at + 3]!;
      hole = j;
    }
    this.#b[(hole << 2) + 2] = EMPTY;
    this.#size--;
    const cap = this.#mask + 1;
    if (cap > MIN_CAPACITY && this.#size * 8 < cap) this.#resize(cap / 2);
    return true;
  }

  #resize(cap: number): void {
    const old = this.#b;
    this.#b = emptyBuckets(cap);
    this.#mask = cap - 1;
    this.#shift = 32 - Math.log2(cap);
    this.#size = 0;
    const b = this.#b;
    const mask = this.#mask;
    for (let at = 0; at < old.length; at += 4) {
      if (old[at + 2] === EMPTY) continue;
      let i = this.#home(old[at]!, old[at + 1]!);
      while (b[(i << 2) + 2] !== EMPTY) i = (i + 1) & mask;
      b.set(old.subarray(at, at + 4), i << 2);
      this.#size++;
    }
  }
}

function emptyBuckets(cap: number): Int32Array {
  const b = new Int32Array(cap * 4);
  for (let at = 2; at < b.length; at += 4) b[at] = EMPTY;
  return b;
}

/** A u32 view of a BigUint64Array's buffer: element i is halves [2i] (low) and [2i+1] (high). */
export function u32Halves(hashes: BigUint64Array): Uint32Array {
  // Every JavaScript engine in use is little-endian, so the low half comes first.
  return new Uint32Array(hashes.buffer, hashes.byteOffset, hashes.length * 2);
}
