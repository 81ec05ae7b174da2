/**
 * Load guard (optional, off by default): keep only candidates that would stay within
 * `factor` × the mean load after this request is placed on them. Load is measured in
 * "requests" (active request count, the default) or "blocks" (prefill tokens / blockSize +
 * decode blocks, the units of the kv cost; the candidate's potential values give the load
 * after placement). When no candidate would stay within the bound (e.g. every worker idle:
 * one request always makes max/mean = n), the least-loaded candidates are kept, so the
 * filter never empties the set.
 *
 * Why: the Dynamo cost rewards cache hits so strongly that a hot prefix can pile requests
 * onto one worker (a cached request costs few blocks, so the kv cost sees blocks balanced
 * while request counts are not); the guard caps any worker near `factor` × the mean while
 * the kv cost still chooses among the rest.
 */
import type { Candidate, Filter, SchedulingContext } from "../types.ts";

export const LOAD_METRICS = ["requests", "blocks"] as const;
export type LoadMetric = (typeof LOAD_METRICS)[number];

/** The candidate's load now. */
export function activeLoad(c: Candidate, blockSize: number, metric: LoadMetric): number {
  return metric === "requests"
    ? c.activeRequests
    : c.activePrefillTokens / blockSize + c.activeDecodeBlocks;
}

/** The candidate's load if this request went there. */
export function loadAfter(c: Candidate, blockSize: number, metric: LoadMetric): number {
  return metric === "requests"
    ? c.activeRequests + 1
    : c.prefillTokens / blockSize + c.decodeBlocks;
}

export function loadGuard(factor: number, metric: LoadMetric = "requests"): Filter {
  if (!(factor >= 1)) throw new Error(`load guard factor must be >= 1, got ${factor}`);
  return {
    type: "load-guard",
    filter(ctx: SchedulingContext, candidates: readonly Candidate[]): readonly Candidate[] {
      const n = candidates.length;
      if (n < 2) return candidates;
      const bs = ctx.blockSize;
      let sum = 0;
      let min = Infinity;
      for (const c of candidates) {
        const l = activeLoad(c, bs, metric);
        sum += l;
        if (l < min) min = l;
      }
      const within = (c: Candidate) => {
        const now = activeLoad(c, bs, metric);
        const after = loadAfter(c, bs, metric);
        return after * n <= factor * (sum - now + after);
      };
      const kept = candidates.filter(within);
      if (kept.length === n) return candidates;
      if (kept.length > 0) return kept;
      const least = candidates.filter((c) => activeLoad(c, bs, metric) === min);
      return least.length === n ? candidates : least;
    },
  };
}
