/**
 * One open-addressing table keyed by a u64 (two u32 halves, plus an optional third int32 key
 * column), with a row width parameter: each row is `width` int32s
 * [lo, hi, (k2,) value, extra…]. Issue 10 asked for it in place of the three hand-written
 * tables (indexer/u64-map.ts: width 3; indexer/child-table.ts: width 4 keyed by (path, parent);
 * scheduler/hash64-table.ts: width 4 with an aux column); bench/micro/u64-tables.ts measures it
 * against them. It lost on the inserts and deletes the index lives on (see
 * src/router/kv-index/README.md), so the three stay and this one lives here, as the bench's
 * comparison, not in src/.
 *
 * Linear probing from mix3(0, lo, hi) (the home ignores k2, so callers can pre-load a row from
 * the u64 alone), backward-shift deletion (no tombstones), load ≤ 3/4, shrinks below 1/8.
 * The value column holds values ≥ 0; -1 marks a free row. Pure; no allocation per operation.
 */
import { mix3 } from "../../src/router/kv-index/hash-mix.ts";

const EMPTY = -1;
const MIN_CAPACITY = 8;

export interface U64TableShape {
  /** int32 columns per row (≥ keyColumns + 1). */
  readonly width: number;
  /** 2: the key is (lo, hi); 3: (lo, hi, k2). The value column comes right after the key. */
  readonly keyColumns: 2 | 3;
}

export class U64Table {
  private rows: Int32Array;
  private mask: number;
  private count = 0;
  private readonly w: number;
  private readonly kc: number;

  constructor(shape: U64TableShape, expected = 0) {
    if (!Number.isInteger(shape.width) || shape.width < shape.keyColumns + 1)
      throw new RangeError(`width ${shape.width} leaves no value column`);
    this.w = shape.width;
    this.kc = shape.keyColumns;
    let cap = MIN_CAPACITY;
    while (cap < Math.ceil(expected / 0.75) + 1) cap *= 2;
    this.rows = this.emptyRows(cap);
    this.mask = cap - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Rows allocated (for memory accounting). */
  get capacity(): number {
    return this.mask + 1;
  }

  /** The raw row array (read it only to pre-load lines; it is replaced on resize). */
  get raw(): Int32Array {
    return this.rows;
  }

  /** Index into `raw` where the probe for (lo, hi) starts. */
  home(lo: number, hi: number): number {
    return (mix3(0, lo | 0, hi | 0) & this.mask) * this.w;
  }

  /** Offset in `raw` of the key's row, or -1. Valid until the next set or delete. */
  find(lo: number, hi: number, k2 = 0): number {
    const s = this.rows;
    const w = this.w;
    const v = this.kc;
    const mask = this.mask;
    const l = lo | 0;
    const h = hi | 0;
    let i = mix3(0, l, h) & mask;
    for (;;) {
      const p = i * w;
      if (s[p + v] === EMPTY) return -1;
      if (s[p] === l && s[p + 1] === h && (v === 2 || s[p + 2] === k2)) return p;
      i = (i + 1) & mask;
    }
  }

  /** The value for the key, or -1. */
  get(lo: number, hi: number, k2 = 0): number {
    const p = this.find(lo, hi, k2);
    return p < 0 ? -1 : this.rows[p + this.kc]!;
  }

  /** Column `col` of the row at offset `p` (from find / insert). */
  at(p: number, col: number): number {
    return this.rows[p + col]!;
  }

  setAt(p: number, col: number, value: number): void {
    this.rows[p + col] = value;
  }

  /**
   * Insert or overwrite the value (value ≥ 0; extra columns of a new row are 0, of an old row
   * kept). Returns the previous value, or -1 when the key was new.
   */
  set(lo: number, hi: number, k2: number, value: number): number {
    const p = this.findOrInsert(lo, hi, k2, value);
    if (p < 0) return -1;
    const old = this.rows[p + this.kc]!;
    this.rows[p + this.kc] = value;
    return old;
  }

  /** Offset of the key's row when present; ~offset (negative) after inserting it with `value`. */
  findOrInsert(lo: number, hi: number, k2: number, value: number): number {
    if ((this.count + 1) * 4 > (this.mask + 1) * 3) this.resize((this.mask + 1) * 2);
    const s = this.rows;
    const w = this.w;
    const v = this.kc;
    const mask = this.mask;
    const l = lo | 0;
    const h = hi | 0;
    let i = mix3(0, l, h) & mask;
    for (;;) {
      const p = i * w;
      if (s[p + v] === EMPTY) {
        s[p] = l;
        s[p + 1] = h;
        if (v === 3) s[p + 2] = k2;
        s[p + v] = value;
        for (let c = v + 1; c < w; c++) s[p + c] = 0;
        this.count++;
        return ~p;
      }
      if (s[p] === l && s[p + 1] === h && (v === 2 || s[p + 2] === k2)) return p;
      i = (i + 1) & mask;
    }
  }

  /** Remove the key; returns its value, or -1 when absent. */
  delete(lo: number, hi: number, k2 = 0): number {
    const found = this.find(lo, hi, k2);
    if (found < 0) return -1;
    const s = this.rows;
    const w = this.w;
    const v = this.kc;
    const mask = this.mask;
    const old = s[found + v]!;
    // Backward shift: pull later members of the probe run into the hole when their home
    // does not lie cyclically in (hole, j].
    let hole = found / w;
    let j = hole;
    for (;;) {
      j = (j + 1) & mask;
      const q = j * w;
      if (s[q + v] === EMPTY) break;
      const home = mix3(0, s[q]!, s[q + 1]!) & mask;
      const stays = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (stays) continue;
      const d = hole * w;
      for (let c = 0; c < w; c++) s[d + c] = s[q + c]!;
      hole = j;
    }
    s[hole * w + v] = EMPTY;
    this.count--;
    const cap = mask + 1;
    if (cap > MIN_CAPACITY && this.count * 8 < cap) this.resize(cap / 2);
    return old;
  }

  /** Calls fn for every row (lo, hi as u32, the row offset). fn must not modify the table. */
  forEach(fn: (lo: number, hi: number, p: number) => void): void {
    const s = this.rows;
    for (let p = 0; p < s.length; p += this.w)
      if (s[p + this.kc] !== EMPTY) fn(s[p]! >>> 0, s[p + 1]! >>> 0, p);
  }

  private emptyRows(cap: number): Int32Array {
    const rows = new Int32Array(cap * this.w);
    for (let p = this.kc; p < rows.length; p += this.w) rows[p] = EMPTY;
    return rows;
  }

  private resize(cap: number): void {
    const old = this.rows;
    const w = this.w;
    const v = this.kc;
    this.rows = this.emptyRows(cap);
    this.mask = cap - 1;
    const s = this.rows;
    const mask = this.mask;
    for (let p = 0; p < old.length; p += w) {
      if (old[p + v] === EMPTY) continue;
      let i = mix3(0, old[p]!, old[p + 1]!) & mask;
      while (s[i * w + v] !== EMPTY) i = (i + 1) & mask;
      const d = i * w;
      for (let c = 0; c < w; c++) s[d + c] = old[p + c]!;
    }
  }
}
