/**
 * Prefill-wait bound (kv's default): keep only candidates where this request's prefill
 * would be done within `factor` × the best candidate's, plus `queueShare` × the candidates' mean
 * queued prefill. A candidate's `prefillTokens` is the prefill work queued ahead of the request
 * plus its own uncached part: the time to its first token in units of prefill work.
 *
 * Why: the overlap credit makes requests follow their cache, which is right until the warm
 * worker's queue costs more time than the cache saves; a fixed credit is right for one load and
 * wrong for another (bench/README.md). The bound is relative to what the cluster offers
 * right now, so it adapts: when every queue is long the cache keeps winning, when another worker
 * could serve the request much sooner the hot prefix is copied there (SGLang / Preble's
 * replication of a hot prefix), which also spreads computed work. The queue share loosens the
 * bound as the whole cluster gets busy: recomputing a prefix elsewhere costs every later request
 * time in proportion to how loaded the cluster is, so near saturation the cache should win more
 * often (queueing: the marginal delay of extra work grows with utilisation). Never empties the
 * set (the best candidate always passes).
 */
import type { Candidate, Filter, SchedulingContext } from "../types.ts";

export function prefillWaitBound(factor: number, queueShare: number): Filter {
  if (!(factor >= 1)) throw new Error(`prefill wait factor must be >= 1, got ${factor}`);
  if (!(queueShare >= 0))
    throw new Error(`prefill wait queue share must be >= 0, got ${queueShare}`);
  return {
    type: "prefill-wait-bound",
    filter(_ctx: SchedulingContext, candidates: readonly Candidate[]): readonly Candidate[] {
      if (candidates.length < 2) return candidates;
      let best = Infinity;
      let queued = 0;
      for (const c of candidates) {
        if (c.prefillTokens < best) best = c.prefillTokens;
        queued += c.activePrefillTokens;
      }
      const limit = factor * best + (queueShare * queued) / candidates.length;
      for (const c of candidates)
        if (c.prefillTokens > limit) return candidates.filter((x) => x.prefillTokens <= limit);
      return candidates;
    },
  };
}
