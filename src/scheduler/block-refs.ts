/**
 * Reference-counted active blocks for every (worker, dp_rank) slot at once (spec §4.5
 * `unique_blocks` + `fractional_blocks`), in typed arrays.
 *
 * One table maps a sequence hash to a short doubly linked list of holder nodes, one node
 * per slot that holds the block, carrying that slot's refcount (how many of its requests
 * hold the block) and its optional fraction. Keeping all slots in one table is what makes
 * `countHeld` cheap: one probe per request block finds every slot holding it, instead of
 * one probe per block per slot (64 workers × 512 blocks).
 */
import { Hash64Table } from "./hash64-table.ts";

const NONE = -1;

export class BlockRefs {
  readonly #heads = new Hash64Table(1024);
  // Node pool (struct of arrays); free nodes are chained through #next.
  #slot = new Int32Array(1024);
  #ref = new Int32Array(1024);
  #frac = new Float64Array(1024);
  #prev = new Int32Array(1024);
  #next = new Int32Array(1024);
  #lo = new Uint32Array(1024);
  #hi = new Uint32Array(1024);
  #freeNode = NONE;
  #used = 0;
  #highWater = 0;
  // Per slot: distinct blocks held, Σ(1 − frac) over its fractional blocks, and how many
  // of its blocks are fractional (to reset the sum exactly when none are left).
  #unique = new Int32Array(8);
  #deficit = new Float64Array(8);
  #fracCount = new Int32Array(8);
  #slotInUse = new Uint8Array(8);

  /** Reserve a slot index for a new (worker, dp_rank). */
  newSlot(): number {
    let s = this.#slotInUse.indexOf(0);
    if (s < 0) {
      s = this.#slotInUse.length;
      this.#growSlots(s * 2);
    }
    this.#slotInUse[s] = 1;
    this.#unique[s] = 0;
    this.#deficit[s] = 0;
    this.#fracCount[s] = 0;
    return s;
  }

  /** Give a slot index back; the slot must hold no block any more. */
  releaseSlot(slot: number): void {
    if (this.#unique[slot] !== 0) throw new Error(`slot ${slot} still holds ${this.#unique[slot]} blocks`);
    this.#slotInUse[slot] = 0;
  }

  /** Upper bound (exclusive) of slot indices handed out so far: size for per-slot scratch arrays. */
  get slotCapacity(): number {
    return this.#slotInUse.length;
  }

  /** Touch a block for a slot: refcount + 1, creating it at 1. Returns the node to release later. */
  acquire(slot: number, lo: number, hi: number): number {
    const head = this.#heads.get(lo, hi);
    for (let n = head; n !== NONE; n = this.#next[n]!) {
      if (this.#slot[n] === slot) {
        this.#ref[n]!++;
        return n;
      }
    }
    const n = this.#allocNode();
    this.#slot[n] = slot;
    this.#ref[n] = 1;
    this.#frac[n] = NaN;
    this.#lo[n] = lo;
    this.#hi[n] = hi;
    this.#prev[n] = NONE;
    this.#next[n] = head;
    if (head !== NONE) this.#prev[head] = n;
    this.#heads.set(lo, hi, n);
    this.#unique[slot]!++;
    return n;
  }

  /** Refcount − 1; at 0 the slot no longer holds the block (and its fraction goes). */
  release(node: number): void {
    if (--this.#ref[node]! > 0) return;
    const slot = this.#slot[node]!;
    this.#unique[slot]!--;
    this.#clearFraction(node, slot);
    const prev = this.#prev[node]!;
    const next = this.#next[node]!;
    if (next !== NONE) this.#prev[next] = prev;
    if (prev !== NONE) this.#next[prev] = next;
    else if (next !== NONE) this.#heads.set(this.#lo[node]!, this.#hi[node]!, next);
    else this.#heads.delete(this.#lo[node]!, this.#hi[node]!);
    this.#next[node] = this.#freeNode;
    this.#freeNode = node;
    this.#used--;
  }

  refCount(node: number): number {
    return this.#ref[node]!;
  }

  /** Count the block as `fraction` of a block in its slot's active total (spec §4.5). */
  setFraction(node: number, fraction: number): void {
    const slot = this.#slot[node]!;
    this.#clearFraction(node, slot);
    this.#frac[node] = fraction;
    this.#deficit[slot]! += 1 - fraction;
    this.#fracCount[slot]!++;
  }

  #clearFraction(node: number, slot: number): void {
    const f = this.#frac[node]!;
    if (Number.isNaN(f)) return;
    this.#frac[node] = NaN;
    if (--this.#fracCount[slot]! === 0) this.#deficit[slot] = 0;
    else this.#deficit[slot]! -= 1 - f;
  }

  /** round(|unique| − Σ(1 − frac)): fractional blocks count as their fraction. */
  activeBlocks(slot: number): number {
    return Math.round(this.#unique[slot]! - this.#deficit[slot]!);
  }

  /** Distinct blocks the slot holds, fractions ignored. */
  uniqueBlocks(slot: number): number {
    return this.#unique[slot]!;
  }

  /** Whether the slot holds the block. */
  holds(slot: number, lo: number, hi: number): boolean {
    for (let n = this.#heads.get(lo, hi); n !== NONE; n = this.#next[n]!) if (this.#slot[n] === slot) return true;
    return false;
  }

  /**
   * For each slot, add to `out[slot]` how many of `count` hashes (u32 halves, see
   * u32Halves) it already holds. Duplicates in the input count each time, as in Dynamo.
   */
  countHeld(halves: Uint32Array, count: number, out: Int32Array): void {
    const heads = this.#heads;
    const next = this.#next;
    const slotOf = this.#slot;
    for (let i = 0; i < count; i++) {
      for (let n = heads.get(halves[2 * i]!, halves[2 * i + 1]!); n !== NONE; n = next[n]!) out[slotOf[n]!]!++;
    }
  }

  /** Live nodes (one per (block, slot) pair): for tests and memory accounting. */
  get liveNodes(): number {
    return this.#used;
  }

  /** Distinct hashes held by any slot. */
  get distinctBlocks(): number {
    return this.#heads.size;
  }

  #allocNode(): number {
    this.#used++;
    if (this.#freeNode !== NONE) {
      const n = this.#freeNode;
      this.#freeNode = this.#next[n]!;
      return n;
    }
    const n = this.#highWater++;
    if (n >= this.#slot.length) this.#growNodes(this.#slot.length * 2);
    return n;
  }

  #growNodes(cap: number): void {
    this.#slot = grow(this.#slot, new Int32Array(cap));
    this.#ref = grow(this.#ref, new Int32Array(cap));
    this.#frac = grow(this.#frac, new Float64Array(cap));
    this.#prev = grow(this.#prev, new Int32Array(cap));
    this.#next = grow(this.#next, new Int32Array(cap));
    this.#lo = grow(this.#lo, new Uint32Array(cap));
    this.#hi = grow(this.#hi, new Uint32Array(cap));
  }

  #growSlots(cap: number): void {
    this.#unique = grow(this.#unique, new Int32Array(cap));
    this.#deficit = grow(this.#deficit, new Float64Array(cap));
    this.#fracCount = grow(this.#fracCount, new Int32Array(cap));
    this.#slotInUse = grow(this.#slotInUse, new Uint8Array(cap));
  }
}

function grow<T extends Int32Array | Uint32Array | Float64Array | Uint8Array>(old: T, bigger: T): T {
  bigger.set(old as never);
  return bigger;
}
