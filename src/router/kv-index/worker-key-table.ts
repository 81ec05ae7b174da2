/**
 * (worker_id, dp_rank) -> worker slot index, in one flat open-addressing table.
 *
 * Every event names its (worker, dp_rank), and the index finds the slot before anything else.
 * A JS Map keyed by the bigint worker id cost ~300 ns an event once the index was large:
 * hashing a bigint is a call into the runtime, and the map's entries, the bigint keys and the
 * nested per-rank map are separate heap objects, each a cache miss after the index's own
 * traffic has evicted them. Here a lookup hashes two u32 halves and the rank, and reads one
 * or two lines of an Int32Array.
 *
 * Rows are [lo, hi, rank, slot] (int32s; callers pass the u32 halves and the rank, which are
 * compared as int32 bit patterns); slot -1 marks a free row. Linear probing at load <= 1/2,
 * backward-shift deletion. It does not shrink: it is as big as the most slots ever live.
 */
import { mix3 } from "./hash-mix.ts";

const ROW = 4;
const FREE = -1;

export class WorkerKeyTable {
  private rows: Int32Array;
  private mask: number;
  private count = 0;

  constructor() {
    this.rows = new Int32Array(8 * ROW).fill(FREE);
    this.mask = 7;
  }

  get size(): number {
    return this.count;
  }

  /** The slot of (lo, hi, rank), or -1. */
  get(lo: number, hi: number, rank: number): number {
    const r = this.rows;
    const mask = this.mask;
    const l = lo | 0;
    const h = hi | 0;
    const k = rank | 0;
    for (let i = mix3(k, l, h) & mask; ; i = (i + 1) & mask) {
      const p = i * ROW;
      const slot = r[p + 3]!;
      if (slot === FREE) return -1;
      if (r[p] === l && r[p + 1] === h && r[p + 2] === k) return slot;
    }
  }

  /** Add a key that is not in the table. */
  add(lo: number, hi: number, rank: number, slot: number): void {
    if ((this.count + 1) * 2 > this.mask + 1) this.resize((this.mask + 1) * 2);
    insert(this.rows, this.mask, lo | 0, hi | 0, rank | 0, slot);
    this.count++;
  }

  /** Remove the row of (lo, hi, rank) that maps to `slot`; false when there is none. */
  delete(lo: number, hi: number, rank: number, slot: number): boolean {
    const r = this.rows;
    const mask = this.mask;
    const l = lo | 0;
    const h = hi | 0;
    const k = rank | 0;
    let i = mix3(k, l, h) & mask;
    for (;;) {
      const p = i * ROW;
      const s = r[p + 3]!;
      if (s === FREE) return false;
      if (s === slot && r[p] === l && r[p + 1] === h && r[p + 2] === k) break;
      i = (i + 1) & mask;
    }
    // Backward shift: pull later rows of the probe run into the hole (no tombstones).
    let hole = i;
    for (let j = (i + 1) & mask; r[j * ROW + 3] !== FREE; j = (j + 1) & mask) {
      const q = j * ROW;
      const home = mix3(r[q + 2]!, r[q]!, r[q + 1]!) & mask;
      const stays = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (!stays) {
        r.copyWithin(hole * ROW, q, q + ROW);
        hole = j;
      }
    }
    r[hole * ROW + 3] = FREE;
    this.count--;
    return true;
  }

  private resize(cap: number): void {
    const old = this.rows;
    this.rows = new Int32Array(cap * ROW).fill(FREE);
    this.mask = cap - 1;
    for (let p = 0; p < old.length; p += ROW)
      if (old[p + 3] !== FREE)
        insert(this.rows, this.mask, old[p]!, old[p + 1]!, old[p + 2]!, old[p + 3]!);
  }
}

function insert(
  r: Int32Array,
  mask: number,
  l: number,
  h: number,
  rank: number,
  slot: number,
): void {
  let i = mix3(rank, l, h) & mask;
  while (r[i * ROW + 3] !== FREE) i = (i + 1) & mask;
  const p = i * ROW;
  r[p] = l;
  r[p + 1] = h;
  r[p + 2] = rank;
  r[p + 3] = slot;
}
