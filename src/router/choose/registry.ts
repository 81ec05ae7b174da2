/**
 * Policy name → pipeline. Every policy starts with the same eligibility filters
 * (allowed ids, health, busy when configured); they differ in costs and picker:
 *   kv            predicted time to first token + the delay to the requests queuing behind,
 *                 fastest then best-cached within one block (policies/kv-ttft.ts); no knobs
 *   kv-blocks, approx
 *                 Dynamo cost (Dynamo's DefaultWorkerSelector), min with tree-size/random ties or softmax by temperature;
 *                 approx differs only in the indexer feeding it overlaps.
 *                 Optional: load guard filter, active-requests cost, overlap credit (config; off by default).
 *   least-loaded  active prefill + active blocks (cache ignored), min with random ties
 *   round-robin   next in endpoint order
 *   random        uniform draw
 * The peers' published defaults, one file each under policies/ (source and version cited there):
 *   dynamo             Dynamo's KV router: the kv cost alone, weight 1, temperature 0, no credit
 *   sglang             SGLang gateway cache_aware (own approximate tree, balance thresholds)
 *   llm-d              llm-d default profile (prefix 3, queue 2, KV utilisation 2, max score)
 *   llm-d-p2p          the same on the precise index with llm-d's tier weights (GPU 1, CPU 0.8)
 *                      and its P2P source producer (static minCachedTokenDelta)
 *   prodstack-prefix   production-stack prefixaware (hash trie of its own decisions, no load term)
 *   prodstack-session  production-stack session (consistent hash of X-Session-ID, else lowest rate)
 */
import type { SchedulerConfig } from "./config.ts";
import { activeLoadCost } from "./costs/active-load.ts";
import { activeRequestsCost } from "./costs/active-requests.ts";
import { dynamoKvCost } from "./costs/dynamo-kv.ts";
import { engineWaitingCost } from "./costs/engine-waiting.ts";
import { overlapCreditCost } from "./costs/overlap-credit.ts";
import { allowedWorkerIds } from "./filters/allowed-worker-ids.ts";
import { busyThreshold } from "./filters/busy-threshold.ts";
import { engineBusy } from "./filters/engine-busy.ts";
import { healthy } from "./filters/healthy.ts";
import { loadGuard } from "./filters/load-guard.ts";
import { prefillWaitBound } from "./filters/prefill-wait-bound.ts";
import { dynamoPipeline } from "./policies/dynamo.ts";
import { kvTtftPipeline } from "./policies/kv-ttft.ts";
import { llmdPicker } from "./policies/llm-d.ts";
import { llmdP2pPicker } from "./policies/llm-d-p2p.ts";
import { prodstackPrefixPicker, prodstackSessionPicker } from "./policies/prodstack.ts";
import { sglangCacheAwarePicker } from "./policies/sglang-cache-aware.ts";
import { minCostPicker } from "./pickers/min-cost.ts";
import { randomPicker } from "./pickers/random.ts";
import { roundRobinPicker } from "./pickers/round-robin.ts";
import { temperaturePicker } from "./pickers/temperature.ts";
import type { Filter, Pipeline, WeightedCost } from "./types.ts";

export const POLICY_NAMES = [
  "kv",
  "kv-blocks",
  "approx",
  "round-robin",
  "random",
  "least-loaded",
  "dynamo",
  "sglang",
  "llm-d",
  "llm-d-p2p",
  "prodstack-prefix",
  "prodstack-session",
] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

export function isPolicyName(name: string): name is PolicyName {
  return (POLICY_NAMES as readonly string[]).includes(name);
}

function eligibility(config: SchedulerConfig): Filter[] {
  // engine-busy filters only when the request carries busy ranks (engine metrics are on).
  const filters: Filter[] = [allowedWorkerIds, healthy, engineBusy];
  if (config.busyThreshold !== null) filters.push(busyThreshold(config.busyThreshold));
  return filters;
}

function kvPipeline(name: PolicyName, config: SchedulerConfig): Pipeline {
  const filters = eligibility(config);
  if (config.loadGuardFactor !== null)
    filters.push(loadGuard(config.loadGuardFactor, config.loadGuardMetric));
  if (config.prefillWaitFactor !== null)
    filters.push(prefillWaitBound(config.prefillWaitFactor, config.prefillWaitQueueShare));
  const costs: WeightedCost[] = [{ term: dynamoKvCost, weight: 1 }];
  if (config.activeRequestWeight !== 0)
    costs.push({ term: activeRequestsCost, weight: config.activeRequestWeight });
  if (config.overlapCredit !== 0)
    costs.push({ term: overlapCreditCost, weight: config.overlapCredit });
  if (config.engineWaitingWeight !== 0)
    costs.push({ term: engineWaitingCost, weight: config.engineWaitingWeight });
  return { name, filters, costs, picker: temperaturePicker };
}

/** A fresh pipeline (round-robin keeps its own counter, so build one per router). */
export function createPipeline(name: PolicyName, config: SchedulerConfig): Pipeline {
  switch (name) {
    case "kv":
      return kvTtftPipeline(eligibility(config));
    case "kv-blocks":
    case "approx":
      return kvPipeline(name, config);
    case "least-loaded":
      return {
        name,
        filters: eligibility(config),
        costs: [{ term: activeLoadCost, weight: 1 }],
        picker: minCostPicker({ treeSizeTieBreak: false }),
      };
    case "round-robin":
      return { name, filters: eligibility(config), costs: [], picker: roundRobinPicker() };
    case "random":
      return { name, filters: eligibility(config), costs: [], picker: randomPicker };
    case "dynamo":
      return dynamoPipeline(eligibility(config), config);
    case "sglang":
      return {
        name,
        filters: eligibility(config),
        costs: [],
        picker: sglangCacheAwarePicker(config.blockSize),
      };
    case "llm-d":
      return {
        name,
        filters: eligibility(config),
        costs: [],
        picker: llmdPicker(config.blockSize),
      };
    case "llm-d-p2p":
      return { name, filters: eligibility(config), costs: [], picker: llmdP2pPicker() };
    case "prodstack-prefix":
      return { name, filters: eligibility(config), costs: [], picker: prodstackPrefixPicker() };
    case "prodstack-session":
      return { name, filters: eligibility(config), costs: [], picker: prodstackSessionPicker() };
  }
}
