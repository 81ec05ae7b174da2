/**
 * The edges of the radix tree: (parent node, child path hash) -> child node, in ONE
 * open-addressing table for the whole tree instead of a Map per node.
 *
 * A per-node Map costs hundreds of bytes even when it holds one child (most nodes hold one);
 * here an edge costs 16 bytes per slot. The slot is chosen from the child's path hash alone
 * (see path-hash.ts), so callers can compute and pre-load (touch) the slots of many levels
 * before walking them. Linear probing with backward-shift deletion (no tombstones; churn does
 * not slow probes); the table shrinks when it empties.
 */
import { mix3, pow2AtLeast } from "./hash-mix.ts";

const EMPTY = -1;
const MIN_CAPACITY = 8;

export class ChildTable {
  /** [pathLo, pathHi, parent, child] per slot; child EMPTY marks a free slot. */
  slots: Int32Array;
  private mask: number;
  private count = 0;

  constructor(expected = 0) {
    const cap = pow2AtLeast(Math.max(MIN_CAPACITY, Math.ceil(expected / 0.75) + 1));
    this.slots = new Int32Array(cap * 4).fill(EMPTY);
    this.mask = cap - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Slots allocated (for memory accounting). */
  get capacity(): number {
    return this.mask + 1;
  }

  /** Index into `slots` where the probe for this path starts (for pre-loading). */
  home(lo: number, hi: number): number {
    return (mix3(0, lo, hi) & this.mask) << 2;
  }

  /** The child of `parent` with path (lo, hi), or -1. */
  get(parent: number, lo: number, hi: number): number {
    const i = this.slotOf(parent, lo, hi);
    return i < 0 ? -1 : this.slots[(i << 2) + 3]!;
  }

  /** The slot holding the edge, or -1: the one probe loop that get and delete share. */
  private slotOf(parent: number, lo: number, hi: number): number {
    const s = this.slots;
    const mask = this.mask;
    let i = mix3(0, lo, hi) & mask;
    for (;;) {
      const p = i << 2;
      if (s[p + 3] === EMPTY) return -1;
      if (s[p] === lo && s[p + 1] === hi && s[p + 2] === parent) return i;
      i = (i + 1) & mask;
    }
  }

  /** Insert or overwrite the edge; child must be >= 0. lo/hi are int32. */
  set(parent: number, lo: number, hi: number, child: number): void {
    if ((this.count + 1) * 4 > (this.mask + 1) * 3) this.resize((this.mask + 1) * 2);
    const s = this.slots;
    let i = mix3(0, lo, hi) & this.mask;
    for (;;) {
      const p = i << 2;
      if (s[p + 3] === EMPTY) {
        s[p] = lo;
        s[p + 1] = hi;
        s[p + 2] = parent;
        s[p + 3] = child;
        this.count++;
        return;
      }
      if (s[p] === lo && s[p + 1] === hi && s[p + 2] === parent) {
        s[p + 3] = child;
        return;
      }
      i = (i + 1) & this.mask;
    }
  }

  /**
   * Renumber the node ids in every edge (the node store compacted): `remap[old]` is the new
   * id. In place: the slot comes from the path hash alone, which does not change.
   */
  remapIds(remap: Int32Array): void {
    const s = this.slots;
    for (let p = 0; p < s.length; p += 4) {
      if (s[p + 3] === EMPTY) continue;
      s[p + 2] = remap[s[p + 2]!]!;
      s[p + 3] = remap[s[p + 3]!]!;
    }
  }

  /** Remove the edge; returns the child, or -1 when absent. */
  delete(parent: number, lo: number, hi: number): number {
    const i = this.slotOf(parent, lo, hi);
    if (i < 0) return -1;
    const s = this.slots;
    const mask = this.mask;
    const old = s[(i << 2) + 3]!;
    // Backward-shift: pull later members of the probe run into the hole.
    let hole = i;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const q = j << 2;
      if (s[q + 3] === EMPTY) break;
      const home = mix3(0, s[q]!, s[q + 1]!) & mask;
      // j stays when its home lies in the cyclic range (hole, j]; otherwise it fills the hole.
      const stays = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (!stays) {
        const d = hole << 2;
        s[d] = s[q]!;
        s[d + 1] = s[q + 1]!;
        s[d + 2] = s[q + 2]!;
        s[d + 3] = s[q + 3]!;
        hole = j;
      }
    }
    s[(hole << 2) + 3] = EMPTY;
    this.count--;
    const cap = mask + 1;
    if (cap > MIN_CAPACITY && this.count * 8 < cap) this.resize(cap / 2);
    return old;
  }

  private resize(cap: number): void {
    const old = this.slots;
    this.slots = new Int32Array(cap * 4).fill(EMPTY);
    this.mask = cap - 1;
    const s = this.slots;
    const mask = this.mask;
    for (let p = 0; p < old.length; p += 4) {
      if (old[p + 3] === EMPTY) continue;
      let i = mix3(0, old[p]!, old[p + 1]!) & mask;
      while (s[(i << 2) + 3] !== EMPTY) i = (i + 1) & mask;
      const d = i << 2;
      s[d] = old[p]!;
      s[d + 1] = old[p + 1]!;
      s[d + 2] = old[p + 2]!;
      s[d + 3] = old[p + 3]!;
    }
  }
}
