/**
 * The cheapest candidate (Dynamo's DefaultWorkerSelector at temperature 0). Ties are exact float equality; among
 * tied candidates the smallest index tree size wins when tree sizes differ (the worker
 * with less cached data, so caches fill evenly), else one is drawn uniformly at random.
 */
import type { Candidate, Picker, SchedulingContext } from "../types.ts";

export interface MinCostOptions {
  /** Break ties by smallest tree size first (Dynamo); false = uniformly random only. */
  readonly treeSizeTieBreak: boolean;
}

export function minCostPicker(opts: MinCostOptions = { treeSizeTieBreak: true }): Picker {
  return {
    type: opts.treeSizeTieBreak ? "min-cost" : "min-cost-random-ties",
    pick: (ctx, candidates) => pickMinCost(ctx, candidates, opts.treeSizeTieBreak),
  };
}

export function pickMinCost(
  ctx: SchedulingContext,
  candidates: readonly Candidate[],
  treeSizeTieBreak: boolean,
): Candidate {
  let min = Infinity;
  let ties = 0;
  for (const c of candidates) {
    if (c.cost < min) {
      min = c.cost;
      ties = 1;
    } else if (c.cost === min) ties++;
  }
  if (ties <= 1) {
    for (const c of candidates) if (c.cost === min) return c;
    return candidates[0]!; // every cost NaN: nothing is comparable, take the first
  }
  const tied = candidates.filter((c) => c.cost === min);
  if (treeSizeTieBreak) {
    let best = tied[0]!;
    let allEqual = true;
    for (const c of tied) {
      if (c.treeSize !== best.treeSize) allEqual = false;
      if (c.treeSize < best.treeSize) best = c;
    }
    if (!allEqual) return best;
  }
  return tied[Math.floor(ctx.rng() * tied.length)]!;
}
