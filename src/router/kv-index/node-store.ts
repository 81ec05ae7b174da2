/**
 * The nodes of the radix tree: one interleaved Int32Array record per node, with a free list.
 *
 * A node is an int id; its record is STRIDE int32s at rec[id * STRIDE]:
 *   PARENT, PATH_LO, PATH_HI (path hash, see path-hash.ts), CHILDREN (count), CHILD0 (first
 *   child, or -1), HOLDERS (count of worker slots holding it; -1 marks a free id), SOLE (the
 *   slot when one or two hold it, else -1), ROW (with two holders the second one inline, as
 *   -(slot + 2); a bitset row in `rows` when three or more do; else -1).
 * Two holders are common and need no row: an engine's GPU and its CPU tier (two slots, see
 * worker-slots.ts), or a prefix on two engines. A row is as wide as the slots in use (256 B at
 * 2,048 slots), so a pair in a row cost several times the record.
 * Most nodes have exactly one child, kept in CHILD0, so a chain needs no edge-table entry;
 * a chain stored by one event gets consecutive ids, so walking it reads memory in order; and
 * everything a lookup step needs about a node sits in one 32-byte record, i.e. half a cache
 * line. No per-node object for the GC to trace.
 *
 * Memory follows what is live, whatever the number of workers: a record is 32 bytes (a
 * bitset in every record cost 280 bytes per node with 2,000 workers registered, and kept that
 * width after they left); only nodes held by several workers take a row, as wide as the
 * worker slots in use; and `compact()` renumbers the nodes densely once most ids are free
 * (the tree then remaps its edges and lookups), so a peak of nodes is not kept for ever.
 *
 * Node 0 is the root. Free ids wait on a stack of their own (an Int32Array), not linked through
 * their records: popping a linked list reads the freed record to find the next one, so a chain
 * of allocations was a chain of dependent cache misses. The array is replaced when it grows
 * or compacts: never cache `rec` across an alloc() or a compact().
 */
import { HolderRows } from "../holder-rows.ts";
import { ROOT_PATH_HI, ROOT_PATH_LO } from "./path-hash.ts";

export const ROOT = 0;
export const PARENT = 0;
export const PATH_LO = 1;
export const PATH_HI = 2;
export const CHILDREN = 3;
export const CHILD0 = 4;
export const HOLDERS = 5;
/** The only holder's slot (HOLDERS = 1), else -1. */
export const SOLE = 6;
/** The holders' bitset row in `rows` (HOLDERS >= 2), else -1. */
export const ROW = 7;
/** Int32s per record. */
export const STRIDE = 8;

/** The second holder of a two-holder node, from its ROW field. */
export function pairSecond(row: number): number {
  return -row - 2;
}

const INITIAL_CAPACITY = 1024;
const INITIAL_FREE = 64;
/** Below this many records a store is never worth compacting. */
const COMPACT_MIN_CAPACITY = 64 * 1024;

export class NodeStore {
  rec!: Int32Array;
  /** Int32s per record (STRIDE; a field so hot loops read it like before). */
  readonly stride = STRIDE;
  /** Holder bitsets of the nodes several worker slots hold. */
  readonly rows = new HolderRows();
  /** Live nodes besides the root. */
  live = 0;

  private capacity = 0;
  private nextUnused = 1;
  /** Free ids: freeIds[0 .. freeTop). */
  private freeIds = new Int32Array(INITIAL_FREE);
  private freeTop = 0;

  constructor() {
    this.allocate(INITIAL_CAPACITY);
  }

  /**
   * A new node under `parent` with path (lo, hi), linked as CHILD0 if free; held by worker
   * slot `holder` alone, or by nobody when holder is -1.
   */
  alloc(parent: number, lo: number, hi: number, holder = -1): number {
    let n: number;
    if (this.freeTop > 0) {
      n = this.freeIds[--this.freeTop]!;
    } else {
      if (this.nextUnused === this.capacity) this.grow(Math.ceil(this.capacity * 1.5));
      n = this.nextUnused++;
    }
    const rec = this.rec;
    const r = n * this.stride;
    rec[r + PARENT] = parent;
    rec[r + PATH_LO] = lo;
    rec[r + PATH_HI] = hi;
    rec[r + CHILDREN] = 0;
    rec[r + CHILD0] = -1;
    rec[r + HOLDERS] = holder >= 0 ? 1 : 0;
    rec[r + SOLE] = holder;
    rec[r + ROW] = -1;
    const p = parent * this.stride;
    rec[p + CHILDREN]!++;
    if (rec[p + CHILD0]! < 0) rec[p + CHILD0] = n;
    this.live++;
    return n;
  }

  /** Return a node (held by nobody, childless, bitset zero). The caller unlinked its edge. */
  free(n: number): void {
    const rec = this.rec;
    const r = n * this.stride;
    const p = rec[r + PARENT]! * this.stride;
    rec[p + CHILDREN]!--;
    if (rec[p + CHILD0] === n) rec[p + CHILD0] = -1;
    rec[r + HOLDERS] = -1;
    if (this.freeTop === this.freeIds.length) {
      const grown = new Int32Array(this.freeIds.length * 2);
      grown.set(this.freeIds);
      this.freeIds = grown;
    }
    this.freeIds[this.freeTop++] = n;
    this.live--;
    // An empty tree gives its memory back (the leak test's "baseline").
    if (this.live === 0) {
      if (this.capacity > INITIAL_CAPACITY) {
        this.allocate(INITIAL_CAPACITY);
        this.rows.compact(() => {});
      } else {
        // Every id is free: start again from 1 rather than keep a stack of them.
        this.nextUnused = 1;
        this.resetFree();
      }
    }
  }

  get(n: number, field: number): number {
    return this.rec[n * this.stride + field]!;
  }

  isLive(n: number): boolean {
    return n > 0 && n < this.nextUnused && this.rec[n * this.stride + HOLDERS]! >= 0;
  }

  hasHolder(n: number, w: number): boolean {
    const r = n * STRIDE;
    const holders = this.rec[r + HOLDERS]!;
    if (holders <= 0) return false;
    if (holders === 1) return this.rec[r + SOLE] === w;
    if (holders === 2) return this.rec[r + SOLE] === w || pairSecond(this.rec[r + ROW]!) === w;
    return this.rows.has(this.rec[r + ROW]!, w);
  }

  /** Add slot w to node n's holders; false when it was one already. */
  addHolder(n: number, w: number): boolean {
    const rec = this.rec;
    const r = n * STRIDE;
    const holders = rec[r + HOLDERS]!;
    if (holders === 0) {
      rec[r + SOLE] = w;
      rec[r + HOLDERS] = 1;
      return true;
    }
    if (holders === 1) {
      if (rec[r + SOLE] === w) return false;
      rec[r + ROW] = -(w + 2);
      rec[r + HOLDERS] = 2;
      return true;
    }
    if (holders === 2) {
      const a = rec[r + SOLE]!;
      const b = pairSecond(rec[r + ROW]!);
      if (a === w || b === w) return false;
      const row = this.rows.alloc();
      this.rows.set(row, a);
      this.rows.set(row, b);
      this.rows.set(row, w);
      rec[r + ROW] = row;
      rec[r + SOLE] = -1;
      rec[r + HOLDERS] = 3;
      return true;
    }
    const row = rec[r + ROW]!;
    if (this.rows.has(row, w)) return false;
    this.rows.set(row, w);
    rec[r + HOLDERS] = holders + 1;
    return true;
  }

  /** Remove slot w from node n's holders; false when it was not one. */
  removeHolder(n: number, w: number): boolean {
    const rec = this.rec;
    const r = n * STRIDE;
    const holders = rec[r + HOLDERS]!;
    if (holders <= 0) return false;
    if (holders === 1) {
      if (rec[r + SOLE] !== w) return false;
      rec[r + SOLE] = -1;
      rec[r + HOLDERS] = 0;
      return true;
    }
    if (holders === 2) {
      const b = pairSecond(rec[r + ROW]!);
      if (rec[r + SOLE] === w) rec[r + SOLE] = b;
      else if (b !== w) return false;
      rec[r + ROW] = -1;
      rec[r + HOLDERS] = 1;
      return true;
    }
    const row = rec[r + ROW]!;
    if (!this.rows.has(row, w)) return false;
    this.rows.clear(row, w);
    if (holders === 3) {
      // Two holders left: back inline, the row freed.
      const a = this.rows.first(row);
      this.rows.clear(row, a);
      rec[r + SOLE] = a;
      rec[r + ROW] = -(this.rows.first(row) + 2);
      this.rows.free(row);
    }
    rec[r + HOLDERS] = holders - 1;
    return true;
  }

  /** Holder rows wide enough for worker slots [0, span), and no wider than they need be. */
  fitWorkers(span: number): void {
    this.rows.fit(span);
  }

  /** Most ids are free: worth a compact(). */
  get sparse(): boolean {
    return this.capacity > COMPACT_MIN_CAPACITY && this.live * 4 < this.capacity;
  }

  /**
   * Renumber the live nodes densely, in id order (the root stays 0), into an array sized to
   * them; the holder rows are compacted too. Returns old id -> new id (-1 for a free id): the
   * owner must remap every id it keeps (edges, lookups).
   */
  compact(): Int32Array {
    const old = this.rec;
    const limit = this.nextUnused;
    const remap = new Int32Array(limit).fill(-1);
    let next = 0;
    for (let n = 0; n < limit; n++)
      if (n === ROOT || old[n * STRIDE + HOLDERS]! >= 0) remap[n] = next++;
    const capacity = Math.max(INITIAL_CAPACITY, Math.ceil(next * 1.5));
    const rec = new Int32Array(capacity * STRIDE);
    for (let n = 0; n < limit; n++) {
      const to = remap[n]!;
      if (to < 0) continue;
      const src = n * STRIDE;
      const dst = to * STRIDE;
      rec.set(old.subarray(src, src + STRIDE), dst);
      if (n !== ROOT) rec[dst + PARENT] = remap[old[src + PARENT]!]!;
      const c0 = old[src + CHILD0]!;
      rec[dst + CHILD0] = c0 >= 0 ? remap[c0]! : -1;
    }
    this.rec = rec;
    this.capacity = capacity;
    this.nextUnused = next;
    this.resetFree();
    this.rows.compact((move) => {
      for (let n = 0; n < next; n++) {
        const r = n * STRIDE;
        if (rec[r + HOLDERS]! >= 3) rec[r + ROW] = move(rec[r + ROW]!);
      }
    });
    return remap;
  }

  /** One past the highest id ever handed out (iterate ids below this). */
  get idLimit(): number {
    return this.nextUnused;
  }

  /** Bytes held by the node records, the free-id stack and the holder rows. */
  bytes(): number {
    return this.capacity * STRIDE * 4 + this.freeIds.byteLength + this.rows.bytes();
  }

  private resetFree(): void {
    this.freeTop = 0;
    if (this.freeIds.length > INITIAL_FREE) this.freeIds = new Int32Array(INITIAL_FREE);
  }

  private grow(capacity: number): void {
    const rec = new Int32Array(capacity * this.stride);
    rec.set(this.rec);
    this.rec = rec;
    this.capacity = capacity;
  }

  private allocate(capacity: number): void {
    this.capacity = capacity;
    this.rec = new Int32Array(capacity * STRIDE);
    this.rec[PATH_LO] = ROOT_PATH_LO;
    this.rec[PATH_HI] = ROOT_PATH_HI;
    this.rec[CHILD0] = -1;
    this.rec[SOLE] = -1;
    this.rec[ROW] = -1;
    this.nextUnused = 1;
    this.resetFree();
    this.live = 0;
  }
}
