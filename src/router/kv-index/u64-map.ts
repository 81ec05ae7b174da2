/**
 * Open-addressing map from a u64 key (given as two u32 halves) to a non-negative int32.
 *
 * One per (worker, dp_rank): engine block hash -> tree node. A JS Map keyed by bigint costs
 * ~100 bytes and a bigint hash per entry; this costs 12 bytes per slot (load 0.375–0.75) and
 * no allocation. Linear probing with backward-shift deletion, so there are no tombstones and
 * churn does not degrade probes; the table shrinks when it empties so memory follows size.
 */
import { mix3, pow2AtLeast } from "./hash-mix.ts";

const EMPTY = -1;
const MIN_CAPACITY = 8;

export class U64Map {
  /** [lo, hi, value] per slot; value EMPTY marks a free slot. */
  private slots: Int32Array;
  private mask: number;
  private count = 0;

  constructor(expected = 0) {
    const cap = pow2AtLeast(Math.max(MIN_CAPACITY, Math.ceil(expected / 0.75) + 1));
    this.slots = new Int32Array(cap * 3).fill(EMPTY);
    this.mask = cap - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Slots allocated (for memory accounting). */
  get capacity(): number {
    return this.mask + 1;
  }

  /** Index into the slot array where the probe for (lo, hi) starts (for pre-loading). */
  home(lo: number, hi: number): number {
    return (mix3(0, lo, hi) & this.mask) * 3;
  }

  /** The raw slot array (read it only to pre-load lines; it is replaced on resize). */
  get raw(): Int32Array {
    return this.slots;
  }

  /** The value for (lo, hi), or -1. */
  get(lo: number, hi: number): number {
    const i = this.slotOf(lo, hi);
    return i < 0 ? -1 : this.slots[i * 3 + 2]!;
  }

  /** The slot holding (lo, hi), or -1: the one probe loop that get and delete share. */
  private slotOf(lo: number, hi: number): number {
    const s = this.slots;
    const mask = this.mask;
    const l = lo | 0;
    const h = hi | 0;
    let i = mix3(0, l, h) & mask;
    for (;;) {
      const p = i * 3;
      if (s[p + 2] === EMPTY) return -1;
      if (s[p] === l && s[p + 1] === h) return i;
      i = (i + 1) & mask;
    }
  }

  /** Insert or overwrite; value must be >= 0. Returns the previous value, or -1. */
  set(lo: number, hi: number, value: number): number {
    if ((this.count + 1) * 4 > (this.mask + 1) * 3) this.resize((this.mask + 1) * 2);
    const s = this.slots;
    const l = lo | 0;
    const h = hi | 0;
    let i = mix3(0, l, h) & this.mask;
    for (;;) {
      const p = i * 3;
      if (s[p + 2] === EMPTY) {
        s[p] = l;
        s[p + 1] = h;
        s[p + 2] = value;
        this.count++;
        return -1;
      }
      if (s[p] === l && s[p + 1] === h) {
        const old = s[p + 2]!;
        s[p + 2] = value;
        return old;
      }
      i = (i + 1) & this.mask;
    }
  }

  /** Remove (lo, hi); returns its value, or -1 when absent. */
  delete(lo: number, hi: number): number {
    const i = this.slotOf(lo, hi);
    if (i < 0) return -1;
    const s = this.slots;
    const mask = this.mask;
    const old = s[i * 3 + 2]!;
    // Backward-shift: pull later members of the probe run into the hole.
    let hole = i;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const q = j * 3;
      if (s[q + 2] === EMPTY) break;
      const home = mix3(0, s[q]!, s[q + 1]!) & mask;
      // Move j into the hole when its home is not in the cyclic range (hole, j].
      const inRange = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (!inRange) {
        const d = hole * 3;
        s[d] = s[q]!;
        s[d + 1] = s[q + 1]!;
        s[d + 2] = s[q + 2]!;
        hole = j;
      }
    }
    s[hole * 3 + 2] = EMPTY;
    this.count--;
    const cap = mask + 1;
    if (cap > MIN_CAPACITY && this.count * 8 < cap) this.resize(cap / 2);
    return old;
  }

  /** Calls fn for every entry. fn must not modify the map. */
  forEach(fn: (lo: number, hi: number, value: number) => void): void {
    const s = this.slots;
    for (let p = 0; p < s.length; p += 3) {
      const v = s[p + 2]!;
      if (v !== EMPTY) fn(s[p]! >>> 0, s[p + 1]! >>> 0, v);
    }
  }

  /** Replace every value v by `remap[v]` (the values are ids that were renumbered). Keys stay. */
  remapValues(remap: Int32Array): void {
    const s = this.slots;
    for (let p = 2; p < s.length; p += 3) if (s[p] !== EMPTY) s[p] = remap[s[p]!]!;
  }

  /** Every value (one per entry, duplicates kept), in slot order. */
  values(): Int32Array {
    const out = new Int32Array(this.count);
    const s = this.slots;
    let k = 0;
    for (let p = 2; p < s.length; p += 3) if (s[p] !== EMPTY) out[k++] = s[p]!;
    return out;
  }

  private resize(cap: number): void {
    const old = this.slots;
    this.slots = new Int32Array(cap * 3).fill(EMPTY);
    this.mask = cap - 1;
    const s = this.slots;
    const mask = this.mask;
    for (let p = 0; p < old.length; p += 3) {
      if (old[p + 2] === EMPTY) continue;
      let i = mix3(0, old[p]!, old[p + 1]!) & mask;
      while (s[i * 3 + 2] !== EMPTY) i = (i + 1) & mask;
      const d = i * 3;
      s[d] = old[p]!;
      s[d + 1] = old[p + 1]!;
      s[d + 2] = old[p + 2]!;
    }
  }
}
