/**
 * Dynamo's cost (its DefaultWorkerSelector, reference generation), lower is better:
 *   logit = overlap_score_weight × prefillTokens / blockSize + decodeBlocks
 * where prefillTokens = max(0, isl − overlap·blockSize) + active prefill tokens and
 * decodeBlocks = new blocks + active blocks (the candidate carries both, see candidates.ts).
 * The cache enters only through prefillTokens. Reads the candidate; never hashes or indexes.
 */
import type { Candidate, CostTerm, SchedulingContext } from "../types.ts";

export const dynamoKvCost = {
  type: "dynamo-kv",
  cost(ctx: SchedulingContext, c: Candidate): number {
    // Same operations in the same order as Dynamo, so ties compare equal exactly as there.
    const potentialPrefillBlocks = c.prefillTokens / ctx.blockSize;
    return ctx.overlapScoreWeight * potentialPrefillBlocks + c.decodeBlocks;
  },
} satisfies CostTerm;

/** The arithmetic of one candidate's kv cost, for debug logs. */
export function explainDynamoKvCost(ctx: SchedulingContext, c: Candidate): string {
  const cost = dynamoKvCost.cost(ctx, c);
  return (
    `cost=${cost.toFixed(3)} = ${ctx.overlapScoreWeight}·${c.prefillTokens}/${ctx.blockSize} + ${c.decodeBlocks}` +
    ` (worker=${c.key} overlap=${c.overlapBlocks} active_prefill=${c.activePrefillTokens} active_blocks=${c.activeDecodeBlocks})`
  );
}
