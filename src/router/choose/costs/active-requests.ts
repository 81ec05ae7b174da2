/**
 * Queue depth: one unit per request already running on the worker. Optional extra term
 * (Dynamo's newer decode_active_request_weight); it spreads requests when the kv cost
 * alone would keep choosing one hot worker.
 */
import type { Candidate, CostTerm, SchedulingContext } from "../types.ts";

export const activeRequestsCost = {
  type: "active-requests",
  cost(_ctx: SchedulingContext, c: Candidate): number {
    return c.activeRequests;
  },
} satisfies CostTerm;
