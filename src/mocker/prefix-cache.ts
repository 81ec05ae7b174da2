/**
 * One dp rank's block-level prefix cache: a fixed number of slots, keyed by engine block
 * hash, with LRU eviction of unreferenced blocks. Blocks used by running requests are
 * pinned (reference-counted) and never evicted.
 *
 * Parents stay at least as recently used as their children: a request touches its whole
 * prefix, and releases its blocks last-to-first, so the LRU end always holds leaves and
 * eviction never orphans a cached block (the set stays prefix-closed, as a tree dump needs).
 *
 * Pure and allocation-light: slots live in typed arrays; the LRU is an intrusive doubly
 * linked list over slot indexes. It emits no events; callers turn its outputs into events.
 */

const NONE = -1;

export interface CachedBlock {
  readonly blockHash: bigint;
  readonly parentHash: bigint | null;
  readonly tokensHash: bigint;
  /** Position of the block in its sequence (0 = first block). */
  readonly depth: number;
}

/** A block evicted from the cache, with what a lower tier needs to describe it and the slot it left. */
export interface EvictedBlock extends CachedBlock {
  readonly slot: number;
}

export class PrefixCache {
  readonly capacity: number;
  /** Bumped by clear(); slot indexes taken before a clear must not be released after it. */
  generation = 0;

  private readonly index = new Map<bigint, number>();
  private readonly hash: BigUint64Array;
  private readonly parent: BigUint64Array;
  private readonly hasParent: Uint8Array;
  private readonly tokensHash: BigUint64Array;
  private readonly depth: Uint32Array;
  private readonly refs: Int32Array;
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  /** Oldest (next to evict) and newest unpinned blocks. */
  private lruHead = NONE;
  private lruTail = NONE;
  private readonly free: Int32Array;
  private freeTop = 0;
  private pinned = 0;

  constructor(capacity: number) {
    if (!(Number.isInteger(capacity) && capacity > 0))
      throw new RangeError(`capacity must be a positive integer (got ${capacity})`);
    this.capacity = capacity;
    this.hash = new BigUint64Array(capacity);
    this.parent = new BigUint64Array(capacity);
    this.hasParent = new Uint8Array(capacity);
    this.tokensHash = new BigUint64Array(capacity);
    this.depth = new Uint32Array(capacity);
    this.refs = new Int32Array(capacity);
    this.prev = new Int32Array(capacity);
    this.next = new Int32Array(capacity);
    this.free = new Int32Array(capacity);
    this.resetSlots();
  }

  /** Blocks held. */
  get size(): number {
    return this.index.size;
  }

  /** Blocks referenced by at least one running request. */
  get pinnedCount(): number {
    return this.pinned;
  }

  has(blockHash: bigint): boolean {
    return this.index.has(blockHash);
  }

  isPinned(blockHash: bigint): boolean {
    const s = this.index.get(blockHash);
    return s !== undefined && this.refs[s]! > 0;
  }

  /** How many leading blocks of `hashes` are cached. No side effects. */
  matchPrefix(hashes: BigUint64Array): number {
    let n = 0;
    while (n < hashes.length && this.index.has(hashes[n]!)) n++;
    return n;
  }

  /** Pin the first `n` blocks (all must be cached) into `slotsOut[0..n)`. */
  pinPrefix(hashes: BigUint64Array, n: number, slotsOut: Int32Array): void {
    for (let i = 0; i < n; i++) {
      const s = this.index.get(hashes[i]!);
      if (s === undefined) throw new Error(`block ${hashes[i]} is not cached`);
      this.pin(s);
      slotsOut[i] = s;
    }
  }

  /**
   * Make blocks `from..` of a sequence resident and pinned, allocating (and evicting the
   * least recently used unpinned blocks) as needed. Blocks already cached are just pinned.
   * Stops at the first block that finds no slot (everything is pinned): later blocks would
   * have no cached parent. Block `from - 1`, when `from > 0`, must already be pinned.
   *
   * @param stored  receives the indexes of newly stored blocks (ascending)
   * @param evicted receives the hashes of evicted blocks (in eviction order)
   * @param upTo    store blocks before this index only (default: all)
   * @param evictedInfo receives each evicted block's description and slot (a lower tier copies it from there)
   * @returns the index after the last pinned block (`upTo` when all fit)
   */
  storeAndPin(
    hashes: BigUint64Array,
    tokensHashes: BigUint64Array,
    from: number,
    slotsOut: Int32Array,
    stored: number[],
    evicted: bigint[],
    upTo: number = hashes.length,
    evictedInfo?: EvictedBlock[],
  ): number {
    for (let i = from; i < upTo; i++) {
      const h = hashes[i]!;
      let s = this.index.get(h);
      if (s === undefined) {
        s = this.allocate(evicted, evictedInfo);
        if (s === NONE) return i;
        this.hash[s] = h;
        this.tokensHash[s] = tokensHashes[i]!;
        this.depth[s] = i;
        this.hasParent[s] = i > 0 ? 1 : 0;
        this.parent[s] = i > 0 ? hashes[i - 1]! : 0n;
        this.index.set(h, s);
        stored.push(i);
      }
      this.pin(s);
      slotsOut[i] = s;
    }
    return upTo;
  }

  /**
   * Release `slots[0..n)` taken by pinPrefix/storeAndPin, last block first, so that the
   * tail of a sequence becomes older than its head and is evicted first.
   */
  release(slots: Int32Array, n: number): void {
    for (let i = n - 1; i >= 0; i--) this.unpin(slots[i]!);
  }

  /** Drop every block, pinned or not. */
  clear(): void {
    this.index.clear();
    this.resetSlots();
    this.generation++;
  }

  /** Every cached block, parents before children (ordered by depth). */
  blocks(): CachedBlock[] {
    const slots = [...this.index.values()].sort((a, b) => this.depth[a]! - this.depth[b]!);
    return slots.map((s) => ({
      blockHash: this.hash[s]!,
      parentHash: this.hasParent[s] ? this.parent[s]! : null,
      tokensHash: this.tokensHash[s]!,
      depth: this.depth[s]!,
    }));
  }

  /** Unpinned blocks from the next to evict to the most recently used (for tests). */
  lruOrder(): bigint[] {
    const out: bigint[] = [];
    for (let s = this.lruHead; s !== NONE; s = this.next[s]!) out.push(this.hash[s]!);
    return out;
  }

  // ------------------------------------------------------------------ internals

  private resetSlots(): void {
    this.refs.fill(0);
    this.prev.fill(NONE);
    this.next.fill(NONE);
    this.lruHead = this.lruTail = NONE;
    this.pinned = 0;
    // Hand out low slots first (pop from the top of the stack).
    for (let i = 0; i < this.capacity; i++) this.free[i] = this.capacity - 1 - i;
    this.freeTop = this.capacity;
  }

  private allocate(evicted: bigint[], info?: EvictedBlock[]): number {
    if (this.freeTop > 0) return this.free[--this.freeTop]!;
    const s = this.lruHead;
    if (s === NONE) return NONE;
    this.unlink(s);
    this.index.delete(this.hash[s]!);
    evicted.push(this.hash[s]!);
    info?.push({
      blockHash: this.hash[s]!,
      parentHash: this.hasParent[s] ? this.parent[s]! : null,
      tokensHash: this.tokensHash[s]!,
      depth: this.depth[s]!,
      slot: s,
    });
    return s;
  }

  private pin(s: number): void {
    if (this.refs[s] === 0) {
      if (this.isLinked(s)) this.unlink(s);
      this.pinned++;
    }
    this.refs[s]!++;
  }

  private unpin(s: number): void {
    const r = this.refs[s]!;
    if (r <= 0) throw new Error(`slot ${s} released more often than pinned`);
    this.refs[s] = r - 1;
    if (r === 1) {
      this.pinned--;
      this.append(s);
    }
  }

  private isLinked(s: number): boolean {
    return this.lruHead === s || this.prev[s] !== NONE;
  }

  private unlink(s: number): void {
    const p = this.prev[s]!;
    const n = this.next[s]!;
    if (p === NONE) this.lruHead = n;
    else this.next[p] = n;
    if (n === NONE) this.lruTail = p;
    else this.prev[n] = p;
    this.prev[s] = this.next[s] = NONE;
  }

  private append(s: number): void {
    this.prev[s] = this.lruTail;
    this.next[s] = NONE;
    if (this.lruTail === NONE) this.lruHead = s;
    else this.next[this.lruTail] = s;
    this.lruTail = s;
  }
}
