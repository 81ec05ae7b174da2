/**
 * Current load only, cache ignored (the least-loaded baseline): active prefill tokens in
 * block units plus active blocks, so both halves weigh like they do in the kv cost.
 */
import type { Candidate, CostTerm, SchedulingContext } from "../types.ts";

export const activeLoadCost = {
  type: "active-load",
  cost(ctx: SchedulingContext, c: Candidate): number {
    return c.activePrefillTokens / ctx.blockSize + c.activeDecodeBlocks;
  },
} satisfies CostTerm;
