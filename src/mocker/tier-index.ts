/**
 * Which block sits in which slot of one lower tier (the host pool or the disk pool) of a rank:
 * a fixed number of slots, least-recently-used eviction of unpinned blocks, pins for blocks being
 * loaded or copied. Unlike the GPU prefix cache it holds blocks in any order (evicted leaves
 * arrive one by one), so it keeps each block's parent and tokens hash to describe it in events.
 * Pure bookkeeping: no bytes, no I/O, no events.
 */

export interface TierBlock {
  readonly blockHash: bigint;
  readonly parentHash: bigint | null;
  readonly tokensHash: bigint;
}

interface Entry extends TierBlock {
  readonly slot: number;
  pins: number;
}

export class TierIndex {
  readonly capacity: number;
  /** Insertion order is the LRU order: a touch re-inserts. */
  readonly #entries = new Map<bigint, Entry>();
  readonly #free: number[] = [];

  constructor(capacity: number) {
    if (!(Number.isInteger(capacity) && capacity > 0))
      throw new RangeError(`tier capacity must be a positive integer (got ${capacity})`);
    this.capacity = capacity;
    for (let s = capacity - 1; s >= 0; s--) this.#free.push(s);
  }

  get size(): number {
    return this.#entries.size;
  }

  has(hash: bigint): boolean {
    return this.#entries.has(hash);
  }

  slotOf(hash: bigint): number | undefined {
    return this.#entries.get(hash)?.slot;
  }

  get(hash: bigint): TierBlock | undefined {
    return this.#entries.get(hash);
  }

  /** Most recently used now. */
  touch(hash: bigint): void {
    const e = this.#entries.get(hash);
    if (e === undefined) return;
    this.#entries.delete(hash);
    this.#entries.set(hash, e);
  }

  pin(hash: bigint): void {
    const e = this.#entries.get(hash);
    if (e === undefined) throw new Error(`block ${hash} is not in this tier`);
    e.pins++;
  }

  unpin(hash: bigint): void {
    const e = this.#entries.get(hash);
    if (e === undefined || e.pins <= 0)
      throw new Error(`block ${hash} unpinned more often than pinned`);
    e.pins--;
  }

  /**
   * A slot for `block`: a free one, else the least recently used unpinned block's (pushed to
   * `evicted` with its slot, so the caller can move it further down before overwriting). Null
   * when every block is pinned. The block must not be held already.
   */
  insert(block: TierBlock, evicted: (TierBlock & { slot: number })[]): number | null {
    if (this.#entries.has(block.blockHash))
      throw new Error(`block ${block.blockHash} is already in this tier`);
    let slot = this.#free.pop();
    if (slot === undefined) {
      for (const e of this.#entries.values()) {
        if (e.pins > 0) continue;
        this.#entries.delete(e.blockHash);
        evicted.push({
          blockHash: e.blockHash,
          parentHash: e.parentHash,
          tokensHash: e.tokensHash,
          slot: e.slot,
        });
        slot = e.slot;
        break;
      }
    }
    if (slot === undefined) return null;
    this.#entries.set(block.blockHash, {
      blockHash: block.blockHash,
      parentHash: block.parentHash,
      tokensHash: block.tokensHash,
      slot,
      pins: 0,
    });
    return slot;
  }

  /** Forget `hash` (its slot becomes free). False when it was not held. */
  remove(hash: bigint): boolean {
    const e = this.#entries.get(hash);
    if (e === undefined) return false;
    this.#entries.delete(hash);
    this.#free.push(e.slot);
    return true;
  }

  /** Every block held, least recently used first. */
  blocks(): TierBlock[] {
    return [...this.#entries.values()].map(({ blockHash, parentHash, tokensHash }) => ({
      blockHash,
      parentHash,
      tokensHash,
    }));
  }

  clear(): void {
    this.#entries.clear();
    this.#free.length = 0;
    for (let s = this.capacity - 1; s >= 0; s--) this.#free.push(s);
  }
}
