/**
 * The KV side of one dp rank: its prefix cache, its event log, and the translation of cache changes
 * into KV events (`stored` / `removed` / `cleared` of src/core/events.ts) with correct parents and
 * dense ids. Pure: events are handed to `emit` (the publisher) as they are made; time plays no
 * part.
 *
 * A request holds a `KvLease` from `begin` (cached prefix pinned, at prefill start) through
 * `commit` (its remaining blocks stored, at prefill end) to `release` (request finished).
 */
import type { KvCacheEventData, RouterEvent, StoredBlock } from "../core/events.ts";
import type { DpRank, EventId, WorkerId } from "../core/ids.ts";
import { RankEventLog, type WorkerKvQueryResponse } from "./event-log.ts";
import { PrefixCache } from "./prefix-cache.ts";

export interface KvLease {
  /** Cache slots of the pinned blocks, `pinned` of them. */
  readonly slots: Int32Array;
  pinned: number;
  /** Leading blocks that were already cached at `begin`. */
  readonly cachedBlocks: number;
  readonly generation: number;
}

export interface RankKvOptions {
  workerId: WorkerId;
  dpRank: DpRank;
  capacity: number;
  bufferSize?: number;
  /** Receives every event as it is made (in id order). */
  emit?: (event: RouterEvent) => void;
  /**
   * The fault `--fault-drop-events`: this share of events is lost before it gets an id, as when
   * vLLM's publisher queue is full (the event is dropped, the next one takes the next sequence
   * number), so no gap says so. `random` decides which.
   */
  dropEvents?: { readonly share: number; readonly random: () => number };
}

export class RankKv {
  readonly cache: PrefixCache;
  readonly log: RankEventLog;
  private readonly emit: (event: RouterEvent) => void;
  private readonly drop: RankKvOptions["dropEvents"];

  constructor(o: RankKvOptions) {
    this.cache = new PrefixCache(o.capacity);
    this.log = new RankEventLog(o.workerId, o.dpRank, () => this.dump(), o.bufferSize);
    this.emit = o.emit ?? (() => {});
    this.drop = o.dropEvents !== undefined && o.dropEvents.share > 0 ? o.dropEvents : undefined;
  }

  private record(data: KvCacheEventData): void {
    const drop = this.drop;
    if (drop !== undefined && drop.random() < drop.share) return;
    this.emit(this.log.append(data));
  }

  /**
   * Pin the cached prefix of a request's engine block hashes, at most `maxHitBlocks` of them. vLLM
   * caps a hit at the prompt's length minus one token, so a prompt cached whole recomputes its last
   * block for the logits (vllm/v1/core/kv_cache_manager.py get_computed_blocks at ace980e:
   * `max_cache_hit_length = request.num_tokens - 1`); the caller passes floor((n - 1) / block size).
   */
  begin(hashes: BigUint64Array, maxHitBlocks = hashes.length): KvLease {
    const n = Math.min(this.cache.matchPrefix(hashes), maxHitBlocks);
    const slots = new Int32Array(hashes.length);
    this.cache.pinPrefix(hashes, n, slots);
    return { slots, pinned: n, cachedBlocks: n, generation: this.cache.generation };
  }

  /**
   * Store the request's blocks after its cached prefix (evicting as needed) and emit one
   * Removed event for the evictions, then one Stored event per run of new blocks.
   * A lease from before a clear/restart stores nothing: its prefix is gone.
   */
  commit(lease: KvLease, hashes: BigUint64Array, tokensHashes: BigUint64Array): void {
    if (lease.generation !== this.cache.generation) return;
    const stored: number[] = [];
    const evicted: bigint[] = [];
    lease.pinned = this.cache.storeAndPin(hashes, tokensHashes, lease.pinned, lease.slots, stored, evicted);
    if (evicted.length > 0) this.record({ type: "removed", blockHashes: evicted });
    let i = 0;
    while (i < stored.length) {
      // A run of consecutive new blocks is one Stored event whose parent is the block before it.
      const start = stored[i]!;
      const blocks: StoredBlock[] = [];
      let j = start;
      while (i < stored.length && stored[i] === j) {
        blocks.push({ blockHash: hashes[j]!, tokensHash: tokensHashes[j]! });
        i++;
        j++;
      }
      this.record({ type: "stored", parentHash: start > 0 ? hashes[start - 1]! : null, blocks });
    }
  }

  /** Unpin everything the lease holds (idempotent). */
  release(lease: KvLease): void {
    if (lease.generation === this.cache.generation) this.cache.release(lease.slots, lease.pinned);
    lease.pinned = 0;
  }

  /** Drop every block and emit `Cleared` (leases taken before become inert). */
  clear(): void {
    this.cache.clear();
    this.record({ type: "cleared" });
  }

  /** Simulated engine restart: empty cache, event ids from 0 again, no event. */
  restart(): void {
    this.cache.clear();
    this.log.reset();
  }

  /**
   * One Stored event per cached block, parents before children, so replaying them in order
   * rebuilds the tree; ids 0..n-1 are synthetic (a dump carries no history), as Dynamo's tree dump.
   */
  dump(): RouterEvent[] {
    const { workerId, dpRank } = this.log;
    return this.cache.blocks().map((b, i) => ({
      workerId,
      event: {
        eventId: BigInt(i),
        dpRank,
        data: { type: "stored", parentHash: b.parentHash, blocks: [{ blockHash: b.blockHash, tokensHash: b.tokensHash }] },
      },
    }));
  }

  /** The recovery query (src/protocol/kv-query.ts) for this rank. */
  query(startId?: EventId, endId?: EventId): WorkerKvQueryResponse {
    return this.log.query(startId, endId);
  }
}
