/**
 * Open-addressing map from a u64 key (two u32 halves) to a non-negative int32, laid out in
 * buckets of one 64-byte cache line: a meta word and five [lo, hi, value] entries.
 *
 * One per (worker, dp_rank): engine block hash -> tree node. Every stored or removed block
 * does one insert or delete here at a random key, in a table far bigger than the cache once
 * the index holds millions of blocks, so what an operation costs is how many lines it reads.
 * A flat table of 12-byte slots with linear probing (U64Map) read ~2 lines per operation at
 * its usual load: probe runs cross line boundaries, and a delete's backward shift walks the
 * rest of the run, re-hashing each key it passes (half of a delete's time at 10 M blocks).
 * Here a key lives in its home bucket unless that one is full (at the highest load ~1 in 7
 * buckets is), an operation reads one line, and a delete moves at most one entry, inside the
 * bucket, without hashing anything.
 *
 * Overflow (as Folly's F14 does it): a key that finds its home bucket full goes to the next
 * bucket with room, and every full bucket it passed counts it in its meta word's overflow
 * count. A lookup stops at the first bucket that lacks the key and has overflow 0; a delete
 * takes its key's count back from the buckets it passed. No tombstones, so churn does not
 * slow lookups. Entries of a bucket are packed (0 .. count-1).
 *
 * Memory: 12.8 bytes a slot. It grows at load 0.7 (to 0.35) and shrinks when an eighth full,
 * so it follows the live entries: ~25 bytes an entry on average. Growing at 0.8 instead saved
 * ~3 bytes an entry and cost ~8 % more per stored block and ~12 % per removed one at 1,024
 * workers x 10 M blocks (more keys off their home line).
 */
import { mix3, pow2AtLeast } from "./hash-mix.ts";

/** Grow when count > capacity * MAX_LOAD_TENTHS / 10. */
const MAX_LOAD_TENTHS = 7;
/** Int32s per bucket: a meta word + ENTRIES x [lo, hi, value]. 64 bytes. */
const BUCKET = 16;
const LOG_BUCKET = 4;
const ENTRIES = 5;
/** meta = count (low byte) | overflow << 8. */
const COUNT_MASK = 0xff;
const OVERFLOW_ONE = 0x100;
const MIN_BUCKETS = 2;

export class U64BucketMap {
  /** The buckets; replaced on resize. */
  private table: Int32Array;
  private mask: number;
  private count = 0;

  constructor(expected = 0) {
    const buckets = pow2AtLeast(
      Math.max(MIN_BUCKETS, Math.ceil((expected * 10) / (ENTRIES * MAX_LOAD_TENTHS))),
    );
    this.table = new Int32Array(buckets * BUCKET);
    this.mask = buckets - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Entries the table has room for at full buckets (for memory accounting and tests). */
  get capacity(): number {
    return (this.mask + 1) * ENTRIES;
  }

  /** Bytes held. */
  bytes(): number {
    return this.table.byteLength;
  }

  /** Index into `raw` of the bucket where the key's lookup starts (to pre-load its line). */
  home(lo: number, hi: number): number {
    return (mix3(0, lo | 0, hi | 0) & this.mask) << LOG_BUCKET;
  }

  /** The raw table (read it only to pre-load lines; it is replaced on resize). */
  get raw(): Int32Array {
    return this.table;
  }

  /** The value for (lo, hi), or -1. */
  get(lo: number, hi: number): number {
    const l = lo | 0;
    const h = hi | 0;
    const p = this.find(l, h, mix3(0, l, h) & this.mask);
    return p < 0 ? -1 : this.table[p + 2]!;
  }

  /** Insert or overwrite; value must be >= 0. Returns the previous value, or -1. */
  set(lo: number, hi: number, value: number): number {
    const l = lo | 0;
    const h = hi | 0;
    const t = this.table;
    const mask = this.mask;
    const home = mix3(0, l, h) & mask;
    // One walk looks for the key and notes the first bucket with room (usually home itself).
    let room = -1;
    for (let b = home; ; b = (b + 1) & mask) {
      const base = b << LOG_BUCKET;
      const meta = t[base]!;
      const c = meta & COUNT_MASK;
      const end = base + 1 + 3 * c;
      for (let p = base + 1; p < end; p += 3) {
        if (t[p] === l && t[p + 1] === h) {
          const old = t[p + 2]!;
          t[p + 2] = value;
          return old;
        }
      }
      if (room < 0 && c < ENTRIES) room = b;
      if (meta >>> 8 === 0) break;
    }
    this.count++;
    if (this.count * 10 > this.capacity * MAX_LOAD_TENTHS) {
      this.resize((mask + 1) * 2);
      place(this.table, this.mask, mix3(0, l, h) & this.mask, l, h, value);
    } else if (room === home) {
      const base = home << LOG_BUCKET;
      const p = base + 1 + 3 * (t[base]! & COUNT_MASK);
      t[p] = l;
      t[p + 1] = h;
      t[p + 2] = value;
      t[base]!++;
    } else {
      place(t, mask, home, l, h, value);
    }
    return -1;
  }

  /** Remove (lo, hi); returns its value, or -1 when absent. */
  delete(lo: number, hi: number): number {
    const l = lo | 0;
    const h = hi | 0;
    const mask = this.mask;
    const home = mix3(0, l, h) & mask;
    const p = this.find(l, h, home);
    if (p < 0) return -1;
    const t = this.table;
    const old = t[p + 2]!;
    // Keep the bucket packed: its last entry fills the hole.
    const base = p & ~(BUCKET - 1);
    const last = base + 1 + 3 * ((t[base]! & COUNT_MASK) - 1);
    t[p] = t[last]!;
    t[p + 1] = t[last + 1]!;
    t[p + 2] = t[last + 2]!;
    t[base]!--;
    // The buckets this key overflowed past stop counting it.
    const at = base >>> LOG_BUCKET;
    for (let b = home; b !== at; b = (b + 1) & mask) t[b << LOG_BUCKET]! -= OVERFLOW_ONE;
    this.count--;
    const buckets = mask + 1;
    if (buckets > MIN_BUCKETS && this.count * 8 < this.capacity) this.resize(buckets / 2);
    return old;
  }

  /** Calls fn for every entry. fn must not modify the map. */
  forEach(fn: (lo: number, hi: number, value: number) => void): void {
    const t = this.table;
    for (let base = 0; base < t.length; base += BUCKET) {
      const end = base + 1 + 3 * (t[base]! & COUNT_MASK);
      for (let p = base + 1; p < end; p += 3) fn(t[p]! >>> 0, t[p + 1]! >>> 0, t[p + 2]!);
    }
  }

  /** Replace every value v by `remap[v]` (the values are ids that were renumbered). Keys stay. */
  remapValues(remap: Int32Array): void {
    const t = this.table;
    for (let base = 0; base < t.length; base += BUCKET) {
      const end = base + 1 + 3 * (t[base]! & COUNT_MASK);
      for (let p = base + 3; p < end; p += 3) t[p] = remap[t[p]!]!;
    }
  }

  /** Every value (one per entry, duplicates kept), in table order. */
  values(): Int32Array {
    const out = new Int32Array(this.count);
    const t = this.table;
    let k = 0;
    for (let base = 0; base < t.length; base += BUCKET) {
      const end = base + 1 + 3 * (t[base]! & COUNT_MASK);
      for (let p = base + 3; p < end; p += 3) out[k++] = t[p]!;
    }
    return out;
  }

  /** Index in `table` of the key's entry, or -1; `home` is its home bucket. */
  private find(l: number, h: number, home: number): number {
    const t = this.table;
    const mask = this.mask;
    for (let b = home; ; b = (b + 1) & mask) {
      const base = b << LOG_BUCKET;
      const meta = t[base]!;
      const end = base + 1 + 3 * (meta & COUNT_MASK);
      for (let p = base + 1; p < end; p += 3) if (t[p] === l && t[p + 1] === h) return p;
      if (meta >>> 8 === 0) return -1;
    }
  }

  private resize(buckets: number): void {
    const old = this.table;
    const t = new Int32Array(buckets * BUCKET);
    const mask = buckets - 1;
    for (let base = 0; base < old.length; base += BUCKET) {
      const end = base + 1 + 3 * (old[base]! & COUNT_MASK);
      for (let p = base + 1; p < end; p += 3)
        place(t, mask, mix3(0, old[p]!, old[p + 1]!) & mask, old[p]!, old[p + 1]!, old[p + 2]!);
    }
    this.table = t;
    this.mask = mask;
  }
}

/** Put an absent key in the first bucket with room from its home, counting it in the full ones passed. */
function place(
  t: Int32Array,
  mask: number,
  home: number,
  l: number,
  h: number,
  value: number,
): void {
  for (let b = home; ; b = (b + 1) & mask) {
    const base = b << LOG_BUCKET;
    const c = t[base]! & COUNT_MASK;
    if (c < ENTRIES) {
      const p = base + 1 + 3 * c;
      t[p] = l;
      t[p + 1] = h;
      t[p + 2] = value;
      t[base]!++;
      return;
    }
    t[base]! += OVERFLOW_ONE;
  }
}
