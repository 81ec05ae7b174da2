/**
 * `--policy dynamo`: Dynamo's KV router with its defaults (ai-dynamo/dynamo, `impl Default for
 * KvRouterConfig`: overlap_score_weight 1.0, router_temperature 0.0, read 2026-11-24; the cost and
 * tie-breaks as Dynamo's DefaultWorkerSelector has them): cost = overlap_score_weight (1) ×
 * prefill blocks + decode blocks, minimum
 * with tree-size then random ties at router_temperature 0; no overlap credit, no in-flight
 * prefix, no load bound. The busy threshold applies as configured (--busy-threshold), as in
 * Dynamo. Reads the precise (KV event) index, like `kv`. `--overlap-weight` and
 * `--temperature` still apply, as Dynamo's own flags do.
 */
import type { SchedulerConfig } from "../config.ts";
import { dynamoKvCost } from "../costs/dynamo-kv.ts";
import { temperaturePicker } from "../pickers/temperature.ts";
import type { Filter, Pipeline } from "../types.ts";

export function dynamoPipeline(eligibility: Filter[], _config: SchedulerConfig): Pipeline {
  return {
    name: "dynamo",
    filters: eligibility,
    costs: [{ term: dynamoKvCost, weight: 1 }],
    picker: temperaturePicker,
    inflightOverlap: false,
  };
}
