/**
 * Busy ranks (Dynamo's SchedulerQueue): a rank is busy when its active prefill tokens exceed
 * threshold × max_num_batched_tokens (engines that report none get 10 M, so never busy).
 *
 * Dynamo uses this test only to decide whether to queue (when EVERY rank is busy); as a
 * filter it also steers a request away from individually busy ranks. When all are busy the
 * run fails with `all_workers_busy`, which a queue or the HTTP edge can act on.
 * `allWorkersBusy` is the exact predicate of Dynamo's SchedulerQueue for a queue to use.
 */
import type { WorkerId } from "../../../core/ids.ts";
import { DEFAULT_MAX_BATCHED_TOKENS } from "../config.ts";
import type { LoadTracker } from "../../books/load-tracker.ts";
import type { Candidate, Endpoint, Filter, SchedulingContext } from "../types.ts";

function isBusy(activeTokens: number, endpoint: Endpoint, threshold: number): boolean {
  return activeTokens > threshold * (endpoint.maxNumBatchedTokens ?? DEFAULT_MAX_BATCHED_TOKENS);
}

export function busyThreshold(threshold: number): Filter {
  return {
    type: "busy-threshold",
    whenEmpty: "all_workers_busy",
    filter(_ctx: SchedulingContext, candidates: readonly Candidate[]): readonly Candidate[] {
      for (const c of candidates) {
        if (isBusy(c.activePrefillTokens, c.endpoint, threshold)) {
          return candidates.filter((x) => !isBusy(x.activePrefillTokens, x.endpoint, threshold));
        }
      }
      return candidates;
    },
  };
}

/**
 * Dynamo's `all_workers_busy`: true only if every eligible rank is busy; false when no rank
 * was checked (so scheduling reports no_endpoints rather than queueing forever).
 */
export function allWorkersBusy(
  endpoints: readonly Endpoint[],
  tracker: LoadTracker,
  threshold: number,
  now: number,
  allowed?: ReadonlySet<WorkerId>,
): boolean {
  let checked = 0;
  for (const e of endpoints) {
    if (allowed && !allowed.has(e.worker.workerId)) continue;
    checked++;
    if (!isBusy(tracker.activeTokens(e.key, now), e, threshold)) return false;
  }
  return checked > 0;
}
