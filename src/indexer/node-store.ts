/**
 * The nodes of the radix tree as a struct of typed arrays, with a free list.
 *
 * A node is an int id. Per node: parent id, the local block hash it is keyed by (lo/hi
 * halves; the edge itself lives in ChildTable), how many workers hold it, how many children
 * it has, and a bitset row of `stride` u32 words (bit w = worker slot w holds the node).
 * About 20 + 4*stride bytes per node, no per-node objects for the GC to trace.
 *
 * Node 0 is the root. A freed node has holderCount -1 and links the free list through
 * `parent`. Arrays are replaced when they grow: never cache them across an alloc().
 */

export const ROOT = 0;
const INITIAL_CAPACITY = 1024;

export class NodeStore {
  parent!: Int32Array;
  tokLo!: Int32Array;
  tokHi!: Int32Array;
  /** Workers holding the node; -1 marks a free id. */
  holderCount!: Int32Array;
  childCount!: Int32Array;
  /** stride words per node: worker membership bitset. */
  holders!: Uint32Array;
  /** u32 words per bitset row (32 workers each). */
  stride = 1;
  /** Live nodes besides the root. */
  live = 0;

  private capacity = 0;
  private nextUnused = 1;
  private freeHead = -1;

  constructor() {
    this.allocate(INITIAL_CAPACITY, 1);
  }

  /** A new node under `parent`, keyed by (lo, hi), held by nobody yet. */
  alloc(parent: number, lo: number, hi: number): number {
    let n: number;
    if (this.freeHead >= 0) {
      n = this.freeHead;
      this.freeHead = this.parent[n]!;
    } else {
      if (this.nextUnused === this.capacity) this.grow(this.capacity * 2);
      n = this.nextUnused++;
    }
    this.parent[n] = parent;
    this.tokLo[n] = lo;
    this.tokHi[n] = hi;
    this.holderCount[n] = 0;
    this.childCount[n] = 0;
    this.childCount[parent]!++;
    this.live++;
    return n;
  }

  /** Return a node (held by nobody, childless; its bitset row is already zero). */
  free(n: number): void {
    this.childCount[this.parent[n]!]!--;
    this.holderCount[n] = -1;
    this.parent[n] = this.freeHead;
    this.freeHead = n;
    this.live--;
    // An empty tree gives its memory back (the leak test's "baseline").
    if (this.live === 0 && this.capacity > INITIAL_CAPACITY) this.allocate(INITIAL_CAPACITY, this.stride);
  }

  isLive(n: number): boolean {
    return n > 0 && n < this.nextUnused && this.holderCount[n]! >= 0;
  }

  hasHolder(n: number, w: number): boolean {
    return (this.holders[n * this.stride + (w >>> 5)]! & (1 << (w & 31))) !== 0;
  }

  /** Set bit w of node n; false when it was already set. */
  addHolder(n: number, w: number): boolean {
    const i = n * this.stride + (w >>> 5);
    const bit = 1 << (w & 31);
    const word = this.holders[i]!;
    if ((word & bit) !== 0) return false;
    this.holders[i] = word | bit;
    this.holderCount[n]!++;
    return true;
  }

  /** Clear bit w of node n; false when it was not set. */
  removeHolder(n: number, w: number): boolean {
    const i = n * this.stride + (w >>> 5);
    const bit = 1 << (w & 31);
    const word = this.holders[i]!;
    if ((word & bit) === 0) return false;
    this.holders[i] = word & ~bit;
    this.holderCount[n]!--;
    return true;
  }

  /** Make the bitset wide enough for worker slots [0, span). */
  ensureWorkers(span: number): void {
    const need = Math.max(1, Math.ceil(span / 32));
    if (need <= this.stride) return;
    let stride = this.stride;
    while (stride < need) stride *= 2;
    const old = this.holders;
    const oldStride = this.stride;
    this.holders = new Uint32Array(this.capacity * stride);
    for (let n = 0; n < this.nextUnused; n++) {
      for (let k = 0; k < oldStride; k++) this.holders[n * stride + k] = old[n * oldStride + k]!;
    }
    this.stride = stride;
  }

  /** One past the highest id ever handed out (iterate ids below this). */
  get idLimit(): number {
    return this.nextUnused;
  }

  /** Bytes held by the node arrays. */
  bytes(): number {
    return this.capacity * (5 * 4 + this.stride * 4);
  }

  private grow(capacity: number): void {
    const copy = <T extends Int32Array | Uint32Array>(a: T, make: (n: number) => T, per = 1): T => {
      const b = make(capacity * per);
      b.set(a);
      return b;
    };
    const i32 = (n: number) => new Int32Array(n);
    this.parent = copy(this.parent, i32);
    this.tokLo = copy(this.tokLo, i32);
    this.tokHi = copy(this.tokHi, i32);
    this.holderCount = copy(this.holderCount, i32);
    this.childCount = copy(this.childCount, i32);
    this.holders = copy(this.holders, (n) => new Uint32Array(n), this.stride);
    this.capacity = capacity;
  }

  private allocate(capacity: number, stride: number): void {
    this.capacity = capacity;
    this.stride = stride;
    this.parent = new Int32Array(capacity);
    this.tokLo = new Int32Array(capacity);
    this.tokHi = new Int32Array(capacity);
    this.holderCount = new Int32Array(capacity);
    this.childCount = new Int32Array(capacity);
    this.holders = new Uint32Array(capacity * stride);
    this.nextUnused = 1;
    this.freeHead = -1;
    this.live = 0;
  }
}
