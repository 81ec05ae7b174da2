/**
 * `--policy sglang`: SGLang model gateway's `cache_aware` policy with its CLI defaults, read from
 * sgl-project/sglang sgl-model-gateway/src/policies/cache_aware.rs (@ 053b63f) and the gateway's
 * CLI defaults (cache_threshold 0.3, balance_abs_threshold 64, balance_rel_threshold 1.5,
 * eviction_interval 120 s, max_tree_size 67 108 864):
 *   1. load = the router's in-flight requests per worker; imbalanced when
 *      max − min > abs_threshold AND max > min × rel_threshold → the least-loaded worker.
 *   2. otherwise the worker whose approximate tree holds the longest prefix of the prompt, when
 *      matched / prompt length > cache_threshold; below it, the worker with the smallest tree.
 *   3. either way the chosen worker's tree learns the prompt (its own decisions, no KV events).
 * Differences, on purpose: the tree is per block (chained sequence hashes) instead of per
 * character; max_tree_size (characters there) becomes max_tree_size / block size hashes here,
 * evicted least recently used at insertion rather than every 120 s; ties at the deepest match go
 * to the first candidate in endpoint order. Pure; its state lives in the picker.
 */
import type { Candidate, Picker, SchedulingContext } from "../types.ts";
import { DecisionIndex } from "./decision-index.ts";

export interface SglangCacheAwareOptions {
  readonly cacheThreshold: number;
  readonly balanceAbsThreshold: number;
  readonly balanceRelThreshold: number;
  readonly maxTreeSize: number;
}

export const SGLANG_DEFAULTS: SglangCacheAwareOptions = {
  cacheThreshold: 0.3,
  balanceAbsThreshold: 64,
  balanceRelThreshold: 1.5,
  maxTreeSize: 67_108_864,
};

export function sglangCacheAwarePicker(
  blockSize: number,
  o: SglangCacheAwareOptions = SGLANG_DEFAULTS,
): Picker & { readonly tree: DecisionIndex } {
  const tree = new DecisionIndex(Math.max(1, Math.ceil(o.maxTreeSize / blockSize)));
  return {
    type: "sglang-cache-aware",
    tree,
    pick(ctx: SchedulingContext, candidates: readonly Candidate[]): Candidate {
      const chosen = choose(ctx, candidates, tree, o);
      tree.record(chosen.key, ctx.request.seqHashes);
      return chosen;
    },
  };
}

function choose(
  ctx: SchedulingContext,
  candidates: readonly Candidate[],
  tree: DecisionIndex,
  o: SglangCacheAwareOptions,
): Candidate {
  let min = Infinity;
  let max = 0;
  let least = candidates[0]!;
  for (const c of candidates) {
    if (c.activeRequests < min) {
      min = c.activeRequests;
      least = c;
    }
    if (c.activeRequests > max) max = c.activeRequests;
  }
  if (max - min > o.balanceAbsThreshold && max > min * o.balanceRelThreshold) return least;

  let best = candidates[0]!;
  let depth = -1;
  let smallest = candidates[0]!;
  let smallestSize = Infinity;
  for (const c of candidates) {
    const d = tree.matchDepth(c.key, ctx.request.seqHashes);
    if (d > depth) {
      depth = d;
      best = c;
    }
    const s = tree.size(c.key);
    if (s < smallestSize) {
      smallestSize = s;
      smallest = c;
    }
  }
  const matchRate = Math.min(1, (depth * ctx.blockSize) / ctx.request.isl);
  return matchRate > o.cacheThreshold ? best : smallest;
}
