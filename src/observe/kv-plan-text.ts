/**
 * The line a routing decision's KV plan shows as (access log `kv_plan`, /debug/decisions, the status
 * page): "96 blocks pulled from worker X rank 0, predicted 41 ms, observed 38 ms". Read
 * structurally from the router's plan (src/router/kv-plan/plan.ts KvPlan), whose observed TTFT
 * is filled in when its first token comes.
 */
export interface KvPlanView {
  readonly kind: "load" | "pull";
  readonly media: readonly string[];
  readonly from?: { readonly workerId: bigint; readonly dpRank: number };
  readonly blocks: number;
  readonly predictedTtftMs: number;
  readonly observedTtftMs?: number;
}

export function kvPlanText(p: KvPlanView, observedTtftMs = p.observedTtftMs): string {
  const what =
    p.kind === "pull" && p.from !== undefined
      ? `${p.blocks} blocks pulled from worker ${p.from.workerId} rank ${p.from.dpRank}`
      : `${p.blocks} blocks loaded from ${p.media.join(" and ")}`;
  const seen = observedTtftMs === undefined ? "" : `, observed ${Math.round(observedTtftMs)} ms`;
  return `${what}, predicted ${Math.round(p.predictedTtftMs)} ms${seen}`;
}
