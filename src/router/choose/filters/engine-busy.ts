/**
 * Every rank busy by its engine's own account (waiting queue or KV usage past
 * the limits, read from the engine's /metrics by the worker layer and passed in as
 * `request.busyKeys`): fail with `all_workers_busy`, which sends the request to the
 * admission queue. While any candidate is not busy, nothing is filtered: like Dynamo's
 * queue trigger (Dynamo's SchedulerQueue) the test only decides whether to wait, it does not steer.
 * Steering away from individually busy ranks was measured and dropped: on the replay bench
 * past saturation it sent conversations away from the ranks holding their cache (hit rate
 * 0.049 -> 0.013, TTFT p99 5.0 s -> 12.1 s; bench/README.md). It reads no metrics itself.
 */
import type { Candidate, Filter, SchedulingContext } from "../types.ts";

export const engineBusy: Filter = {
  type: "engine-busy",
  whenEmpty: "all_workers_busy",
  filter(ctx: SchedulingContext, candidates: readonly Candidate[]): readonly Candidate[] {
    const busy = ctx.request.busyKeys;
    if (busy === undefined || busy.size === 0) return candidates;
    for (const c of candidates) if (!busy.has(c.key)) return candidates;
    return [];
  },
};
