/**
 * Reference-counted active blocks for every (worker, dp_rank) slot at once (Dynamo's ActiveSequences
 * `unique_blocks` + `fractional_blocks`), in typed arrays.
 *
 * - An *entry* is one distinct sequence hash held by at least one slot. It carries the set
 *   of the slots holding it (the one slot inline; a bitset row of holder-rows.ts only when
 *   several do, so an entry is 32 bytes whatever the number of workers: a bitset in every
 *   entry cost 512 bytes a booked block with 2,000 workers registered), and its hash-table
 *   bucket carries a summary of that set: the slot itself when one slot holds it, else
 *   −(number of holders).
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
import { HolderRows } from "../holder-rows.ts";
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
/** The one slot holding the block (HOLDERS = 1), else NONE. */
const SOLE = 6;
/** The holders' bitset row in #rows (HOLDERS >= 2), else NONE. */
const ROW = 7;
/** Int32s per entry record. */
const STRIDE = 8;
/** Entries (and extra holdings) the tables start with, and go back to when nothing is booked. */
const INITIAL_ENTRIES = 1024;

export class BlockRefs {
  /** (hash lo, hash hi) → entry; aux = holder summary (slot if one holder, else −holders). */
  readonly #entryOf = new Hash64Table(1024);
  /** (entry, slot) → node, for holders other than the entry's own. */
  readonly #nodeOf = new Hash64Table(1024);
  /** Holder sets of the entries several slots hold. */
  readonly #rows = new HolderRows();
  #stride = STRIDE;
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
    this.#fitRows();
    this.#unique[s] = 0;
    this.#deficit[s] = 0;
    this.#fracCount[s] = 0;
    return s;
  }

  /** Give a slot index back; the slot must hold no block any more. */
  releaseSlot(slot: number): void {
    if (this.#unique[slot] !== 0)
      throw new Error(`slot ${slot} still holds ${this.#unique[slot]} blocks`);
    this.#slotInUse[slot] = 0;
    this.#fitRows(); // narrower when the last slots left
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
      if (this.#holds(base, slot)) {
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
    const holders = this.#addHolder(e * this.#stride, slot);
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
    for (let i = 0; i < count; i++) {
      const lo = halves[2 * i]!;
      const hi = halves[2 * i + 1]!;
      const pos = entryOf.find(lo, hi);
      if (pos !== NONE) {
        const e = entryOf.valueAt(pos);
        const base = e * this.#stride;
        const ent = this.#ent;
        // The entry's own holding is this slot's: it holds the block already.
        if (ent[base + SLOT] === slot) {
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
    const holders = this.#removeHolder(base, slot);
    if (holders === 0) {
      this.#entryOf.delete(ent[base + LO]!, ent[base + HI]!);
      ent[base + HOLDERS] = this.#freeEntry;
      this.#freeEntry = e;
      if (--this.#entries === 0) this.#shrinkWhenEmpty();
      return;
    }
    const pos = this.#entryOf.find(ent[base + LO]!, ent[base + HI]!);
    this.#entryOf.setAuxAt(pos, holders === 1 ? ent[base + SOLE]! : -holders);
  }

  /** Whether the entry at `base` is held by `slot`. */
  #holds(base: number, slot: number): boolean {
    const holders = this.#ent[base + HOLDERS]!;
    if (holders === 1) return this.#ent[base + SOLE] === slot;
    return holders > 1 && this.#rows.has(this.#ent[base + ROW]!, slot);
  }

  /** Add `slot` (not a holder yet) to the entry's holders; returns their number. */
  #addHolder(base: number, slot: number): number {
    const ent = this.#ent;
    const holders = ent[base + HOLDERS]!;
    if (holders === 0) ent[base + SOLE] = slot;
    else if (holders === 1) {
      const row = this.#rows.alloc();
      this.#rows.set(row, ent[base + SOLE]!);
      this.#rows.set(row, slot);
      ent[base + ROW] = row;
      ent[base + SOLE] = NONE;
    } else this.#rows.set(ent[base + ROW]!, slot);
    return (ent[base + HOLDERS] = holders + 1);
  }

  /** Remove `slot` (a holder) from the entry's holders; returns how many are left. */
  #removeHolder(base: number, slot: number): number {
    const ent = this.#ent;
    const holders = ent[base + HOLDERS]! - 1;
    if (holders === 0) ent[base + SOLE] = NONE;
    else {
      const row = ent[base + ROW]!;
      this.#rows.clear(row, slot);
      if (holders === 1) {
        // One holder left: back inline, the row freed (and the rows compacted once mostly free).
        ent[base + SOLE] = this.#rows.first(row);
        ent[base + ROW] = NONE;
        this.#rows.free(row);
        if (this.#rows.sparse) this.#compactRows();
      }
    }
    ent[base + HOLDERS] = holders;
    return holders;
  }

  /**
   * Nothing is booked any more: no handle is held, so the records can start over small
   * instead of keeping the peak (entries cannot be renumbered while handles point at them).
   */
  #shrinkWhenEmpty(): void {
    if (this.#entCap <= INITIAL_ENTRIES && this.#nodeSlot.length <= INITIAL_ENTRIES) return;
    this.#entCap = INITIAL_ENTRIES;
    this.#ent = new Int32Array(INITIAL_ENTRIES * STRIDE);
    this.#entFrac = new Float64Array(INITIAL_ENTRIES);
    this.#freeEntry = NONE;
    this.#entHigh = 0;
    this.#nodeEntry = new Int32Array(INITIAL_ENTRIES);
    this.#nodeSlot = new Int32Array(INITIAL_ENTRIES);
    this.#nodeRef = new Int32Array(INITIAL_ENTRIES);
    this.#nodeFrac = new Float64Array(INITIAL_ENTRIES);
    this.#freeNode = NONE;
    this.#nodeHigh = 0;
  }

  #compactRows(): void {
    const ent = this.#ent;
    const high = this.#entHigh;
    // A free entry's ROW is NONE (it lost its holders one by one): only live shared entries move.
    this.#rows.compact((move) => {
      for (let e = 0; e < high; e++) {
        const at = e * STRIDE + ROW;
        if (ent[at]! >= 0) ent[at] = move(ent[at]!);
      }
    });
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
    return e !== NONE && this.#holds(e * this.#stride, slot);
  }

  /**
   * For each slot, add to `out[slot]` how many of `count` hashes (u32 halves, see
   * u32Halves) it already holds. Duplicates in the input count each time, as in Dynamo.
   */
  countHeld(halves: Uint32Array, count: number, out: Int32Array): void {
    const entryOf = this.#entryOf;
    const ent = this.#ent;
    const stride = this.#stride;
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
        if (aux >= 0 || this.#rows.same(ent[e * stride + ROW]!, ent[run * stride + ROW]!)) {
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

  /**
   * countHeld for one prompt's sequence hashes, each chaining the whole prefix before it.
   * Every booked sequence is a run from its first block, so the slots holding block i+1 are a
   * subset of those holding block i: the holder set only shrinks along the prompt, each set
   * covers one stretch, and the first block nobody holds ends it. So each stretch is found by
   * galloping and bisecting (O(log n) probes) instead of probing every block: a new prompt's
   * unique tail costs one probe, a long cached conversation a few dozen instead of thousands.
   */
  countHeldPrefix(halves: Uint32Array, count: number, out: Int32Array): void {
    let i = 0;
    while (i < count) {
      const pos = this.#entryOf.find(halves[2 * i]!, halves[2 * i + 1]!);
      if (pos === NONE) return;
      const e = this.#entryOf.valueAt(pos);
      const aux = this.#entryOf.auxAt(pos);
      // Largest j with the same holders as i: gallop to a block that differs (or the end), bisect.
      let same = i;
      let step = 1;
      let differs = count;
      while (same + step < count) {
        if (!this.#sameHolders(halves, same + step, e, aux)) {
          differs = same + step;
          break;
        }
        same += step;
        step *= 2;
      }
      while (differs - same > 1) {
        const mid = (same + differs) >>> 1;
        if (this.#sameHolders(halves, mid, e, aux)) same = mid;
        else differs = mid;
      }
      this.#addRun(e, aux, same - i + 1, out);
      i = same + 1;
    }
  }

  /** Whether block `i` of `halves` is held by exactly the slots of entry `e` (aux as auxAt gives it). */
  #sameHolders(halves: Uint32Array, i: number, e: number, aux: number): boolean {
    const pos = this.#entryOf.find(halves[2 * i]!, halves[2 * i + 1]!);
    if (pos === NONE) return false;
    const f = this.#entryOf.valueAt(pos);
    if (f === e) return true;
    if (this.#entryOf.auxAt(pos) !== aux) return false;
    if (aux >= 0) return true; // the same single holder
    // Several holders, as many on both: the same set when their bitset rows match.
    return this.#rows.same(this.#ent[e * this.#stride + ROW]!, this.#ent[f * this.#stride + ROW]!);
  }

  #addRun(entry: number, aux: number, runLen: number, out: Int32Array): void {
    if (aux >= 0) {
      out[aux]! += runLen;
      return;
    }
    const rows = this.#rows;
    const at = this.#ent[entry * this.#stride + ROW]! * rows.words;
    for (let w = 0; w < rows.words; w++) {
      let word = rows.bits[at + w]!;
      while (word !== 0) {
        const low = word & -word;
        out[(w << 5) + 31 - Math.clz32(low)]! += runLen;
        word ^= low;
      }
    }
  }

  /** Bytes of the typed arrays (entries, holder rows, extra holdings; the hash tables aside). */
  get bytes(): number {
    return (
      this.#ent.byteLength +
      this.#entFrac.byteLength +
      this.#rows.bytes() +
      this.#nodeSlot.length * 20
    );
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
      if (e >= this.#entCap) this.#resizeEntries(this.#entCap * 2);
    }
    const base = e * this.#stride;
    const ent = this.#ent;
    ent[base + LO] = lo;
    ent[base + HI] = hi;
    ent[base + HOLDERS] = 0;
    ent[base + SLOT] = NONE;
    ent[base + SOLE] = NONE;
    ent[base + ROW] = NONE;
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

  /** Reallocate entry records for `cap` entries. */
  #resizeEntries(cap: number): void {
    this.#ent = grow(this.#ent, new Int32Array(cap * STRIDE));
    this.#entFrac = grow(this.#entFrac, new Float64Array(cap));
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
  }

  /** Holder rows as wide as the slots in use (registration and removal only: one scan). */
  #fitRows(): void {
    let span = this.#slotInUse.length;
    while (span > 0 && this.#slotInUse[span - 1] === 0) span--;
    this.#rows.fit(span);
  }
}

function grow<T extends Int32Array | Uint32Array | Float64Array | Uint8Array>(
  old: T,
  bigger: T,
): T {
  bigger.set(old as never);
  return bigger;
}
