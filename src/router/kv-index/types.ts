/**
 * The contract every indexer (precise radix tree, approximate TTL index, none) fulfils.
 * The router, the recovery core and the benches code against this, never a concrete class.
 * PURE: no I/O; `now` (milliseconds, any monotonic origin) is passed in where time matters.
 */
import type { KvEventStatus, KvEventType, KvMedium, RouterEvent } from "../../core/events.ts";
import type { DpRank, WorkerId, WorkerKey, WorkerWithDpRank } from "../../core/ids.ts";
import type { OverlapScores } from "../../core/overlap.ts";

/** Events applied, by event type and outcome (the `kv_cache_events_applied` metric). */
export type EventCounters = Record<KvEventType, Record<KvEventStatus, number>>;

export interface KvIndex {
  /**
   * Apply one engine event (precise mode). A Cleared empties the (worker, dp_rank) that sent
   * it, never the worker's other ranks; the rank stays known. Never throws on bad input:
   * returns a status.
   */
  applyEvent(event: RouterEvent): KvEventStatus;
  /**
   * Overlap (leading matched blocks) per (worker, dp_rank) for a request's block hashes.
   * `now` (approximate mode) first expires entries whose TTL passed; ignored otherwise.
   */
  findMatches(localHashes: BigUint64Array, now?: number): OverlapScores;
  /** Worker removal: drop every block of every dp rank of a worker and forget the worker. */
  removeWorker(workerId: WorkerId): void;
  /** Drop every block of one (worker, dp_rank) and forget it (a reset, a restart, a lost stream). */
  removeWorkerDpRank(workerId: WorkerId, dpRank: DpRank): void;
  /** Events that, replayed in order into an empty index, rebuild an equal index. */
  dump(): RouterEvent[];
  /** Σ over workers of blocks held (a block held by k workers counts k times). */
  size(): number;
  /** Blocks held by one (worker, dp_rank). */
  workerSize(key: WorkerKey): number;
  /** Record the router's own decision (approximate mode); a no-op for the precise index. */
  recordDecision(
    localHashes: BigUint64Array,
    seqHashes: BigUint64Array,
    target: WorkerWithDpRank,
    now: number,
  ): void;
  /** Expire/prune approximate entries whose TTL passed; a no-op for the precise index. */
  expire(now: number): void;
  /** Events applied so far, by type and status (a fresh copy). */
  counters(): EventCounters;
  /** Tree nodes alive besides the root (leak checks, memory metrics). */
  nodeCount(): number;
  /** Blocks one (worker, dp_rank) holds on one medium (the precise index; others hold GPU only). */
  mediumSize?(w: WorkerWithDpRank, medium: KvMedium): number;
  /** Whether any (worker, dp_rank) has a CPU or disk tier (the precise index; others: none). */
  hasTiers?(): boolean;
}
