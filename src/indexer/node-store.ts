/**
 * The nodes of the radix tree as a struct of typed arrays, with a free list.
 *
 * A node is an int id. Per node: parent id, path hash (lo/hi; see path-hash.ts), number of
 * children, its first child (most nodes have exactly one: a chain needs no edge-table entry,
 * and a chain stored by one event has consecutive ids, so walking it reads memory in order),
 * and a row of `rowStride` int32s: [holderCount, bitset words…] where bit w of the bitset =
 * worker slot w holds the node (count and bits share a cache line). 20 + 4 * rowStride bytes
 * per node (28 B up to 32 workers, 32 B up to 64), no per-node object for the GC to trace.
 *
 * Node 0 is the root. A freed node has holderCount -1 and links the free list through
 * `parent`. Arrays are replaced when they grow: never cache them across an alloc().
 */
import { ROOT_PATH_HI, ROOT_PATH_LO } from "./path-hash.ts";

export const ROOT = 0;
const INITIAL_CAPACITY = 1024;

export class NodeStore {
  parent!: Int32Array;
  pathLo!: Int32Array;
  pathHi!: Int32Array;
  childCount!: Int32Array;
  /** The child not in the edge table, or -1 (see RadixTree.findChild). */
  child0!: Int32Array;
  /** rowStride int32s per node: [holderCount (-1 = free id), bitset words…]. */
  rows!: Int32Array;
  /** Bitset words per row (32 worker slots each). */
  words = 1;
  /** words + 1. */
  rowStride = 2;
  /** Live nodes besides the root. */
  live = 0;

  private capacity = 0;
  private nextUnused = 1;
  private freeHead = -1;

  constructor() {
    this.allocate(INITIAL_CAPACITY, 1);
  }

  /** A new node under `parent` with path (lo, hi), held by nobody yet. */
  alloc(parent: number, lo: number, hi: number): number {
    let n: number;
    if (this.freeHead >= 0) {
      n = this.freeHead;
      this.freeHead = this.parent[n]!;
    } else {
      if (this.nextUnused === this.capacity) this.grow(Math.ceil(this.capacity * 1.5));
      n = this.nextUnused++;
    }
    this.parent[n] = parent;
    this.pathLo[n] = lo;
    this.pathHi[n] = hi;
    this.rows[n * this.rowStride] = 0;
    this.childCount[n] = 0;
    this.child0[n] = -1;
    this.childCount[parent]!++;
    this.live++;
    return n;
  }

  /** Return a node (held by nobody, childless; its bitset is already zero). */
  free(n: number): void {
    this.childCount[this.parent[n]!]!--;
    this.rows[n * this.rowStride] = -1;
    this.parent[n] = this.freeHead;
    this.freeHead = n;
    this.live--;
    // An empty tree gives its memory back (the leak test's "baseline").
    if (this.live === 0 && this.capacity > INITIAL_CAPACITY) this.allocate(INITIAL_CAPACITY, this.words);
  }

  holderCount(n: number): number {
    return this.rows[n * this.rowStride]!;
  }

  isLive(n: number): boolean {
    return n > 0 && n < this.nextUnused && this.rows[n * this.rowStride]! >= 0;
  }

  hasHolder(n: number, w: number): boolean {
    return (this.rows[n * this.rowStride + 1 + (w >>> 5)]! & (1 << (w & 31))) !== 0;
  }

  /** Set bit w of node n; false when it was already set. */
  addHolder(n: number, w: number): boolean {
    const r = n * this.rowStride;
    const i = r + 1 + (w >>> 5);
    const bit = 1 << (w & 31);
    const word = this.rows[i]!;
    if ((word & bit) !== 0) return false;
    this.rows[i] = word | bit;
    this.rows[r]!++;
    return true;
  }

  /** Clear bit w of node n; false when it was not set. */
  removeHolder(n: number, w: number): boolean {
    const r = n * this.rowStride;
    const i = r + 1 + (w >>> 5);
    const bit = 1 << (w & 31);
    const word = this.rows[i]!;
    if ((word & bit) === 0) return false;
    this.rows[i] = word & ~bit;
    this.rows[r]!--;
    return true;
  }

  /** Make the bitset wide enough for worker slots [0, span). */
  ensureWorkers(span: number): void {
    const need = Math.max(1, Math.ceil(span / 32));
    if (need <= this.words) return;
    let words = this.words;
    while (words < need) words *= 2;
    const old = this.rows;
    const oldStride = this.rowStride;
    const stride = words + 1;
    this.rows = new Int32Array(this.capacity * stride);
    for (let n = 0; n < this.nextUnused; n++) {
      for (let k = 0; k < oldStride; k++) this.rows[n * stride + k] = old[n * oldStride + k]!;
    }
    this.words = words;
    this.rowStride = stride;
  }

  /** One past the highest id ever handed out (iterate ids below this). */
  get idLimit(): number {
    return this.nextUnused;
  }

  /** Bytes held by the node arrays. */
  bytes(): number {
    return this.capacity * (5 * 4 + this.rowStride * 4);
  }

  private grow(capacity: number): void {
    const more = (a: Int32Array, per = 1): Int32Array => {
      const b = new Int32Array(capacity * per);
      b.set(a);
      return b;
    };
    this.parent = more(this.parent);
    this.pathLo = more(this.pathLo);
    this.pathHi = more(this.pathHi);
    this.childCount = more(this.childCount);
    this.child0 = more(this.child0);
    this.rows = more(this.rows, this.rowStride);
    this.capacity = capacity;
  }

  private allocate(capacity: number, words: number): void {
    this.capacity = capacity;
    this.words = words;
    this.rowStride = words + 1;
    this.parent = new Int32Array(capacity);
    this.pathLo = new Int32Array(capacity);
    this.pathHi = new Int32Array(capacity);
    this.childCount = new Int32Array(capacity);
    this.child0 = new Int32Array(capacity);
    this.child0[0] = -1;
    this.rows = new Int32Array(capacity * this.rowStride);
    this.pathLo[0] = ROOT_PATH_LO;
    this.pathHi[0] = ROOT_PATH_HI;
    this.nextUnused = 1;
    this.freeHead = -1;
    this.live = 0;
  }
}
