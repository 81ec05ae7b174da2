/**
 * External routing (Dynamo's allowed_worker_ids): keep only the workers the caller allows.
 * A no-op when the request names no set. Never widens the candidate set.
 */
import type { Candidate, Filter, SchedulingContext } from "../types.ts";

export const allowedWorkerIds = {
  type: "allowed-worker-ids",
  filter(ctx: SchedulingContext, candidates: readonly Candidate[]): readonly Candidate[] {
    const allowed = ctx.request.allowedWorkerIds;
    if (!allowed) return candidates;
    return candidates.filter((c) => allowed.has(c.endpoint.worker.workerId));
  },
} satisfies Filter;
