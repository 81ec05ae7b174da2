/**
 * `--policy dynamo`: Dynamo's KV router with its defaults (ai-dynamo/dynamo, `impl Default for
 * KvRouterConfig`: overlap_score_weight 1.0, router_temperature 0.0, read 2026-11-24; the cost and
 * tie-breaks as Dynamo's DefaultWorkerSelector has them): cost = overlap_score_weight (1) ×
 * prefill blocks + decode blocks, minimum
 * with tree-size then random ties at router_temperature 0; no overlap credit, no in-flight
 * prefix, no load bound. The busy threshold applies as configured (--busy-threshold), as in
 * Dynamo. Reads the precise (KV event) index, like `kv`. `--overlap-weight` and
 * `--temperature` still apply, as Dynamo's own flags do.
 *
 * Lower tiers, as Dynamo credits them: a fixed share of each block its engine holds beyond the
 * GPU prefix on the host tier (host_cache_hit_weight 0.75) or on disk (disk_cache_hit_weight
 * 0.25) comes off the prefill blocks, clamped at 0 (lib/kv-router/src/scheduling/config.rs
 * @0243c51bb6e8 default_host_cache_hit_weight / default_disk_cache_hit_weight;
 * selector/default.rs @07a6c9ce3bb0 worker_logit: overlap_credit_blocks = credit × device +
 * host weight × host blocks + disk weight × disk blocks, adjusted = max(raw − credit, 0); the
 * host and disk blocks are the "extension" beyond the previous tier, as the index's tierScores
 * reaches give them). Dynamo tells the engine nothing: its KV connector loads what it holds.
 * An engine that reports no tier is priced exactly as before.
 */
import type { SchedulerConfig } from "../config.ts";
import { dynamoKvCost } from "../costs/dynamo-kv.ts";
import { temperaturePicker } from "../pickers/temperature.ts";
import type { Candidate, CostTerm, Filter, Pipeline, SchedulingContext } from "../types.ts";

export const DYNAMO_TIER_WEIGHTS = { cpu: 0.75, disk: 0.25 } as const;

/** Blocks of the prompt the candidate's host and disk tiers hold beyond its GPU prefix. */
export function tierExtensions(
  ctx: SchedulingContext,
  c: Candidate,
): { cpu: number; disk: number } {
  const tiers = ctx.request.overlaps.tierScores;
  if (tiers === undefined) return { cpu: 0, disk: 0 };
  const gpu = ctx.request.overlaps.scores.get(c.key) ?? 0;
  const cpu = Math.max(gpu, tiers.get("cpu")?.get(c.key) ?? 0);
  const disk = Math.max(cpu, tiers.get("disk")?.get(c.key) ?? 0);
  return { cpu: cpu - gpu, disk: disk - cpu };
}

export const dynamoTieredKvCost = {
  type: "dynamo-tiered-kv",
  cost(ctx: SchedulingContext, c: Candidate): number {
    const ext = tierExtensions(ctx, c);
    if (ext.cpu === 0 && ext.disk === 0) return dynamoKvCost.cost(ctx, c);
    const credit = DYNAMO_TIER_WEIGHTS.cpu * ext.cpu + DYNAMO_TIER_WEIGHTS.disk * ext.disk;
    const prefill = Math.max(0, c.prefillTokens / ctx.blockSize - credit);
    return ctx.overlapScoreWeight * prefill + c.decodeBlocks;
  },
} satisfies CostTerm;

export function dynamoPipeline(eligibility: Filter[], _config: SchedulerConfig): Pipeline {
  return {
    name: "dynamo",
    filters: eligibility,
    costs: [{ term: dynamoTieredKvCost, weight: 1 }],
    picker: temperaturePicker,
    inflightOverlap: false,
  };
}
