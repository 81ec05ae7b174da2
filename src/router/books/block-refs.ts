/**
 * Reference-counted active blocks for every (worker, dp_rank) slot at once (Dynamo's ActiveSequences
 * `unique_blocks` + `fractional_blocks`), in typed arrays.
 *
 * - An *entry* is one distinct sequence hash held by at least one slot. It carries a bitset
 *   of the slots holding it, and its hash-table bucket carries a summary of that set:
 *   the slot itself when one slot holds it, else −(number of holders).
 * - A *holding* is one (entry, slot) pair: that slot's refcount (how many of its requests
 *   hold the block) and optional fraction. Most blocks have one holder, so the first
 *   holding lives inside the entry (handle ~entry, negative); further holders get a node
 *   found through a second table keyed by (entry, slot) (handle = node id ≥ 0).
 * With a million blocks everything lives in DRAM, so the layout minimises cache lines
 * touched: an entry is one interleaved record and a bucket one 16-byte slot, which keeps
 * booking or releasing a block at about two cache misses.
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
// Field offsets inside an entry record.
const LO = 0;
const HI = 1;
/** Slots holding the entry; the free-list link while the entry is free. */
const HOLDERS = 2;
/** The entry's own holding: its slot (NONE = vacant) … */
const SLOT = 3;
/** … its refcount … */
const REF = 4;
/** … and whether it has a fraction (value in #entFrac). */
const HAS_FRAC = 5;
/** First word of the holder bitset: bit s of word w = slot 32w + s holds the block. */
const BITS = 6;

export class BlockRefs {
  /** (hash lo, hash hi) → entry; aux = holder summary (slot if one holder, else −holders). */
  readonly #entryOf = new Hash64Table(1024);
  /** (entry, slot) → node, for holders other than the entry's own. */
  readonly #nodeOf = new Hash64Table(1024);
  #words = 1;
  /** Int32 per entry record: BITS + words, rounded up to a power of two. */
  #stride = 8;
  #entCap = 1024;
  #ent = new Int32Array(1024 * 8);
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
      const base = e * this.#stride;
      if ((this.#ent[base + BITS + (slot >>> 5)]! & (1 << (slot & 31))) !== 0) {
        // Already held by this slot: one more reference.
        if (this.#ent[base + SLOT] === slot) {
          this.#ent[base + REF]!++;
          return ~e;
        }
        const n = this.#nodeOf.get(e, slot);
        this.#nodeRef[n]!++;
        return n;
      }
      if (this.#ent[base + SLOT] === NONE) handle = this.#takeEntryHolding(e, slot);
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
    const ent = this.#ent;
    const base = e * this.#stride;
    const holders = ++ent[base + HOLDERS]!;
    ent[base + BITS + (slot >>> 5)]! |= 1 << (slot & 31);
    this.#entryOf.setAuxAt(pos, holders === 1 ? slot : -holders);
    this.#unique[slot]!++;
    this.#holdings++;
    return handle;
  }

  /**
   * acquire() for `count` hashes (u32 halves, see u32Halves) at once, handles into `out`.
   * Hot path (every booking): a block the slot already holds through its entry — a shared
   * prompt prefix — only gets its refcount raised, found with one probe.
   */
  acquireAll(slot: number, halves: Uint32Array, count: number, out: Int32Array): void {
    const entryOf = this.#entryOf;
    const bit = 1 << (slot & 31);
    const word = BITS + (slot >>> 5);
    for (let i = 0; i < count; i++) {
      const lo = halves[2 * i]!;
      const hi = halves[2 * i + 1]!;
      const pos = entryOf.find(lo, hi);
      if (pos !== NONE) {
        const e = entryOf.valueAt(pos);
        const base = e * this.#stride;
        const ent = this.#ent;
        if (ent[base + SLOT] === slot && (ent[base + word]! & bit) !== 0) {
          ent[base + REF]!++;
          out[i] = ~e;
          continue;
        }
      }
      out[i] = this.acquire(slot, lo, hi);
    }
  }

  #takeEntryHolding(e: number, slot: number): number {
    const base = e * this.#stride;
    this.#ent[base + SLOT] = slot;
    this.#ent[base + REF] = 1;
    this.#ent[base + HAS_FRAC] = 0;
    return ~e;
  }

  /** Refcount − 1; at 0 the slot no longer holds the block (and its fraction goes). */
  release(handle: number): void {
    const ent = this.#ent;
    const stride = this.#stride;
    let e: number;
    let slot: number;
    if (handle < 0) {
      e = ~handle;
      if (--ent[e * stride + REF]! > 0) return;
      slot = ent[e * stride + SLOT]!;
      this.#clearFraction(handle, slot);
      ent[e * stride + SLOT] = NONE;
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
    const base = e * stride;
    ent[base + BITS + (slot >>> 5)]! &= ~(1 << (slot & 31));
    const holders = --ent[base + HOLDERS]!;
    if (holders === 0) {
      this.#entryOf.delete(ent[base + LO]!, ent[base + HI]!);
      ent[base + HOLDERS] = this.#freeEntry;
      this.#freeEntry = e;
      this.#entries--;
      return;
    }
    const pos = this.#entryOf.find(ent[base + LO]!, ent[base + HI]!);
    this.#entryOf.setAuxAt(pos, holders === 1 ? this.#onlyHolder(e) : -holders);
  }

  #onlyHolder(e: number): number {
    const at = e * this.#stride + BITS;
    for (let w = 0; w < this.#words; w++) {
      const word = this.#ent[at + w]!;
      if (word !== 0) return (w << 5) + 31 - Math.clz32(word & -word);
    }
    return NONE;
  }

  refCount(handle: number): number {
    return handle < 0 ? this.#ent[~handle * this.#stride + REF]! : this.#nodeRef[handle]!;
  }

  /** Count the block as `fraction` of a block in its slot's active total (Dynamo's ActiveSequences). */
  setFraction(handle: number, fraction: number): void {
    const slot = handle < 0 ? this.#ent[~handle * this.#stride + SLOT]! : this.#nodeSlot[handle]!;
    this.#clearFraction(handle, slot);
    if (handle < 0) {
      this.#ent[~handle * this.#stride + HAS_FRAC] = 1;
      this.#entFrac[~handle] = fraction;
    } else this.#nodeFrac[handle] = fraction;
    this.#deficit[slot]! += 1 - fraction;
    this.#fracCount[slot]!++;
  }

  #clearFraction(handle: number, slot: number): void {
    let f: number;
    if (handle < 0) {
      const at = ~handle * this.#stride + HAS_FRAC;
      if (this.#ent[at] === 0) return;
      this.#ent[at] = 0;
      f = this.#entFrac[~handle]!;
    } else {
      f = this.#nodeFrac[handle]!;
      if (Number.isNaN(f)) return;
      this.#nodeFrac[handle] = NaN;
    }
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
    return e !== NONE && (this.#ent[e * this.#stride + BITS + (slot >>> 5)]! & (1 << (slot & 31))) !== 0;
  }

  /**
   * For each slot, add to `out[slot]` how many of `count` hashes (u32 halves, see
   * u32Halves) it already holds. Duplicates in the input count each time, as in Dynamo.
   */
  countHeld(halves: Uint32Array, count: number, out: Int32Array): void {
    const entryOf = this.#entryOf;
    const ent = this.#ent;
    const stride = this.#stride;
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
          const a = e * stride + BITS;
          const b = run * stride + BITS;
          for (let w = 0; w < W; w++) {
            if (ent[a + w] !== ent[b + w]) {
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
    const at = entry * this.#stride + BITS;
    for (let w = 0; w < this.#words; w++) {
      let word = this.#ent[at + w]!;
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
    if (e !== NONE) this.#freeEntry = this.#ent[e * this.#stride + HOLDERS]!;
    else {
      e = this.#entHigh++;
      if (e >= this.#entCap) this.#resizeEntries(this.#entCap * 2, this.#words);
    }
    const base = e * this.#stride;
    const ent = this.#ent;
    ent[base + LO] = lo;
    ent[base + HI] = hi;
    ent[base + HOLDERS] = 0;
    ent[base + SLOT] = NONE;
    for (let w = base + BITS, end = w + this.#words; w < end; w++) ent[w] = 0;
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

  /** Reallocate entry records for `cap` entries and `words` bitset words each. */
  #resizeEntries(cap: number, words: number): void {
    let stride = 8;
    while (stride < BITS + words) stride *= 2;
    const old = this.#ent;
    const oldStride = this.#stride;
    const ent = new Int32Array(cap * stride);
    const keep = BITS + this.#words;
    for (let e = 0; e < this.#entHigh; e++) ent.set(old.subarray(e * oldStride, e * oldStride + keep), e * stride);
    this.#ent = ent;
    this.#stride = stride;
    this.#words = words;
    if (cap !== this.#entCap) this.#entFrac = grow(this.#entFrac, new Float64Array(cap));
    this.#entCap = cap;
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
    const words = Math.ceil(cap / 32);
    if (words > this.#words) this.#resizeEntries(this.#entCap, words);
  }
}

function grow<T extends Int32Array | Uint32Array | Float64Array | Uint8Array>(old: T, bigger: T): T {
  bigger.set(old as never);
  return bigger;
}
