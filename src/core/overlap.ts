/**
 * Overlap scores (Dynamo's OverlapScores): for each (worker, dp_rank), how many leading blocks of a
 * request it already holds, plus the size of its part of the index (tie-breaker, Dynamo's DefaultWorkerSelector).
 */
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
}

export function emptyOverlapScores(): OverlapScores {
  return { scores: new Map(), treeSizes: new Map(), frequencies: [] };
}
