/**
 * The engine's own queue: one unit per request the rank's engine reports waiting
 * (vllm:num_requests_waiting / sglang:num_queue_reqs, scraped by the worker layer and passed
 * in as `request.engineWaiting`). Optional (--engine-load-weight, in blocks per waiting
 * request). A router's own bookings are the whole truth only when it is the engine's only
 * client; with several routers (no shared load) or other clients, the engine's queue shows
 * what the bookings miss. Ranks without a report cost nothing. It reads no metrics itself.
 */
import type { Candidate, CostTerm, SchedulingContext } from "../types.ts";

export const engineWaitingCost = {
  type: "engine-waiting",
  cost(ctx: SchedulingContext, c: Candidate): number {
    return ctx.request.engineWaiting?.get(c.key) ?? 0;
  },
} satisfies CostTerm;
