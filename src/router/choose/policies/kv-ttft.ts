/**
 * `--policy kv` (the default): route on predicted time to first token. Each candidate costs its
 * predicted TTFT (costs/predicted-ttft.ts: the prefill queued ahead there and this request's
 * uncached tokens there, at that engine's learned speed, plus its overhead) plus the delay its
 * prefill would cause the requests queuing behind it at the cluster's load
 * (costs/delay-to-others.ts, which also prices the decode steps the request's prefix group's
 * coming requests will meet there: costs/group-decodes.ts), both in milliseconds; the cheapest wins, and among candidates
 * within one block's prefill time of it, the one that leaves the cache better placed
 * (pickers/fastest-then-cache.ts). In-flight prefixes count as cached where they are being
 * computed: an engine that prefills one request after another will have them when it gets to
 * this one, which is what lets a burst of siblings wait for the first where that is faster.
 * One configuration: nothing here is a knob.
 */
import { delayToOthersCost } from "../costs/delay-to-others.ts";
import { predictedTtftCost } from "../costs/predicted-ttft.ts";
import { fastestThenCachePicker, type Tolerance } from "../pickers/fastest-then-cache.ts";
import type { Filter, Pipeline } from "../types.ts";

/**
 * One block's prefill on the cheapest candidate: finer than that, predictions built from
 * block-granular cache knowledge cannot tell two engines apart.
 */
export const ONE_BLOCK: Tolerance = (ctx, best) =>
  ctx.ttft === undefined ? 0 : (best.msPerToken ?? ctx.ttft.msPerTokenOf(best.key)) * ctx.blockSize;

export function kvTtftPipeline(eligibility: Filter[]): Pipeline {
  return {
    name: "kv",
    filters: eligibility,
    costs: [
      { term: predictedTtftCost, weight: 1 },
      { term: delayToOthersCost(), weight: 1 },
    ],
    picker: fastestThenCachePicker(ONE_BLOCK),
    inflightOverlap: true,
    predictsTtft: true,
  };
}
