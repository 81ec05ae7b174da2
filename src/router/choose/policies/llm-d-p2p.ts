/**
 * `--policy llm-d-p2p`: llm-d's scheduler as its P2P KV-sharing guide deploys it: the default
 * profile's scorers and weights (policies/llm-d.ts: prefix 3, queue 2, KV utilisation 2,
 * max-score picker) with the precise prefix scorer (KV events, the router's index) weighting
 * each leading block by the best tier holding it, then the P2P source producer.
 *   tier weights      GPU 1.0, CPU 0.8 (llm-d/llm-d-router pkg/kvcache/backend.go @36da54d72db3,
 *                     DefaultKVCacheBackendConfig; the scorer takes each block's best tier along
 *                     the pod's leading run, pkg/kvcache LongestPrefixScorer). A disk tier is not
 *                     among the defaults, so it scores nothing.
 *   P2P producer      the candidate holding the most cached prompt tokens (unweighted) is named
 *                     as the KV source of the chosen endpoint when it out-caches it by at least
 *                     minCachedTokenDelta tokens (pkg/epp/framework/plugins/requestcontrol/
 *                     dataproducer/p2psource/producer.go @36c39bff8996, PreRequest). The code's
 *                     default is 1; the P2P guide ships 2048 in its recommended
 *                     epp-affinity-p2p.yaml, which this uses: a static threshold, not learned.
 * The pull is named on the same contract as kv's (edge/proxy/kv-source.ts); the plan carries no
 * predicted time (llm-d predicts none). Queue and KV usage are the router's estimates, as in
 * policies/llm-d.ts. Pure.
 */
import type { KvPlan } from "../../kv-plan/plan.ts";
import type { Candidate, Picker, SchedulingContext } from "../types.ts";
import { maxScorePick, prefixScore } from "./llm-d.ts";

export const LLMD_TIER_WEIGHTS = { gpu: 1.0, cpu: 0.8 } as const;
/** The P2P guide's recommended threshold (tokens). */
export const LLMD_MIN_CACHED_TOKEN_DELTA = 2048;

/** A candidate's leading blocks through its GPU then its CPU tier, and their weighted sum. */
export function tieredMatch(
  ctx: SchedulingContext,
  c: Candidate,
): { blocks: number; weighted: number } {
  const o = ctx.request.overlaps;
  const gpu = o.scores.get(c.key) ?? 0;
  const cpu = Math.max(gpu, o.tierScores?.get("cpu")?.get(c.key) ?? 0);
  return {
    blocks: cpu,
    weighted: gpu * LLMD_TIER_WEIGHTS.gpu + (cpu - gpu) * LLMD_TIER_WEIGHTS.cpu,
  };
}

export function llmdP2pPicker(minDelta = LLMD_MIN_CACHED_TOKEN_DELTA): Picker {
  return {
    type: "llm-d-p2p",
    pick(ctx: SchedulingContext, candidates: readonly Candidate[]): Candidate {
      const total = Math.ceil(ctx.request.isl / ctx.blockSize);
      const matches = new Map(candidates.map((c) => [c.key, tieredMatch(ctx, c)]));
      let source: Candidate | undefined;
      let sourceBlocks = 0;
      for (const c of candidates) {
        const blocks = matches.get(c.key)!.blocks;
        if (blocks > sourceBlocks) {
          source = c;
          sourceBlocks = blocks;
        }
      }
      const chosen = maxScorePick(ctx, candidates, (c) =>
        prefixScore(matches.get(c.key)!.weighted, total),
      );
      if (source === undefined || source.key === chosen.key) return chosen;
      const have = matches.get(chosen.key)!.blocks;
      if ((sourceBlocks - have) * ctx.blockSize < minDelta) return chosen;
      return { ...chosen, kvPlan: pullFrom(source, have, sourceBlocks, ctx.blockSize) };
    },
  };
}

function pullFrom(source: Candidate, from: number, to: number, blockSize: number): KvPlan {
  return {
    kind: "pull",
    media: [],
    from: source.endpoint.worker,
    fromKey: source.key,
    rates: [],
    fromBlock: from,
    blocks: to - from,
    tokens: (to - from) * blockSize,
    transferMs: 0,
    queuedMs: 0,
    computeMs: 0,
    predictedTtftMs: 0,
  };
}
