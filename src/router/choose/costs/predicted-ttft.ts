/**
 * The kv policy's cost: the candidate's predicted time to first token in milliseconds
 * (books/ttft-predictor.ts: the prefill queued ahead there ÷ that engine's learned rate, plus
 * this request's uncached tokens there ÷ rate, plus the engine's overhead). Lower is better.
 * It reads the prediction the candidate carries (candidates.ts); it predicts nothing itself.
 */
import type { Candidate, CostTerm, SchedulingContext } from "../types.ts";

export const predictedTtftCost = {
  type: "predicted-ttft",
  cost(_ctx: SchedulingContext, c: Candidate): number {
    return c.predictedTtftMs ?? Infinity;
  },
} satisfies CostTerm;
