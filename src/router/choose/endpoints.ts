/**
 * Endpoint lists: expand workers into their (worker, dp_rank) endpoints once per
 * membership change, so each request reuses the keys instead of formatting bigints.
 */
import { keyOf, type DpRank, type WorkerId } from "../../core/ids.ts";
import type { Endpoint } from "./types.ts";

/** A worker as the registry describes it (Dynamo's per-worker runtime config, which its DefaultWorkerSelector reads). */
export interface WorkerDescription {
  readonly workerId: WorkerId;
  /** First dp rank (default 0). */
  readonly dpStart?: DpRank;
  /** Number of dp ranks (default 1). */
  readonly dpSize?: number;
  readonly maxNumBatchedTokens?: number;
  readonly healthy?: boolean;
}

/** One endpoint per rank in [dpStart, dpStart + dpSize), in worker order then rank order. */
export function endpointsOf(workers: Iterable<WorkerDescription>): Endpoint[] {
  const out: Endpoint[] = [];
  for (const w of workers) {
    const start = w.dpStart ?? 0;
    const size = w.dpSize ?? 1;
    for (let r = start; r < start + size; r++) {
      out.push(endpoint(w.workerId, r, w));
    }
  }
  return out;
}

export function endpoint(
  workerId: WorkerId | number,
  dpRank: DpRank = 0,
  facts: { readonly maxNumBatchedTokens?: number; readonly healthy?: boolean } = {},
): Endpoint {
  const worker = { workerId: BigInt(workerId), dpRank };
  return {
    worker,
    key: keyOf(worker),
    maxNumBatchedTokens: facts.maxNumBatchedTokens,
    healthy: facts.healthy,
  };
}
