/**
 * Overlap scores (Dynamo's OverlapScores): for each (worker, dp_rank), how many leading blocks of a
 * request it already holds, plus the size of its part of the index (tie-breaker, Dynamo's DefaultWorkerSelector).
 */
import type { KvMedium } from "./events.ts";
import type { WorkerKey, WorkerWithDpRank } from "./ids.ts";

export interface OverlapScores {
  /** Matched prefix depth in blocks; workers with 0 are absent. */
  readonly scores: Map<WorkerKey, number>;
  /** Blocks each scored worker has in the index. */
  readonly treeSizes: Map<WorkerKey, number>;
  /** Per visited node, its recent-use count (only when frequency tracking is on). */
  readonly frequencies: number[];
  /**
   * Blocks any worker has in the index, matching or not (treeSizes holds only the scored ones,
   * as Dynamo's does). Read lazily, by a tie-break among candidates that match nothing: a new
   * prefix is best placed where it evicts least. Absent: the index cannot say.
   */
  readonly indexBlocksOf?: (worker: WorkerWithDpRank) => number;
  /**
   * Per medium other than GPU (an engine's CPU or disk tier): how far into the request each
   * (worker, dp_rank) reaches through its own media, as its engine loads them: "cpu" is its GPU
   * prefix then the CPU-held blocks right after it, "disk" goes on over blocks on CPU or disk.
   * Cumulative, so gpu <= cpu <= disk (Dynamo's per-tier query shape), and a GPU head with a
   * CPU-only tail counts. Reported where the medium adds blocks or holds the first one.
   * `scores` stays the GPU's. Absent when no tier reaches any block (always, for engines that
   * report only GPU).
   */
  readonly tierScores?: ReadonlyMap<KvMedium, ReadonlyMap<WorkerKey, number>>;
}

export function emptyOverlapScores(): OverlapScores {
  return { scores: new Map(), treeSizes: new Map(), frequencies: [] };
}
