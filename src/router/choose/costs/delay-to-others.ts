/**
 * The delay this request's prefill would cause the requests that queue behind it: its uncached
 * tokens there, at that engine's learned speed, times how many requests wait behind a prefill on
 * average at the cluster's load (M/M/1's mean queue length ρ² ÷ (1 − ρ)). Added to the predicted
 * TTFT it makes the kv cost the request's own time plus the time it costs others, in ms.
 *
 * Why: the fastest engine for this request is often a cold idle one, and at light load that is
 * right (nobody waits behind the copy). As the cluster fills, every prefix computed a second time
 * delays the requests that arrive before that engine drains, and its copy pushes other prefixes
 * out of the caches; the greedy TTFT gave up 10-15% of the oracle's hits and lost p90 past
 * saturation in the timing simulation (bench/README.md). Weighing the extra work by the queue it
 * will delay lets the cache win exactly as much as the load says, with nothing to tune.
 *
 * ρ is the share of engines found busy (a prefill booked) at this policy's decisions, smoothed
 * over about a hundred of them: arrivals see the time average (for Poisson arrivals exactly), so
 * this is the utilisation the requests meet. One estimate per pipeline (one per router).
 *
 * The others a placement delays also include its prefix group's coming requests, which follow the
 * cached prefix wherever this one puts it: the decode steps they will meet there are added
 * (costs/group-decodes.ts; 0 where decodes do not delay first tokens). And the requests the
 * candidate's own rank will draw while this prefill holds it (costs/arrivals-behind.ts), which
 * tells apart engines the cluster-wide weight prices alike.
 */
import type { Candidate, CostTerm, SchedulingContext } from "../types.ts";
import { arrivalsBehindMs } from "./arrivals-behind.ts";
import { groupDecodesCost, type GroupDecodes } from "./group-decodes.ts";

/** Weight of the newest decision in the busy share: about the last hundred decisions count. */
const SMOOTHING = 0.01;
/** ρ is held below this: at 1 the queue (and the weight) would be infinite. */
const MAX_RHO = 0.98;

export interface DelayToOthers extends CostTerm {
  /** The busy share the weight is computed from (for tests and debug). */
  readonly rho: number;
  /** Requests waiting behind a prefill at that share: the weight of this request's own prefill time. */
  readonly queueWeight: number;
  /** The prefix group's part (group-decodes.ts). */
  readonly group: GroupDecodes;
}

/** M/M/1's mean queue length at utilisation ρ. */
export const meanQueueLength = (r: number): number => (r * r) / (1 - r);

export function delayToOthersCost(
  weightAt: (rho: number) => number = meanQueueLength,
): DelayToOthers {
  let rho = 0;
  let weight = 0;
  const group = groupDecodesCost();
  return {
    group,
    type: "delay-to-others",
    get rho() {
      return rho;
    },
    get queueWeight() {
      return weight;
    },
    prepare(ctx: SchedulingContext, candidates: readonly Candidate[]): void {
      let busy = 0;
      for (const c of candidates) if ((c.prefillingRequests ?? 0) > 0) busy++;
      rho += SMOOTHING * (busy / candidates.length - rho);
      weight = weightAt(Math.min(MAX_RHO, rho));
      group.prepare!(ctx, candidates);
    },
    cost(ctx: SchedulingContext, c: Candidate): number {
      if (ctx.ttft === undefined) return 0;
      const queued =
        weight === 0
          ? 0
          : weight * (c.msPerToken ?? ctx.ttft.msPerTokenOf(c.key)) * (c.uncachedTokens ?? 0);
      return queued + arrivalsBehindMs(ctx, c) + group.cost(ctx, c);
    },
  };
}
