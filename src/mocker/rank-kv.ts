/**
 * The KV side of one dp rank: its prefix cache, its event log, and the translation of cache changes
 * into KV events (`stored` / `removed` / `cleared` of src/core/events.ts) with correct parents and
 * dense ids. Pure: events are handed to `emit` (the publisher) as they are made; time plays no
 * part.
 *
 * A request holds a `KvLease` from `begin` (cached prefix pinned, at prefill start) through
 * `commit` (its remaining blocks stored, at prefill end) to `release` (request finished).
 */
import type { KvCacheEventData, KvMedium, RouterEvent, StoredBlock } from "../core/events.ts";
import type { DpRank, EventId, WorkerId } from "../core/ids.ts";
import { RankEventLog, type WorkerKvQueryResponse } from "./event-log.ts";
import { type EvictedBlock, PrefixCache } from "./prefix-cache.ts";
import type { TierBlock } from "./tier-index.ts";

export interface CommitResult {
  /** Blocks evicted to make room, with the slots they left (a lower tier copies them from there first). */
  readonly evicted: readonly EvictedBlock[];
  /** Indexes (in the prompt) of the blocks newly stored. */
  readonly stored: readonly number[];
}

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
   * `upTo` stores only the blocks before it (blocks loaded from a lower tier, ahead of the
   * computed rest). Returns the blocks evicted (with their slots) and the indexes newly stored.
   */
  commit(
    lease: KvLease,
    hashes: BigUint64Array,
    tokensHashes: BigUint64Array,
    upTo: number = hashes.length,
  ): CommitResult {
    if (lease.generation !== this.cache.generation) return { evicted: [], stored: [] };
    const stored: number[] = [];
    const evicted: bigint[] = [];
    const evictedInfo: EvictedBlock[] = [];
    lease.pinned = this.cache.storeAndPin(
      hashes,
      tokensHashes,
      lease.pinned,
      lease.slots,
      stored,
      evicted,
      upTo,
      evictedInfo,
    );
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
    return { evicted: evictedInfo, stored };
  }

  /** An event about a lower tier (CPU or disk) of this rank, in the same id sequence as the GPU's. */
  recordTier(data: KvCacheEventData, medium: KvMedium): void {
    const drop = this.drop;
    if (drop !== undefined && drop.random() < drop.share) return;
    this.emit(this.log.append(data, medium));
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
    const out: RouterEvent[] = this.cache.blocks().map((b, i) => ({
      workerId,
      event: {
        eventId: BigInt(i),
        dpRank,
        data: {
          type: "stored",
          parentHash: b.parentHash,
          blocks: [{ blockHash: b.blockHash, tokensHash: b.tokensHash }],
        },
      },
    }));
    // Then each lower tier's blocks with their medium (each names its own parent).
    for (const { medium, blocks } of this.lowerTiers?.() ?? []) {
      for (const b of blocks) {
        const data: KvCacheEventData = {
          type: "stored",
          parentHash: b.parentHash,
          blocks: [{ blockHash: b.blockHash, tokensHash: b.tokensHash }],
        };
        out.push({ workerId, event: { eventId: BigInt(out.length), dpRank, data, medium } });
      }
    }
    return out;
  }

  /** The blocks of this rank's lower tiers, for tree dumps (set once the tiers exist). */
  lowerTiers: (() => readonly { medium: KvMedium; blocks: readonly TierBlock[] }[]) | undefined;

  /** The recovery query (src/protocol/kv-query.ts) for this rank. */
  query(startId?: EventId, endId?: EventId): WorkerKvQueryResponse {
    return this.log.query(startId, endId);
  }
}
