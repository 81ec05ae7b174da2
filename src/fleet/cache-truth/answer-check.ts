/**
 * One answer's cached tokens against what the router predicted for it on that engine. Pure.
 *
 * How vLLM counts what it reports as `usage.prompt_tokens_details.cached_tokens`
 * (`--enable-prompt-tokens-details`): the prefix-cache hit of the scheduler,
 * `KVCacheManager.get_computed_blocks` (vllm/v1/core/kv_cache_manager.py at ace980e), looks up
 * only full blocks (a block is hashed once it is full, so the last partial block never hits) and
 * caps the hit at `max_cache_hit_length = request.num_tokens - 1`: when the whole prompt is
 * cached the last token is recomputed for its logits, and since hits are whole blocks, a prompt
 * that is an exact multiple of the block size gives back its whole last block. The serving layer
 * writes `prompt_tokens_details` only when that count is not 0
 * (vllm/entrypoints/openai/serving_chat.py at 003fe59: `if self.enable_prompt_tokens_details and
 * num_cached_tokens`), so a missing count is 0 once the engine has shown that it reports them.
 */

/** What the router knew when it routed, and what the engine said. */
export interface AnswerFacts {
  /** The prompt's length as the router tokenized it. */
  readonly routerTokens: number;
  /** Blocks the router's index (not the fallback's) matched on the chosen (worker, dp rank). */
  readonly predictedBlocks: number;
  /**
   * Leading blocks that requests in flight on that (worker, dp rank) were computing when this
   * one was booked: the engine may serve them before their events reach the router.
   */
  readonly inFlightBlocks: number;
  /** Blocks the router hashed (it hashes a bounded prefix): hits past them cannot be judged. */
  readonly routedBlocks: number;
  /**
   * Blocks the index holds for the prompt on that rank now, at the answer's end (asked only for a hit
   * deeper or shallower than predicted): events that were on their way when the request was routed
   * (stores, or removals of an eviction) have come by then, so a view that is only late is not taken
   * for a false one. Events that never come do not.
   */
  readonly indexBlocksNow?: () => number;
  readonly blockSize: number;
  /** The engine's usage. */
  readonly promptTokens: number;
  readonly cachedTokens: number | undefined;
  /** This source has reported cached tokens before: a missing count means 0 (checkAnswer's second argument wins). */
  readonly speaksCached?: boolean;
  /**
   * The source sent removal events between this request's routing and its answer's end (checkAnswer's
   * third argument wins): the engine evicted meanwhile, so blocks the index held may have gone before
   * this request was served, and may be stored again (recomputed) by its end, where the index
   * cannot tell it from a false view.
   */
  readonly evictedMeanwhile?: boolean;
}

export type AnswerVerdict =
  /** The engine served exactly the predicted hit. */
  | "agree"
  /** Nothing to compare (the engine does not report cached tokens). */
  | "unchecked"
  /** The engine's prompt has another length: another chat template or tokenizer. */
  | "tokens_differ"
  /** A hit that is not whole blocks of the router's size. */
  | "block_size"
  /** The router predicted blocks the engine did not serve. */
  | "missed_hits"
  /** The engine served blocks the router never heard of. */
  | "unexpected_hits";

/** The cached tokens vLLM reports for a prompt of `tokens` with `blocks` leading blocks cached. */
export function expectedCachedTokens(blocks: number, tokens: number, blockSize: number): number {
  if (tokens <= 0) return 0;
  return Math.min(blocks, Math.floor((tokens - 1) / blockSize)) * blockSize;
}

export function checkAnswer(
  f: AnswerFacts,
  speaksCached = f.speaksCached === true,
  evictedMeanwhile = f.evictedMeanwhile === true,
): {
  verdict: AnswerVerdict;
  expected: number;
  cached: number;
} {
  const cached = f.cachedTokens ?? (speaksCached ? 0 : undefined);
  if (f.promptTokens !== f.routerTokens)
    return { verdict: "tokens_differ", expected: 0, cached: cached ?? 0 };
  if (cached === undefined) return { verdict: "unchecked", expected: 0, cached: 0 };
  const expected = expectedCachedTokens(f.predictedBlocks, f.routerTokens, f.blockSize);
  if (cached % f.blockSize !== 0) return { verdict: "block_size", expected, cached };
  if (cached === expected) return { verdict: "agree", expected, cached };
  if (cached < expected) {
    // Evicted between the routing and the serving (a small cache under load): the engine said so
    // with removal events. On a cache smaller than a prompt the blocks come back (recomputed,
    // stored again) before the answer ends, so the index asked then holds them again: the
    // removals are the evidence. A false view (a restart missed, another engine's events)
    // claims blocks nothing removed.
    if (evictedMeanwhile) return { verdict: "agree", expected, cached };
    // Removal events sent before the engine served the request are in by the answer's end, so the
    // index then holds no more than was served. A false view still claims the blocks then.
    if (
      f.indexBlocksNow !== undefined &&
      expectedCachedTokens(f.indexBlocksNow(), f.routerTokens, f.blockSize) <= cached
    )
      return { verdict: "agree", expected, cached };
    return { verdict: "missed_hits", expected, cached };
  }
  // A prefix another request was computing there: the router sent it, its events were on the way.
  if (
    cached <=
    expectedCachedTokens(Math.max(f.predictedBlocks, f.inFlightBlocks), f.routerTokens, f.blockSize)
  )
    return { verdict: "agree", expected, cached };
  // Past the hashed prefix the router predicts nothing, so a deeper hit is not news.
  if (f.predictedBlocks >= f.routedBlocks) return { verdict: "agree", expected, cached };
  if (
    f.indexBlocksNow !== undefined &&
    cached <= expectedCachedTokens(f.indexBlocksNow(), f.routerTokens, f.blockSize)
  )
    return { verdict: "agree", expected, cached };
  return { verdict: "unexpected_hits", expected, cached };
}
