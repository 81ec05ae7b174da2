/**
 * The last routing decisions with their arithmetic, for the status page (GET
 * /debug/decisions): which candidates the policy weighed, each one's cached prefix and
 * load, its cost term by term, and the one chosen. A ring of references to the candidates
 * the router kept (the cheapest and the chosen, copied once as it decided); the terms are worked
 * out only when someone reads them.
 *
 * A term's value is recomputed from what the candidate recorded, for the terms whose input
 * is all there (the block cost, the overlap credit, active requests, active load, the
 * predicted TTFT); any other term (the engine-waiting cost reads the engines' queue at decision
 * time, the delay to others the load its policy saw) shows as the remainder, so the terms
 * always add up to the cost the scheduler compared.
 */

import { kvPlanText, type KvPlanView } from "./kv-plan-text.ts";

/** What a candidate carries (src/router/choose/types.ts Candidate, read structurally). */
export interface CandidateView {
  readonly endpoint: { readonly worker: { readonly workerId: bigint; readonly dpRank: number } };
  readonly overlapBlocks: number;
  readonly prefillTokens: number;
  readonly decodeBlocks: number;
  readonly activePrefillTokens: number;
  readonly activeDecodeBlocks: number;
  readonly activeRequests: number;
  /** The time-based kv's prediction for this candidate, in ms, and the tokens it priced. */
  readonly predictedTtftMs?: number;
  readonly ttftTokens?: number;
  readonly cost: number;
}

/** The policy's cost: Σ weight × term (src/router/choose Pipeline.costs, read structurally). */
export interface CostShape {
  readonly policy: string;
  readonly costs: readonly { readonly term: { readonly type: string }; readonly weight: number }[];
  readonly blockSize: number;
  /** The kv term's weight on prefill blocks (--overlap-weight). */
  readonly overlapWeight: number;
}

export interface DecisionRecord {
  readonly timeMs: number;
  readonly requestId: string;
  readonly model: string | undefined;
  readonly promptTokens: number;
  readonly chosen: { readonly workerId: bigint; readonly dpRank: number };
  readonly overlapBlocks: number;
  readonly sticky: boolean;
  /** All the candidates, or (the router's) the cheapest and the chosen: ranked the same, since a stable sort keeps their order. */
  readonly candidates: readonly CandidateView[];
  /** How many there were, when `candidates` holds only some (default: its length). */
  readonly candidatesTotal?: number;
  /** The most prompt blocks any had cached, when `candidates` holds only some. */
  readonly bestOverlapBlocks?: number;
  /** The chosen engine's KV plan; its observed TTFT appears once its first token came. */
  readonly kvPlan?: KvPlanView;
}

/** Decisions kept: enough to see a pattern on the page, few enough to keep memory flat. */
export const DECISIONS_KEPT = 50;
/** Candidates shown per decision (cheapest first): a 64-worker fleet's list would drown the page. */
export const CANDIDATES_SHOWN = 12;

export class DecisionLog {
  readonly #ring: (DecisionRecord | undefined)[] = new Array(DECISIONS_KEPT);
  #next = 0;

  constructor(readonly shape: CostShape) {}

  record(d: DecisionRecord): void {
    this.#ring[this.#next] = d;
    this.#next = (this.#next + 1) % DECISIONS_KEPT;
  }

  /** Newest first, as JSON-ready objects with the arithmetic spelled out. */
  list(): unknown[] {
    const out: unknown[] = [];
    for (let i = 1; i <= DECISIONS_KEPT; i++) {
      const d = this.#ring[(this.#next - i + DECISIONS_KEPT) % DECISIONS_KEPT];
      if (d !== undefined) out.push(this.#describe(d));
    }
    return out;
  }

  #describe(d: DecisionRecord): unknown {
    const ranked = [...d.candidates].sort((a, b) => a.cost - b.cost);
    const chosenKey = `${d.chosen.workerId}:${d.chosen.dpRank}`;
    const shown = ranked.slice(0, CANDIDATES_SHOWN);
    // The chosen one is always shown, even when a softmax picked it from further down the list.
    if (!shown.some((c) => keyOf(c) === chosenKey)) {
      const c = ranked.find((x) => keyOf(x) === chosenKey);
      if (c !== undefined) shown.push(c);
    }
    return {
      time: new Date(d.timeMs).toISOString(),
      request_id: d.requestId,
      model: d.model ?? null,
      policy: this.shape.policy,
      prompt_tokens: d.promptTokens,
      prompt_blocks: Math.floor(d.promptTokens / this.shape.blockSize),
      worker: d.chosen.workerId.toString(),
      dp_rank: d.chosen.dpRank,
      overlap_blocks: d.overlapBlocks,
      best_overlap_blocks:
        d.bestOverlapBlocks ?? d.candidates.reduce((m, c) => Math.max(m, c.overlapBlocks), 0),
      sticky: d.sticky,
      kv_plan: d.kvPlan === undefined ? null : kvPlanText(d.kvPlan),
      candidates_total: d.candidatesTotal ?? d.candidates.length,
      formula: this.formula(),
      candidates: shown.map((c) => ({
        worker: c.endpoint.worker.workerId.toString(),
        dp_rank: c.endpoint.worker.dpRank,
        chosen: keyOf(c) === chosenKey,
        overlap_blocks: c.overlapBlocks,
        prefill_tokens: c.prefillTokens,
        decode_blocks: c.decodeBlocks,
        active_requests: c.activeRequests,
        cost: round(c.cost),
        terms: this.terms(c),
      })),
    };
  }

  /** The cost as the policy adds it up, e.g. "1×kv + 16×overlap-credit". */
  formula(): string {
    if (this.shape.costs.length === 0)
      return `${this.shape.policy} picks without a cost (its own rule)`;
    return this.shape.costs.map((c) => `${c.weight}×${c.term.type}`).join(" + ");
  }

  /** Each weighted term's value for one candidate; what cannot be recomputed is the remainder. */
  terms(
    c: CandidateView,
  ): { term: string; weight: number; value: number | null; detail: string }[] {
    const s = this.shape;
    const out: { term: string; weight: number; value: number | null; detail: string }[] = [];
    let known = 0;
    const unknown: { term: string; weight: number }[] = [];
    for (const { term, weight } of s.costs) {
      const v = termValue(term.type, c, s);
      if (v === undefined) {
        unknown.push({ term: term.type, weight });
        continue;
      }
      known += weight * v.value;
      out.push({ term: term.type, weight, value: round(v.value), detail: v.detail });
    }
    if (unknown.length === 1) {
      const [u] = unknown as [{ term: string; weight: number }];
      const rest = c.cost - known;
      out.push({
        term: u.term,
        weight: u.weight,
        value: u.weight === 0 ? null : round(rest / u.weight),
        detail: "read at decision time",
      });
    } else if (unknown.length > 1) {
      // Two remainders cannot be told apart: one line carries their weighted sum, so the terms still add up.
      out.push({
        term: unknown.map((u) => `${u.weight}×${u.term}`).join(" + "),
        weight: 1,
        value: round(c.cost - known),
        detail: "read at decision time",
      });
    }
    return out;
  }
}

function termValue(
  type: string,
  c: CandidateView,
  s: CostShape,
): { value: number; detail: string } | undefined {
  switch (type) {
    case "dynamo-kv":
      return {
        value: (s.overlapWeight * c.prefillTokens) / s.blockSize + c.decodeBlocks,
        detail: `${s.overlapWeight}×${c.prefillTokens} prefill tokens/${s.blockSize} + ${c.decodeBlocks} decode blocks`,
      };
    case "overlap-credit":
      return { value: -c.overlapBlocks, detail: `−${c.overlapBlocks} cached blocks` };
    case "active-requests":
      return { value: c.activeRequests, detail: `${c.activeRequests} active requests` };
    case "predicted-ttft":
      if (c.predictedTtftMs === undefined) return undefined;
      return {
        value: c.predictedTtftMs,
        detail: `${c.ttftTokens ?? "?"} tokens (queued ahead + its own uncached) at this engine's learned speed, plus latency, in ms`,
      };
    case "active-load":
      return {
        value: c.activePrefillTokens / s.blockSize + c.activeDecodeBlocks,
        detail: `${c.activePrefillTokens} active prefill tokens/${s.blockSize} + ${c.activeDecodeBlocks} active blocks`,
      };
    default:
      return undefined;
  }
}

function keyOf(c: CandidateView): string {
  return `${c.endpoint.worker.workerId}:${c.endpoint.worker.dpRank}`;
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
