/**
 * Ranks whose engine reports itself busy (issue 13: waiting queue or KV usage past the
 * limits, read from the engine's /metrics by the worker layer and passed in as
 * `request.busyKeys`). Like busy-threshold.ts it steers a request away from busy ranks and
 * fails with `all_workers_busy` when every candidate is busy, which sends the request to
 * the admission queue. No keys: nothing is filtered. It reads no metrics itself.
 */
import type { Candidate, Filter, SchedulingContext } from "../types.ts";

export const engineBusy: Filter = {
  type: "engine-busy",
  whenEmpty: "all_workers_busy",
  filter(ctx: SchedulingContext, candidates: readonly Candidate[]): readonly Candidate[] {
    const busy = ctx.request.busyKeys;
    if (busy === undefined || busy.size === 0) return candidates;
    for (const c of candidates) {
      if (busy.has(c.key)) return candidates.filter((x) => !busy.has(x.key));
    }
    return candidates;
  },
};
