/**
 * Runs one policy for one request: filters in order (stop with an error when one leaves
 * nothing), then Σ weight·term per survivor, then the picker. It picks a worker; it does
 * not book load, and neither does find-best-match.ts: routing-service.ts books the chosen
 * worker through the request's lease (books/request-lease.ts).
 */
import { RouterError } from "../../core/errors.ts";
import type { Candidate, Pipeline, SchedulingContext } from "./types.ts";

export interface PipelineResult {
  readonly chosen: Candidate;
  /** The survivors of the filters, costs set. */
  readonly candidates: readonly Candidate[];
}

export function runPipeline(
  pipeline: Pipeline,
  ctx: SchedulingContext,
  candidates: readonly Candidate[],
): PipelineResult {
  if (candidates.length === 0) throw new RouterError("no_endpoints", "no workers to schedule on");
  let survivors = candidates;
  for (const f of pipeline.filters) {
    survivors = f.filter(ctx, survivors);
    if (survivors.length === 0) {
      const code = f.whenEmpty ?? "no_endpoints";
      throw new RouterError(
        code,
        `no worker left after filter ${f.type} (${candidates.length} candidates before filtering)`,
      );
    }
  }
  const costs = pipeline.costs;
  for (let i = 0; i < costs.length; i++) costs[i]!.term.prepare?.(ctx, survivors);
  for (const c of survivors) {
    let cost = 0;
    for (let i = 0; i < costs.length; i++) cost += costs[i]!.weight * costs[i]!.term.cost(ctx, c);
    c.cost = cost;
  }
  return { chosen: pipeline.picker.pick(ctx, survivors), candidates: survivors };
}
