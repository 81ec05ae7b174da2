/**
 * The nodes of the radix tree: one interleaved Int32Array record per node, with a free list.
 *
 * A node is an int id; its record is `stride` int32s at rec[id * stride]:
 *   PARENT, PATH_LO, PATH_HI (path hash, see path-hash.ts), CHILDREN (count), CHILD0 (first
 *   child, or -1), HOLDERS (count of workers; -1 marks a free id), then `words` bitset words
 *   (bit w = worker slot w holds the node).
 * Most nodes have exactly one child, kept in CHILD0, so a chain needs no edge-table entry;
 * a chain stored by one event gets consecutive ids, so walking it reads memory in order; and
 * everything a lookup step needs about a node sits in one 32-byte record (up to 64 workers),
 * i.e. one cache line. No per-node object for the GC to trace.
 *
 * Node 0 is the root. Free ids are linked through PARENT. The array is replaced when it
 * grows: never cache `rec` across an alloc().
 */
import { ROOT_PATH_HI, ROOT_PATH_LO } from "./path-hash.ts";

export const ROOT = 0;
export const PARENT = 0;
export const PATH_LO = 1;
export const PATH_HI = 2;
export const CHILDREN = 3;
export const CHILD0 = 4;
export const HOLDERS = 5;
/** Offset of the first bitset word. */
export const BITS = 6;

const INITIAL_CAPACITY = 1024;

export class NodeStore {
  rec!: Int32Array;
  /** Bitset words per record (32 worker slots each). */
  words = 1;
  /** BITS + words. */
  stride = BITS + 1;
  /** Live nodes besides the root. */
  live = 0;

  private capacity = 0;
  private nextUnused = 1;
  private freeHead = -1;

  constructor() {
    this.allocate(INITIAL_CAPACITY, 1);
  }

  /** A new node under `parent` with path (lo, hi), held by nobody, linked as CHILD0 if free. */
  alloc(parent: number, lo: number, hi: number): number {
    let n: number;
    if (this.freeHead >= 0) {
      n = this.freeHead;
      this.freeHead = this.rec[n * this.stride + PARENT]!;
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
    rec[r + HOLDERS] = 0;
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
    rec[r + PARENT] = this.freeHead;
    this.freeHead = n;
    this.live--;
    // An empty tree gives its memory back (the leak test's "baseline").
    if (this.live === 0 && this.capacity > INITIAL_CAPACITY) this.allocate(INITIAL_CAPACITY, this.words);
  }

  get(n: number, field: number): number {
    return this.rec[n * this.stride + field]!;
  }

  isLive(n: number): boolean {
    return n > 0 && n < this.nextUnused && this.rec[n * this.stride + HOLDERS]! >= 0;
  }

  hasHolder(n: number, w: number): boolean {
    return (this.rec[n * this.stride + BITS + (w >>> 5)]! & (1 << (w & 31))) !== 0;
  }

  /** Set bit w of node n; false when it was already set. */
  addHolder(n: number, w: number): boolean {
    const r = n * this.stride;
    const i = r + BITS + (w >>> 5);
    const bit = 1 << (w & 31);
    const word = this.rec[i]!;
    if ((word & bit) !== 0) return false;
    this.rec[i] = word | bit;
    this.rec[r + HOLDERS]!++;
    return true;
  }

  /** Clear bit w of node n; false when it was not set. */
  removeHolder(n: number, w: number): boolean {
    const r = n * this.stride;
    const i = r + BITS + (w >>> 5);
    const bit = 1 << (w & 31);
    const word = this.rec[i]!;
    if ((word & bit) === 0) return false;
    this.rec[i] = word & ~bit;
    this.rec[r + HOLDERS]!--;
    return true;
  }

  /** Make the bitset wide enough for worker slots [0, span). */
  ensureWorkers(span: number): void {
    const need = Math.max(1, Math.ceil(span / 32));
    if (need <= this.words) return;
    let words = this.words;
    while (words < need) words *= 2;
    const old = this.rec;
    const oldStride = this.stride;
    const stride = BITS + words;
    this.rec = new Int32Array(this.capacity * stride);
    for (let n = 0; n < this.nextUnused; n++) {
      for (let k = 0; k < oldStride; k++) this.rec[n * stride + k] = old[n * oldStride + k]!;
    }
    this.words = words;
    this.stride = stride;
  }

  /** One past the highest id ever handed out (iterate ids below this). */
  get idLimit(): number {
    return this.nextUnused;
  }

  /** Bytes held by the node records. */
  bytes(): number {
    return this.capacity * this.stride * 4;
  }

  private grow(capacity: number): void {
    const rec = new Int32Array(capacity * this.stride);
    rec.set(this.rec);
    this.rec = rec;
    this.capacity = capacity;
  }

  private allocate(capacity: number, words: number): void {
    this.capacity = capacity;
    this.words = words;
    this.stride = BITS + words;
    this.rec = new Int32Array(capacity * this.stride);
    this.rec[PATH_LO] = ROOT_PATH_LO;
    this.rec[PATH_HI] = ROOT_PATH_HI;
    this.rec[CHILD0] = -1;
    this.nextUnused = 1;
    this.freeHead = -1;
    this.live = 0;
  }
}
