/**
 * An open-addressing hash table from a 64-bit key to a non-negative int32 value, with the
 * key given as two u32 halves. Sequence hashes arrive as a BigUint64Array; reading them
 * through a Uint32Array view of the same buffer gives both halves as plain numbers, so the
 * hot loops never materialise a bigint nor hash one (a `Map<bigint, …>` lookup costs
 * ~10x more, and the scheduler does one per prompt block per request).
 *
 * Linear probing with backward-shift deletion (no tombstones), load factor ≤ 1/2.
 */
const EMPTY = -1;
const MIN_CAPACITY = 16;

export class Hash64Table {
  #lo: Uint32Array;
  #hi: Uint32Array;
  /** The stored value, or EMPTY for a free bucket. */
  #val: Int32Array;
  #mask: number;
  /** 32 − log2(capacity): Fibonacci hashing keeps the top bits. */
  #shift: number;
  #size = 0;

  constructor(initialCapacity = MIN_CAPACITY) {
    let cap = MIN_CAPACITY;
    while (cap < initialCapacity * 2) cap *= 2;
    this.#lo = new Uint32Array(cap);
    this.#hi = new Uint32Array(cap);
    this.#val = new Int32Array(cap).fill(EMPTY);
    this.#mask = cap - 1;
    this.#shift = 32 - Math.log2(cap);
  }

  get size(): number {
    return this.#size;
  }

  #home(lo: number, hi: number): number {
    // Math.imul then >>> shift: a multiplicative hash that also spreads small test keys.
    return Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> this.#shift;
  }

  /** The value stored for the key, or -1. */
  get(lo: number, hi: number): number {
    const val = this.#val;
    const los = this.#lo;
    const his = this.#hi;
    const mask = this.#mask;
    let i = this.#home(lo, hi);
    for (;;) {
      const v = val[i]!;
      if (v === EMPTY) return EMPTY;
      if (los[i] === lo && his[i] === hi) return v;
      i = (i + 1) & mask;
    }
  }

  /** Insert or overwrite. `value` must be ≥ 0. */
  set(lo: number, hi: number, value: number): void {
    if ((this.#size + 1) * 2 > this.#val.length) this.#grow();
    const mask = this.#mask;
    let i = this.#home(lo, hi);
    for (;;) {
      const v = this.#val[i]!;
      if (v === EMPTY) {
        this.#lo[i] = lo;
        this.#hi[i] = hi;
        this.#val[i] = value;
        this.#size++;
        return;
      }
      if (this.#lo[i] === lo && this.#hi[i] === hi) {
        this.#val[i] = value;
        return;
      }
      i = (i + 1) & mask;
    }
  }

  /** Remove the key; returns whether it was present. */
  delete(lo: number, hi: number): boolean {
    const mask = this.#mask;
    let i = this.#home(lo, hi);
    for (;;) {
      const v = this.#val[i]!;
      if (v === EMPTY) return false;
      if (this.#lo[i] === lo && this.#hi[i] === hi) break;
      i = (i + 1) & mask;
    }
    // Backward shift: pull later members of the probe run into the hole when their home
    // does not lie cyclically in (hole, j].
    let hole = i;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const v = this.#val[j]!;
      if (v === EMPTY) break;
      const home = this.#home(this.#lo[j]!, this.#hi[j]!);
      const stays = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (stays) continue;
      this.#lo[hole] = this.#lo[j]!;
      this.#hi[hole] = this.#hi[j]!;
      this.#val[hole] = v;
      hole = j;
    }
    this.#val[hole] = EMPTY;
    this.#size--;
    return true;
  }

  #grow(): void {
    const lo = this.#lo;
    const hi = this.#hi;
    const val = this.#val;
    const cap = val.length * 2;
    this.#lo = new Uint32Array(cap);
    this.#hi = new Uint32Array(cap);
    this.#val = new Int32Array(cap).fill(EMPTY);
    this.#mask = cap - 1;
    this.#shift = 32 - Math.log2(cap);
    this.#size = 0;
    for (let i = 0; i < val.length; i++) if (val[i] !== EMPTY) this.set(lo[i]!, hi[i]!, val[i]!);
  }
}

/** A u32 view of a BigUint64Array's buffer: element i is halves [2i] (low) and [2i+1] (high). */
export function u32Halves(hashes: BigUint64Array): Uint32Array {
  // Every JavaScript engine in use is little-endian, so the low half comes first.
  return new Uint32Array(hashes.buffer, hashes.byteOffset, hashes.length * 2);
}
