/**
 * Dynamo's cost (§4.4, reference generation), lower is better:
 *   logit = overlap_score_weight × prefillTokens / blockSize + decodeBlocks
 * where prefillTokens = max(0, isl − overlap·blockSize) + active prefill tokens and
 * decodeBlocks = new blocks + active blocks (the candidate carries both, see candidates.ts).
 * The cache enters only through prefillTokens. With an external shared pool (§1.9) and a
 * multiplier m > 0, prefill tokens first drop by m × (pool hits beyond the worker's own
 * prefix) × blockSize, truncated at 0. Reads the candidate; never hashes or indexes.
 */
import { hitsBeyond } from "../shared-cache.ts";
import type { Candidate, CostTerm, SchedulingContext } from "../types.ts";

/** Prefill tokens after the shared-pool credit (Dynamo: trunc(max(0, p − m·beyond·bs))). */
export function creditedPrefillTokens(ctx: SchedulingContext, c: Candidate): number {
  const hits = ctx.request.sharedCacheHits;
  if (!hits || ctx.sharedCacheMultiplier === 0) return c.prefillTokens;
  const beyond = hitsBeyond(hits, c.overlapBlocks);
  return Math.trunc(Math.max(0, c.prefillTokens - ctx.sharedCacheMultiplier * beyond * ctx.blockSize));
}

export const dynamoKvCost = {
  type: "dynamo-kv",
  cost(ctx: SchedulingContext, c: Candidate): number {
    // Same operations in the same order as Dynamo, so ties compare equal exactly as there.
    const potentialPrefillBlocks = creditedPrefillTokens(ctx, c) / ctx.blockSize;
    return ctx.overlapScoreWeight * potentialPrefillBlocks + c.decodeBlocks;
  },
} satisfies CostTerm;

/** The arithmetic of one candidate's kv cost, for debug logs. */
export function explainDynamoKvCost(ctx: SchedulingContext, c: Candidate): string {
  const cost = dynamoKvCost.cost(ctx, c);
  return (
    `cost=${cost.toFixed(3)} = ${ctx.overlapScoreWeight}·${creditedPrefillTokens(ctx, c)}/${ctx.blockSize} + ${c.decodeBlocks}` +
    ` (worker=${c.key} overlap=${c.overlapBlocks} active_prefill=${c.activePrefillTokens} active_blocks=${c.activeDecodeBlocks})`
  );
}
