/**
 * `--policy llm-d`: the llm-d inference scheduler's default scheduling profile, as the
 * InferencePool chart ships it (default-plugins.yaml, llm-d/llm-d-inference-scheduler and
 * gateway-api-inference-extension config/charts/inferencepool, 2025-26): prefix-cache-scorer
 * weight 3, queue-scorer weight 2, kv-cache-utilization-scorer weight 2, max-score-picker.
 *   prefix-cache-scorer  matched prefix blocks ÷ prompt blocks, on its own LRU index of its own
 *                        decisions (hashBlockSize 64, maxPrefixBlocksToMatch 256,
 *                        lruCapacityPerServer 31 250: 2 M tokens per server)
 *   queue-scorer         (max q − q) ÷ (max q − min q) over the candidates, 1 when all equal
 *   kv-cache-utilization 1 − KV usage
 *   max-score-picker     the highest Σ weight × score, ties uniformly at random
 * The router has no engine gauges on this path, so queue = the router's in-flight requests on
 * the endpoint and KV usage = its active blocks ÷ the largest active blocks among the candidates
 * (an approximation of vLLM's gauges, said in bench/README.md). Blocks are the router's block
 * size, not 64 tokens; the LRU capacity and match limit are converted to tokens. Pure.
 */
import type { Candidate, Picker, SchedulingContext } from "../types.ts";
import { DecisionIndex } from "./decision-index.ts";

export const LLMD_WEIGHTS = { prefix: 3, queue: 2, kvUtilization: 2 } as const;
const LRU_TOKENS_PER_SERVER = 31_250 * 64;
const MAX_MATCH_TOKENS = 256 * 64;

/** Queue scorer: min-max normalised, fewer queued is better. */
export function queueScore(q: number, minQ: number, maxQ: number): number {
  return maxQ === minQ ? 1 : (maxQ - q) / (maxQ - minQ);
}

/** Prefix scorer: share of the prompt's blocks (up to the match limit) found on the endpoint. */
export function prefixScore(matched: number, total: number): number {
  return total === 0 ? 0 : matched / total;
}

export function llmdPicker(blockSize: number): Picker & { readonly index: DecisionIndex } {
  const index = new DecisionIndex(Math.max(1, Math.floor(LRU_TOKENS_PER_SERVER / blockSize)));
  const maxBlocks = Math.max(1, Math.floor(MAX_MATCH_TOKENS / blockSize));
  return {
    type: "llm-d-max-score",
    index,
    pick(ctx: SchedulingContext, candidates: readonly Candidate[]): Candidate {
      const all = ctx.request.seqHashes;
      const hashes = all && all.length > maxBlocks ? all.subarray(0, maxBlocks) : all;
      const total = hashes?.length ?? 0;
      const chosen = maxScorePick(ctx, candidates, (c) =>
        prefixScore(index.matchDepth(c.key, hashes), total),
      );
      index.record(chosen.key, hashes);
      return chosen;
    },
  };
}

/**
 * The default profile's scoring and max-score picker over the candidates, given each one's
 * prefix score (the prefix scorers differ between the profiles; queue and KV utilisation do not).
 */
export function maxScorePick(
  ctx: SchedulingContext,
  candidates: readonly Candidate[],
  prefixScoreOf: (c: Candidate) => number,
): Candidate {
  let minQ = Infinity;
  let maxQ = -Infinity;
  let maxBlocksHeld = 0;
  for (const c of candidates) {
    minQ = Math.min(minQ, c.activeRequests);
    maxQ = Math.max(maxQ, c.activeRequests);
    maxBlocksHeld = Math.max(maxBlocksHeld, c.activeDecodeBlocks);
  }
  let best = -Infinity;
  let tied: Candidate[] = [];
  for (const c of candidates) {
    const usage = maxBlocksHeld === 0 ? 0 : c.activeDecodeBlocks / maxBlocksHeld;
    const score =
      LLMD_WEIGHTS.prefix * prefixScoreOf(c) +
      LLMD_WEIGHTS.queue * queueScore(c.activeRequests, minQ, maxQ) +
      LLMD_WEIGHTS.kvUtilization * (1 - usage);
    c.cost = -score; // visible in the debug candidates list like every other policy's cost
    if (score > best) {
      best = score;
      tied = [c];
    } else if (score === best) tied.push(c);
  }
  return tied[Math.floor(ctx.rng() * tied.length)]!;
}
