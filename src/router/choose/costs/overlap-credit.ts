/**
 * Cache affinity: a credit (negative cost) per prompt block already cached on the worker,
 * on top of the prefill it saves. Optional extra term (Dynamo's newer overlap_score_credit).
 *
 * Why: the kv cost is greedy for this request's time to first token, so a warm worker with a
 * prefill queue loses to an idle cold one. That request gains little, but its blocks now live
 * on a second worker, the conversation's next turn may land on either, and the duplicated
 * blocks push others out of the caches. A credit makes the router follow the cache unless
 * the warm worker's queue is worth more than `weight` blocks per cached block.
 */
import type { Candidate, CostTerm, SchedulingContext } from "../types.ts";

export const overlapCreditCost = {
  type: "overlap-credit",
  cost(_ctx: SchedulingContext, c: Candidate): number {
    return -c.overlapBlocks;
  },
} satisfies CostTerm;
