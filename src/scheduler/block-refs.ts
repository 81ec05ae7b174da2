/**
 * Reference-counted active blocks for every (worker, dp_rank) slot at once (spec §4.5
 * `unique_blocks` + `fractional_blocks`), in typed arrays.
 *
 * - An *entry* is one distinct sequence hash held by at least one slot. It carries a bitset
 *   of the slots holding it, and its hash-table bucket carries a summary of that set:
 *   the slot itself when one slot holds it, else −(number of holders).
 * - A *holding* is one (entry, slot) pair: that slot's refcount (how many of its requests
 *   hold the block) and optional fraction. Most blocks have one holder, so the first
 *   holding lives inside the entry (handle ~entry, negative); further holders get a node
 *   found through a second table keyed by (entry, slot) (handle = node id ≥ 0). That keeps
 *   booking a prompt at about two random memory accesses per block.
 *
 * `countHeld` is the hot path (once per scheduling decision): one probe per request block
 * finds every slot holding it through the bitset, and consecutive blocks with the same
 * holder set (a shared system prompt, a conversation prefix: prefixes are held together)
 * are counted as one run, so a prefix cached on all 64 workers costs 64 compares, not 4096
 * increments; the bucket summary settles most compares without touching the bitsets.
 * The result is exact for any input.
 */
import { Hash64Table } from "./hash64-table.ts";

const NONE = -1;

export class BlockRefs {
  /** (hash lo, hash hi) → entry; aux = holder summary (slot if one holder, else −holders). */
  readonly #entryOf = new Hash64Table(1024);
  /** (entry, slot) → node, for holders other than the entry's own. */
  readonly #nodeOf = new Hash64Table(1024);
  // Entries (struct of arrays); free entries are chained through #entHolders.
  #entLo = new Uint32Array(1024);
  #entHi = new Uint32Array(1024);
  /** Slots holding the entry; doubles as the free-list link of a free entry. */
  #entHolders = new Int32Array(1024);
  /** `#words` u32 per entry: bit s = slot s holds it. */
  #entBits = new Uint32Array(1024);
  #words = 1;
  /** The entry's own holding: its slot (NONE = vacant), refcount, fraction (NaN = none). */
  #entSlot = new Int32Array(1024);
  #entRef = new Int32Array(1024);
  #entFrac = new Float64Array(1024);
  #freeEntry = NONE;
  #entHigh = 0;
  #entries = 0;
  // Nodes; free nodes are chained through #nodeRef.
  #nodeEntry = new Int32Array(1024);
  #nodeSlot = new Int32Array(1024);
  #nodeRef = new Int32Array(1024);
  #nodeFrac = new Float64Array(1024);
  #freeNode = NONE;
  #nodeHigh = 0;
  #holdings = 0;
  // Per slot: distinct blocks held, Σ(1 − frac) over its fractional blocks, and how many
  // of its blocks are fractional (to reset the sum exactly when none are left).
  #unique = new Int32Array(32);
  #deficit = new Float64Array(32);
  #fracCount = new Int32Array(32);
  #slotInUse = new Uint8Array(32);

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

  /** Upper bound (exclusive) of slot indices: the size for per-slot scratch arrays. */
  get slotCapacity(): number {
    return this.#slotInUse.length;
  }

  /** Touch a block for a slot: refcount + 1, creating it at 1. Returns the handle to release later. */
  acquire(slot: number, lo: number, hi: number): number {
    const spare = this.#freeEntry !== NONE ? this.#freeEntry : this.#entHigh;
    let pos = this.#entryOf.findOrInsert(lo, hi, spare);
    let e: number;
    let handle: number;
    if (pos < 0) {
      pos = ~pos;
      e = this.#allocEntry(lo, hi);
      handle = this.#takeEntryHolding(e, slot);
    } else {
      e = this.#entryOf.valueAt(pos);
      if ((this.#entBits[e * this.#words + (slot >>> 5)]! & (1 << (slot & 31))) !== 0) {
        // Already held by this slot: one more reference.
        if (this.#entSlot[e] === slot) {
          this.#entRef[e]!++;
          return ~e;
        }
        const n = this.#nodeOf.get(e, slot);
        this.#nodeRef[n]!++;
        return n;
      }
      if (this.#entSlot[e] === NONE) handle = this.#takeEntryHolding(e, slot);
      else {
        const n = this.#allocNode();
        this.#nodeEntry[n] = e;
        this.#nodeSlot[n] = slot;
        this.#nodeRef[n] = 1;
        this.#nodeFrac[n] = NaN;
        this.#nodeOf.set(e, slot, n);
        handle = n;
      }
    }
    const holders = ++this.#entHolders[e]!;
    this.#entBits[e * this.#words + (slot >>> 5)]! |= 1 << (slot & 31);
    this.#entryOf.setAuxAt(pos, holders === 1 ? slot : -holders);
    this.#unique[slot]!++;
    this.#holdings++;
    return handle;
  }

  #takeEntryHolding(e: number, slot: number): number {
    this.#entSlot[e] = slot;
    this.#entRef[e] = 1;
    this.#entFrac[e] = NaN;
    return ~e;
  }

  /** Refcount − 1; at 0 the slot no longer holds the block (and its fraction goes). */
  release(handle: number): void {
    let e: number;
    let slot: number;
    if (handle < 0) {
      e = ~handle;
      if (--this.#entRef[e]! > 0) return;
      slot = this.#entSlot[e]!;
      this.#clearFraction(handle, slot);
      this.#entSlot[e] = NONE;
    } else {
      if (--this.#nodeRef[handle]! > 0) return;
      slot = this.#nodeSlot[handle]!;
      e = this.#nodeEntry[handle]!;
      this.#clearFraction(handle, slot);
      this.#nodeOf.delete(e, slot);
      this.#nodeRef[handle] = this.#freeNode;
      this.#freeNode = handle;
    }
    this.#unique[slot]!--;
    this.#holdings--;
    this.#entBits[e * this.#words + (slot >>> 5)]! &= ~(1 << (slot & 31));
    const holders = --this.#entHolders[e]!;
    if (holders === 0) {
      this.#entryOf.delete(this.#entLo[e]!, this.#entHi[e]!);
      this.#entHolders[e] = this.#freeEntry;
      this.#freeEntry = e;
      this.#entries--;
      return;
    }
    const pos = this.#entryOf.find(this.#entLo[e]!, this.#entHi[e]!);
    this.#entryOf.setAuxAt(pos, holders === 1 ? this.#onlyHolder(e) : -holders);
  }

  #onlyHolder(e: number): number {
    const W = this.#words;
    for (let w = 0; w < W; w++) {
      const word = this.#entBits[e * W + w]!;
      if (word !== 0) return (w << 5) + 31 - Math.clz32(word & -word);
    }
    return NONE;
  }

  refCount(handle: number): number {
    return handle < 0 ? this.#entRef[~handle]! : this.#nodeRef[handle]!;
  }

  /** Count the block as `fraction` of a block in its slot's active total (spec §4.5). */
  setFraction(handle: number, fraction: number): void {
    const slot = handle < 0 ? this.#entSlot[~handle]! : this.#nodeSlot[handle]!;
    this.#clearFraction(handle, slot);
    if (handle < 0) this.#entFrac[~handle] = fraction;
    else this.#nodeFrac[handle] = fraction;
    this.#deficit[slot]! += 1 - fraction;
    this.#fracCount[slot]!++;
  }

  #clearFraction(handle: number, slot: number): void {
    const f = handle < 0 ? this.#entFrac[~handle]! : this.#nodeFrac[handle]!;
    if (Number.isNaN(f)) return;
    if (handle < 0) this.#entFrac[~handle] = NaN;
    else this.#nodeFrac[handle] = NaN;
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
    const e = this.#entryOf.get(lo, hi);
    return e !== NONE && (this.#entBits[e * this.#words + (slot >>> 5)]! & (1 << (slot & 31))) !== 0;
  }

  /**
   * For each slot, add to `out[slot]` how many of `count` hashes (u32 halves, see
   * u32Halves) it already holds. Duplicates in the input count each time, as in Dynamo.
   */
  countHeld(halves: Uint32Array, count: number, out: Int32Array): void {
    const entryOf = this.#entryOf;
    const bits = this.#entBits;
    const W = this.#words;
    let run = NONE; // entry whose holder set the current run shares; NONE = nobody holds
    let runAux = 0;
    let runLen = 0;
    for (let i = 0; i < count; i++) {
      const pos = entryOf.find(halves[2 * i]!, halves[2 * i + 1]!);
      const e = pos === NONE ? NONE : entryOf.valueAt(pos);
      if (e === run) {
        runLen++;
        continue;
      }
      const aux = pos === NONE ? 0 : entryOf.auxAt(pos);
      if (e !== NONE && run !== NONE && aux === runAux) {
        // Same single holder, or the same number of holders: compare the sets.
        let same = true;
        if (aux < 0) {
          for (let w = 0; w < W; w++) {
            if (bits[e * W + w] !== bits[run * W + w]) {
              same = false;
              break;
            }
          }
        }
        if (same) {
          runLen++;
          continue;
        }
      }
      if (run !== NONE) this.#addRun(run, runAux, runLen, out);
      run = e;
      runAux = aux;
      runLen = 1;
    }
    if (run !== NONE) this.#addRun(run, runAux, runLen, out);
  }

  #addRun(entry: number, aux: number, runLen: number, out: Int32Array): void {
    if (aux >= 0) {
      out[aux]! += runLen;
      return;
    }
    const W = this.#words;
    for (let w = 0; w < W; w++) {
      let word = this.#entBits[entry * W + w]!;
      while (word !== 0) {
        const low = word & -word;
        out[(w << 5) + 31 - Math.clz32(low)]! += runLen;
        word ^= low;
      }
    }
  }

  /** Live (block, slot) holdings: for tests and memory accounting. */
  get liveNodes(): number {
    return this.#holdings;
  }

  /** Distinct hashes held by any slot. */
  get distinctBlocks(): number {
    return this.#entries;
  }

  #allocEntry(lo: number, hi: number): number {
    this.#entries++;
    let e = this.#freeEntry;
    if (e !== NONE) this.#freeEntry = this.#entHolders[e]!;
    else {
      e = this.#entHigh++;
      if (e >= this.#entLo.length) this.#growEntries(this.#entLo.length * 2);
    }
    this.#entLo[e] = lo;
    this.#entHi[e] = hi;
    this.#entHolders[e] = 0;
    this.#entSlot[e] = NONE;
    for (let w = e * this.#words, end = w + this.#words; w < end; w++) this.#entBits[w] = 0;
    return e;
  }

  #allocNode(): number {
    const free = this.#freeNode;
    if (free !== NONE) {
      this.#freeNode = this.#nodeRef[free]!;
      return free;
    }
    const n = this.#nodeHigh++;
    if (n >= this.#nodeSlot.length) this.#growNodes(this.#nodeSlot.length * 2);
    return n;
  }

  #growEntries(cap: number): void {
    this.#entLo = grow(this.#entLo, new Uint32Array(cap));
    this.#entHi = grow(this.#entHi, new Uint32Array(cap));
    this.#entHolders = grow(this.#entHolders, new Int32Array(cap));
    this.#entBits = grow(this.#entBits, new Uint32Array(cap * this.#words));
    this.#entSlot = grow(this.#entSlot, new Int32Array(cap));
    this.#entRef = grow(this.#entRef, new Int32Array(cap));
    this.#entFrac = grow(this.#entFrac, new Float64Array(cap));
  }

  #growNodes(cap: number): void {
    this.#nodeEntry = grow(this.#nodeEntry, new Int32Array(cap));
    this.#nodeSlot = grow(this.#nodeSlot, new Int32Array(cap));
    this.#nodeRef = grow(this.#nodeRef, new Int32Array(cap));
    this.#nodeFrac = grow(this.#nodeFrac, new Float64Array(cap));
  }

  #growSlots(cap: number): void {
    this.#unique = grow(this.#unique, new Int32Array(cap));
    this.#deficit = grow(this.#deficit, new Float64Array(cap));
    this.#fracCount = grow(this.#fracCount, new Int32Array(cap));
    this.#slotInUse = grow(this.#slotInUse, new Uint8Array(cap));
    // Re-stride the holder bitsets to one bit per possible slot.
    const words = Math.ceil(cap / 32);
    if (words > this.#words) {
      const old = this.#entBits;
      const oldW = this.#words;
      const bits = new Uint32Array(this.#entLo.length * words);
      for (let e = 0; e < this.#entHigh; e++) for (let w = 0; w < oldW; w++) bits[e * words + w] = old[e * oldW + w]!;
      this.#entBits = bits;
      this.#words = words;
    }
  }
}

function grow<T extends Int32Array | Uint32Array | Float64Array | Uint8Array>(old: T, bigger: T): T {
  bigger.set(old as never);
  return bigger;
}
