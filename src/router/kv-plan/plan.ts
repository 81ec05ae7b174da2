/**
 * Where a candidate gets each range of the prompt: the cheapest of its GPU cache (already in
 * the prediction), its own CPU or disk tier (loaded), a peer that holds it on GPU or CPU (pulled),
 * or computing it. Called once per candidate by choose/candidates.ts, after the prediction
 * counted every uncached token as computed; a plan takes some of those tokens off the compute and
 * adds their transfer time, and only where that is faster.
 *
 * Why a load and a pull never combine: an engine that is told to pull does so before it looks at
 * its own tiers, and loads from them only when the pull gave nothing (the simulated engine,
 * src/mocker/engine.ts, as vLLM's connector: one KV source per request). So the plan is one
 * transfer of a leading run right after the credited GPU prefix.
 *
 * Which engines pull: those that report a lower tier (their KV connector runs: vLLM's
 * OffloadingConnector or LMCache, the simulated engine with --kv-host-blocks), pulling from peers
 * that also report one. An engine reporting only GPU is priced exactly as without plans.
 *
 * PURE: the decision's `now` comes in; nothing here does I/O.
 */
import type { KvMedium } from "../../core/events.ts";
import { parseWorkerKey, type WorkerKey, type WorkerWithDpRank } from "../../core/ids.ts";
import type { OverlapScores } from "../../core/overlap.ts";
import { TransferRates } from "./transfer-rates.ts";

/** Peers weighed per candidate for a pull: the deepest holders (a pull from the fifth-deepest is never the best one). */
const SOURCES = 4;
/** Holders read per decision, deepest first, before keeping those that can export. */
const MAX_SOURCES = 16;

/** A transfer planned for a request on one rank. Built only for a candidate it makes faster. */
export interface KvPlan {
  readonly kind: "load" | "pull";
  /** load: the tiers it loads from, in order ("cpu", "disk"). */
  readonly media: readonly Exclude<KvMedium, "gpu">[];
  /** pull: the peer (worker, dp rank) it pulls from, and its key. */
  readonly from?: WorkerWithDpRank;
  readonly fromKey?: WorkerKey;
  /** The rate keys the transfer is learned under (one per medium for a load, the link for a pull), with their token shares. */
  readonly rates: readonly { readonly key: string; readonly tokens: number }[];
  /** The transfer's blocks start here (the blocks before it are cached there already). */
  readonly fromBlock: number;
  readonly blocks: number;
  readonly tokens: number;
  /** Predicted transfer time, ms (a pull's includes what the source's other pulls have left). */
  readonly transferMs: number;
  /** Of transferMs, the wait for the source's other pulls (0 for a load). */
  readonly queuedMs: number;
  /** The same tokens computed on this rank, ms: what the plan saves is computeMs − transferMs. */
  readonly computeMs: number;
  /** The whole request's predicted TTFT with this plan (set by the caller once it is priced). */
  predictedTtftMs: number;
  /** Its first token's time, once seen (ms after booking). */
  observedTtftMs?: number;
}

export interface PlanInput {
  readonly key: WorkerKey;
  readonly worker: WorkerWithDpRank;
  /** Blocks already counted as cached there (GPU and in flight, as far as its capacity keeps them). */
  readonly creditedBlocks: number;
  /** The tokens the prediction computes for this request there. */
  readonly uncachedTokens: number;
  readonly msPerToken: number;
}

interface Source {
  readonly key: WorkerKey;
  readonly worker: WorkerWithDpRank;
  readonly depth: number;
}

/**
 * One decision's planner: the tiers' overlaps and the pull sources read once (`prepare`), then
 * each candidate priced (`plan`). `pullCapable` says whether a rank reports a lower tier.
 */
export class KvPlanner {
  #cpu: ReadonlyMap<WorkerKey, number> | undefined;
  #disk: ReadonlyMap<WorkerKey, number> | undefined;
  #sources: Source[] = [];
  #now = 0;
  #bs = 16;

  constructor(
    readonly rates: TransferRates,
    private readonly pullCapable: (w: WorkerWithDpRank) => boolean,
    /** Whether any engine reports a tier at all (cheap: read once per decision). */
    private readonly anyTier: () => boolean = () => true,
  ) {}

  /**
   * Reads a decision's overlaps; false when no plan can come of them (no tier holds any of the
   * prompt and no engine that reports a tier holds it on GPU): every candidate is priced as before.
   */
  prepare(overlaps: OverlapScores, blockSize: number, now: number): boolean {
    const tiers = overlaps.tierScores;
    this.#cpu = tiers?.get("cpu");
    this.#disk = tiers?.get("disk");
    this.#now = now;
    this.#bs = blockSize;
    this.#sources = [];
    // A fleet whose engines report no tier pays nothing more per decision.
    if (tiers === undefined && !this.anyTier()) return false;
    // A source's depth: the leading blocks it can export, from its GPU cache then its host tier
    // (the "cpu" reach; an engine exports blocks held on either, so this is never too deep).
    // Only the deepest few are kept (one pass, a short sorted list), then those that can export.
    const top: { key: WorkerKey; depth: number }[] = [];
    const consider = (key: WorkerKey, d: number) => {
      if (top.length === MAX_SOURCES && d <= top[MAX_SOURCES - 1]!.depth) return;
      const i = top.findIndex((t) => t.key === key);
      if (i >= 0) {
        if (top[i]!.depth >= d) return;
        top.splice(i, 1);
      }
      let at = top.length;
      while (at > 0 && top[at - 1]!.depth < d) at--;
      top.splice(at, 0, { key, depth: d });
      if (top.length > MAX_SOURCES) top.pop();
    };
    for (const [k, n] of overlaps.scores) consider(k, n);
    if (this.#cpu !== undefined) for (const [k, n] of this.#cpu) consider(k, n);
    for (const t of top) {
      const worker = parseWorkerKey(t.key);
      if (this.pullCapable(worker)) this.#sources.push({ key: t.key, worker, depth: t.depth });
    }
    return tiers !== undefined || this.#sources.length > 0;
  }

  /** The fastest transfer for this candidate, or undefined when computing (or its GPU) is as fast. */
  plan(c: PlanInput): KvPlan | undefined {
    // The engine computes at least the prompt's last token (vLLM's n − 1 hit cap).
    const room = c.uncachedTokens - 1;
    if (room <= 0 || !(c.msPerToken > 0)) return undefined;
    let best = this.#load(c, room);
    if (this.#sources.length > 0 && this.pullCapable(c.worker)) {
      const pull = this.#pull(c, room);
      if (pull !== undefined && (best === undefined || saves(pull) > saves(best))) best = pull;
    }
    return best !== undefined && saves(best) > 0 ? best : undefined;
  }

  /**
   * The candidate's own media, range by range: its credited GPU prefix, then up to its "cpu"
   * reach from the CPU tier, then up to its "disk" reach (blocks there on CPU or disk, priced at
   * disk speed). The reaches are cumulative from block 0 (OverlapScores.tierScores).
   */
  #load(c: PlanInput, room: number): KvPlan | undefined {
    const bs = this.#bs;
    const cpu = this.#cpu?.get(c.key) ?? 0;
    const disk = this.#disk?.get(c.key) ?? 0;
    const cpuTokens = Math.min(room, Math.max(0, cpu - c.creditedBlocks) * bs);
    const diskTokens = Math.min(
      room - cpuTokens,
      Math.max(0, disk - Math.max(c.creditedBlocks, cpu)) * bs,
    );
    if (cpuTokens + diskTokens <= 0) return undefined;
    const media: ("cpu" | "disk")[] = [];
    const rates: { key: string; tokens: number }[] = [];
    let ms = 0;
    for (const [m, t] of [
      ["cpu", cpuTokens],
      ["disk", diskTokens],
    ] as const) {
      if (t <= 0) continue;
      const key = TransferRates.keyOf(m, c.key);
      media.push(m);
      rates.push({ key, tokens: t });
      ms += t * this.rates.msPerToken(m, key, c.msPerToken);
    }
    const tokens = cpuTokens + diskTokens;
    return {
      kind: "load",
      media,
      rates,
      fromBlock: c.creditedBlocks,
      blocks: Math.ceil(tokens / bs),
      tokens,
      transferMs: ms,
      queuedMs: 0,
      computeMs: tokens * c.msPerToken,
      predictedTtftMs: 0,
    };
  }

  #pull(c: PlanInput, room: number): KvPlan | undefined {
    let best: KvPlan | undefined;
    let weighed = 0;
    for (const s of this.#sources) {
      if (s.depth <= c.creditedBlocks) break;
      if (s.worker.workerId === c.worker.workerId) continue;
      if (++weighed > SOURCES) break;
      const tokens = Math.min(room, (s.depth - c.creditedBlocks) * this.#bs);
      const key = TransferRates.keyOf("link", c.key, s.key);
      const queuedMs = this.rates.queuedFrom(s.key, this.#now);
      const ms = queuedMs + tokens * this.rates.msPerToken("link", key, c.msPerToken);
      const p: KvPlan = {
        kind: "pull",
        media: [],
        from: s.worker,
        fromKey: s.key,
        rates: [{ key, tokens }],
        fromBlock: c.creditedBlocks,
        blocks: Math.ceil(tokens / this.#bs),
        tokens,
        transferMs: ms,
        queuedMs,
        computeMs: tokens * c.msPerToken,
        predictedTtftMs: 0,
      };
      if (best === undefined || saves(p) > saves(best)) best = p;
    }
    return best;
  }
}

function saves(p: KvPlan): number {
  return p.computeMs - p.transferMs;
}

/**
 * What a first token says about a plan's transfer: the time it took beyond the prediction's
 * other parts, spread over the plan's rates by their tokens. A transfer that failed (the engine
 * computed instead) reads as a transfer as slow as computing, so that source stops being chosen.
 */
export function learnFromFirstToken(
  rates: TransferRates,
  plan: KvPlan,
  observedTtftMs: number,
): void {
  plan.observedTtftMs = observedTtftMs;
  const transferMs = Math.max(0, observedTtftMs - (plan.predictedTtftMs - plan.transferMs));
  // What the source's other pulls had left was waited for, and is not the link's speed.
  const perToken = Math.max(0, transferMs - plan.queuedMs) / plan.tokens;
  for (const r of plan.rates) rates.observe(r.key, perToken);
}
