/**
 * Predicts a request's time to first token on each (worker, dp rank) from what the books hold
 * there, and learns each rank's speed online from the first tokens the router sees.
 *
 * The model is the engines' own: one prefill at a time per rank, in arrival order, at a steady
 * rate. A request booked now gets its first token once the rank has computed the prefill tokens
 * queued ahead of it (less what the oldest of them has done since it could start) and then its
 * own uncached tokens, plus a fixed latency (the round trip, the engine's scheduling, the
 * router's own event loop):
 *   ttft = latency + msPerToken × (tokens ahead + uncached)
 * What is uncached is the caller's to say (what is neither cached there nor being computed there
 * by a request ahead of it).
 *
 * Learning: every first token is one sample (the tokens the prediction counted, the TTFT seen).
 * The fleet's line (latency + msPerToken × tokens) is fitted to the last FLEET_WINDOW samples of
 * every rank with medians (Theil–Sen: the slope is the median of the pairwise slopes, the latency
 * the median of what it leaves on the window's smallest first tokens, where it is most of the
 * time), and each rank gets a factor on the slope: the median of its own samples' prefill time
 * (less the line's intercept) ÷ the line's, counting only samples that are mostly
 * this request's own prefill, and measured against the fleet's typical rank rather than the line
 * (see #refitFactors). Medians, because the samples are noisy in ways a mean would follow (a router whose
 * event loop was busy reads two first tokens in one go; an engine restarting stalls a request;
 * the first requests to a fresh engine are slow): up to about a third of a window can be wrong
 * without moving the fit; a rank's factor leaves 1 only when three quarters of its own window
 * agree that it is slower (an engine that really slows down is followed within 24 first tokens),
 * and it never goes below 1, because a factor wrongly below 1 piles work on that engine. Per
 * rank, so a slower GPU model gets less; a rank without samples of its own runs at the fleet's.
 *
 * The engines' own word (reportEngineSpeed: vLLM's prefill seconds per prefilled token, scraped
 * from its metrics page) fills the two gaps the router's samples leave. Before any first token,
 * the line's slope is the typical reported speed instead of PRIOR's guess (a router restarted in
 * front of a running fleet predicts right from its first request). And a rank without a factor of
 * its own gets one from its report against the typical report, by the same rules (never below 1,
 * only past SAME_AS_FLEET), so an engine of a slower GPU model that joins is given less from its
 * first scrape, not after its fourth slow first token. The router's own samples win wherever it
 * has them: they measure what the engine's figure cannot (queueing, the network, this router).
 *
 * Running decodes: engines interleave a prefill with the batch that is decoding (vLLM V1 gives
 * every step a token budget the running decodes take first; chunked prefill shares the rest), so a
 * first token also waits for decode steps, longer as the batch grows. The prediction adds
 * `decodeWeight` × the rank's step time at its running decodes (step-times.ts, learned from the
 * inter-token gaps the router sees). The weight is learned from the first tokens too, before the
 * line: the least-squares slope of first tokens on the step times they met, over pairs of nearly
 * equal tokens (#fitDecodeWeight); the line is fitted to what it leaves. On an engine whose prefill never waits for decodes it comes out
 * near 0, on a V1-like one near 1 (or more, when a prompt spans several steps); until it has
 * MIN_DECODE_SAMPLES samples that met decodes it is 0 and the prediction is the line alone.
 *
 * PURE: times are milliseconds passed in; no clock, no I/O. It books nothing and chooses nothing.
 */
import { parseWorkerKey, type WorkerId, type WorkerKey } from "../../core/ids.ts";
import type { ActiveSequences } from "./active-sequences.ts";
import { PrefixTraffic } from "./prefix-traffic.ts";
import type { FirstTokenHook, LeaseEndHook } from "./request-lease.ts";
import { StepTimes } from "./step-times.ts";

/** One rank's learned speed. */
export interface EngineSpeed {
  /** Prefill time per token the rank computes. */
  readonly msPerToken: number;
  /** Time every request takes on top of its tokens' (round trip, scheduling, first sampling step): the fleet's. */
  readonly latencyMs: number;
  /** This rank's prefill time per token ÷ the fleet's (1: as fast as the fleet; 2: twice as slow). */
  readonly factor: number;
  /**
   * Where the factor comes from: the rank's own samples; its engine's reported speed (also when,
   * before any first token, the slope is the engines' typical report); the fleet's line alone; or
   * the prior (no samples, no reports).
   */
  readonly source: "own" | "engine" | "fleet" | "prior";
}

/** A prediction: its time, and the prefill tokens it counted before this request's first token. */
export interface TtftPrediction {
  readonly ms: number;
  /** Tokens queued ahead (less the oldest one's progress) plus this request's uncached tokens. */
  readonly tokens: number;
}

/** One request's first token, as the router saw it. */
export interface FirstTokenObservation {
  readonly key: WorkerKey;
  /** When the request was booked on the rank (ms). */
  readonly bookedAt: number;
  /** When its first token arrived (ms). */
  readonly at: number;
  /** The prefill tokens its prediction counted (TtftPrediction.tokens). */
  readonly tokens: number;
  /**
   * Of those, this request's own uncached tokens (the rest was queued ahead of it); absent: all
   * of them. Only samples that are mostly its own prefill set the rank's factor.
   */
  readonly ownTokens?: number;
  /** What was predicted when it was routed, if anything. */
  readonly predictedMs?: number;
  /** The rank's decode step time (ms) at its running decodes when it was routed (0 or absent: none running). */
  readonly stepMs?: number;
}

/** Samples the fleet's line is fitted to: the last this many first tokens, every rank's. */
export const FLEET_WINDOW = 48;
/**
 * The latency is what the line leaves on the window's smallest first tokens, this share of it by
 * tokens, not on all of them: the median over the whole window came out at 0.35 ms where cache
 * hits took 0.6-1.0 (synthetic, one router, bench/README.md), because the big first tokens' own
 * errors (the slope's, a queue counted a little high) decide a median over all, and a small
 * request is predicted by the latency alone.
 */
export const LATENCY_SHARE = 0.25;
/** Samples kept per rank for its factor: enough for a stable median, few enough to follow a change quickly. */
export const RANK_WINDOW = 32;
/** Once the fleet's window is full, the line is refitted every this many first tokens. */
export const REFIT_EVERY = 8;
/** A rank's own factor is used from this many samples that show its speed on (mostly prefill, not latency): one sample could be a latency outlier. */
export const MIN_OWN_SAMPLES = 4;
/**
 * A sample shows its rank's speed when at least this share of the tokens it counted are the
 * request's own. The rest is work booked ahead of it, counted by the router (less the oldest
 * prefill's progress, at the speed then believed): at overload nearly every first token is mostly
 * that queue, and one rank's queue can be miscounted for a while (a burst of progress credited at
 * a wrong speed, another router's bookings), which made identical engines read 0.54-1.94 in the
 * gen-rag replay at load ×2 and piled work on whichever read fast.
 */
export const MOSTLY_OWN = 0.5;
/** A rank's factor stays within [1, this]: beyond that the samples say more about noise than about the engine (and none is below 1: factorOf). */
export const MAX_FACTOR = 4;
/**
 * A rank whose factor is within [1 ÷ this, this] counts as the fleet (factor 1). Identical
 * engines measured through a busy router come out ±10–20% apart from noise alone, and acting on
 * that piles work on whichever happens to look fastest; a slower GPU model or a throttled engine
 * is well beyond it.
 */
export const SAME_AS_FLEET = 1.25;
/**
 * Before any engine has answered or reported its speed: 20k prefill tokens per second (a mid-size model on one
 * GPU), no latency. Only the ranks' relative order matters until the first samples arrive,
 * and with no latency that order is by tokens alone, whatever this number is.
 */
export const PRIOR: EngineSpeed = { msPerToken: 0.05, latencyMs: 0, factor: 1, source: "prior" };
/** The decode weight is learned once the fleet's window holds this many first tokens that met running decodes. */
export const MIN_DECODE_SAMPLES = 8;
/**
 * The decode weight stays within [0, this]: a first token waits on average for the rest of the step
 * it arrives in and for its own, about one and a half steps. More is the load the step time stands
 * for (an engine with more decodes also has more prefills in flight), which the queue already counts.
 */
export const MAX_DECODE_WEIGHT = 1.5;
/** The decode weight is used only this many standard errors above 0. */
export const DECODE_EVIDENCE = 4;

/** A ring of (tokens, ms) samples. */
class Samples {
  readonly tokens: Float64Array;
  readonly ms: Float64Array;
  /** The decode step time each sample met (ms; 0: none running). */
  readonly step: Float64Array;
  count = 0;
  #next = 0;
  constructor(readonly size: number) {
    this.tokens = new Float64Array(size);
    this.ms = new Float64Array(size);
    this.step = new Float64Array(size);
  }
  /** Adds one sample over the oldest once full; returns the slot it took. */
  add(tokens: number, ms: number, step = 0): number {
    const at = this.#next;
    this.tokens[at] = tokens;
    this.ms[at] = ms;
    this.step[at] = step;
    this.#next = (at + 1) % this.size;
    if (this.count < this.size) this.count++;
    return at;
  }
}

/** A rank's ring: each sample also keeps how many of its tokens were the request's own (what a factor is learned from; the fleet's line needs only tokens and ms). */
class RankSamples extends Samples {
  readonly own: Float64Array;
  constructor(size: number) {
    super(size);
    this.own = new Float64Array(size);
  }
  addOwn(tokens: number, ms: number, own: number, step: number): void {
    this.own[this.add(tokens, ms, step)] = own;
  }
}

export interface TtftPredictorOptions {
  /** Tokens per KV block: pairs of samples closer than a block do not set the slope. */
  readonly blockSize: number;
}

/**
 * The fleet's line through every rank's recent samples (ms = latency + msPerToken × tokens), and
 * per rank a factor: the median of its own samples' ms ÷ that line. Two numbers fitted on many
 * samples and one per rank, because a two-number fit per rank on a handful of noisy samples
 * goes wrong in the way that hurts most: a slope near zero makes queued work look free.
 */
export class TtftPredictor {
  readonly #fleet = new Samples(FLEET_WINDOW);
  readonly #ranks = new Map<WorkerKey, RankSamples>();
  readonly #factors = new Map<WorkerKey, number>();
  /** Each rank's last reported ms per prefilled token (its engine's own metrics). */
  readonly #reported = new Map<WorkerKey, number>();
  /** Factors from the reports, for ranks the reports make slower than the typical one. */
  readonly #reportedFactors = new Map<WorkerKey, number>();
  /** The typical report (lower median), or undefined without reports. */
  #typicalReport: number | undefined;
  /** Reports changed since the typical one and the factors were worked out (done on the next read, once per scrape round, not once per report). */
  #reportsChanged = false;
  readonly #minGap: number;
  #msPerToken = PRIOR.msPerToken;
  #latencyMs = PRIOR.latencyMs;
  #decodeWeight = 0;
  #lastDecodeFit = 0;
  /** Each rank's decode step time, learned from inter-token gaps (fed by the leases: decodeSampler). */
  readonly steps = new StepTimes();
  /** Each prefix group's arrival rate and a request's time on its engine (fed by the routing service and the leases). */
  readonly traffic = new PrefixTraffic();
  #fitted = false;
  #observed = 0;
  /** Per rank, the lower quartile and the median of its ratios to the line (NaN: too few samples), reused by each refit. */
  #q1AndMid: Float64Array = new Float64Array(0);
  /** The measured ranks' medians, reused by each refit. */
  #mids: Float64Array = new Float64Array(0);
  /** Room for every pairwise slope of the fleet's window, reused by each refit. */
  readonly #scratch = new Float64Array((FLEET_WINDOW * (FLEET_WINDOW - 1)) / 2);
  /** The window's first tokens less the decode steps they met, reused by each refit. */
  readonly #adjusted = new Float64Array(FLEET_WINDOW);

  constructor(opts: TtftPredictorOptions) {
    if (!(opts.blockSize >= 1)) throw new Error(`block size must be >= 1, got ${opts.blockSize}`);
    this.#minGap = opts.blockSize;
  }

  /** The speed used for `key`: the fleet's line, its slope times the rank's own factor once it has MIN_OWN_SAMPLES samples that show its speed. */
  speed(key: WorkerKey): EngineSpeed {
    if (this.#reportsChanged) this.#refitReported();
    const own = this.#factors.get(key);
    const reported = own === undefined ? this.#reportedFactors.get(key) : undefined;
    const factor = own ?? reported ?? 1;
    const source =
      own !== undefined
        ? "own"
        : reported !== undefined
          ? "engine"
          : this.#fitted
            ? "fleet"
            : this.#typicalReport !== undefined
              ? "engine"
              : "prior";
    return { msPerToken: this.#msPerToken * factor, latencyMs: this.#latencyMs, factor, source };
  }

  /**
   * A rank's prefill speed as its engine reports it (ms per prefilled token; prefill-speed.ts).
   * Sets the slope until the first first token, and the rank's factor until it has its own.
   * Returns false for a value no engine can have (not positive, not finite), which is ignored.
   */
  reportEngineSpeed(key: WorkerKey, msPerToken: number): boolean {
    if (!(msPerToken > 0 && Number.isFinite(msPerToken))) return false;
    this.#reported.set(key, msPerToken);
    this.#reportsChanged = true;
    return true;
  }

  /** The typical report and every reporting rank's factor against it (factorOf's rules, on one number per rank). */
  #refitReported(): void {
    this.#reportsChanged = false;
    this.#reportedFactors.clear();
    if (this.#reported.size === 0) {
      this.#typicalReport = undefined;
      if (!this.#fitted) this.#msPerToken = PRIOR.msPerToken;
      return;
    }
    const all = Float64Array.from(this.#reported.values()).sort();
    const typical = all[(all.length - 1) >> 1]!;
    this.#typicalReport = typical;
    if (!this.#fitted) this.#msPerToken = typical;
    for (const [key, ms] of this.#reported) {
      const f = factorOf(ms, ms, typical);
      if (f !== 1) this.#reportedFactors.set(key, f);
    }
  }

  /**
   * The predicted TTFT of a request booked now on `key` that must compute `uncachedTokens`
   * there, behind the prefills `seqs` (the rank's books) still hold. No books: an idle rank.
   */
  predict(
    seqs: ActiveSequences | undefined,
    key: WorkerKey,
    uncachedTokens: number,
    now: number,
  ): TtftPrediction {
    const msPerToken = this.msPerTokenOf(key);
    const tokens = this.tokensBefore(seqs, msPerToken, uncachedTokens, now);
    return {
      ms: this.#latencyMs + msPerToken * tokens + this.#decodeWeight * this.stepMsOf(seqs, key),
      tokens,
    };
  }

  /** How much of the rank's decode step time (stepMsOf) a first token waits for, as learned (0 until known). */
  get decodeWeight(): number {
    return this.#decodeWeight;
  }

  /** The rank's decode step time at the decodes its books hold running (ms; 0: none running, or no gap seen yet). */
  stepMsOf(seqs: ActiveSequences | undefined, key: WorkerKey): number {
    if (seqs === undefined) return 0;
    const decodes = seqs.activeRequests - seqs.prefillingRequests;
    return decodes > 0 ? this.steps.stepMs(key, decodes) : 0;
  }

  /**
   * speed(key).msPerToken without building the EngineSpeed. The scheduler reads it once per
   * candidate per decision and hands it to tokensBefore and the costs: at 1,024 ranks the
   * objects speed() and predict() build were most of a decision's garbage.
   */
  msPerTokenOf(key: WorkerKey): number {
    if (this.#reportsChanged) this.#refitReported();
    if (this.#factors.size === 0 && this.#reportedFactors.size === 0) return this.#msPerToken;
    const f = this.#factors.get(key) ?? this.#reportedFactors.get(key);
    return f === undefined ? this.#msPerToken : this.#msPerToken * f;
  }

  /** The fleet's latency, every rank's (speed(key).latencyMs). */
  get latencyMs(): number {
    return this.#latencyMs;
  }

  /** predict()'s tokens at a speed the caller looked up (msPerTokenOf): its ms is latencyMs + msPerToken × this. */
  tokensBefore(
    seqs: ActiveSequences | undefined,
    msPerToken: number,
    uncachedTokens: number,
    now: number,
  ): number {
    return (seqs === undefined ? 0 : tokensAhead(seqs, msPerToken, now)) + uncachedTokens;
  }

  /**
   * Learn from one first token. Returns |predicted ÷ observed − 1| when the request carried a
   * prediction (the predictor's error, for the metric), else undefined.
   */
  observe(o: FirstTokenObservation): number | undefined {
    const observed = o.at - o.bookedAt;
    if (!(observed >= 0) || !(o.tokens >= 0)) return undefined;
    const step = o.stepMs !== undefined && o.stepMs > 0 && Number.isFinite(o.stepMs) ? o.stepMs : 0;
    this.#fleet.add(o.tokens, observed, step);
    let r = this.#ranks.get(o.key);
    if (r === undefined) {
      r = new RankSamples(RANK_WINDOW);
      this.#ranks.set(o.key, r);
    }
    r.addOwn(
      o.tokens,
      observed,
      o.ownTokens === undefined ? o.tokens : Math.min(o.tokens, Math.max(0, o.ownTokens)),
      step,
    );
    this.#refit();
    if (o.predictedMs === undefined || !(observed > 0)) return undefined;
    return Math.abs(o.predictedMs / observed - 1);
  }

  /** Drop a worker's samples and reports, every rank (it left); if it comes back it starts at the fleet's speed. */
  forgetWorker(workerId: WorkerId): void {
    for (const key of [...this.#ranks.keys()]) {
      if (parseWorkerKey(key).workerId !== workerId) continue;
      this.#ranks.delete(key);
      this.#factors.delete(key);
      this.steps.forget(key);
      this.traffic.forgetRank(key);
    }
    for (const key of [...this.#reported.keys()]) {
      if (parseWorkerKey(key).workerId !== workerId) continue;
      this.#reported.delete(key);
      this.#reportsChanged = true;
    }
  }

  /**
   * Theil–Sen over the fleet's window: the slope is the median of the pairwise slopes between
   * samples at least a block apart (closer pairs say more about noise than about speed); with no
   * such pair yet, the median of ms ÷ tokens. The line's intercept is the median of what the slope
   * leaves; the latency predictions add is that median over the smallest first tokens only
   * (LATENCY_SHARE). A slope that comes out at or below zero (only noise so far) keeps the
   * previous one. Then every rank's factor against the new line.
   */
  #refit(): void {
    // Every observation while the window fills, then every REFIT_EVERY-th: the line moves slowly
    // once a full window holds it, and the pairwise slopes are the router's most expensive arithmetic.
    this.#observed++;
    if (this.#fleet.count === FLEET_WINDOW && this.#observed % REFIT_EVERY !== 0) return;
    const { tokens, count: n } = this.#fleet;
    const slopes = this.#scratch;
    // The decode steps first, from pairs the tokens cannot explain; the line is fitted to what they leave.
    // The smaller of this fit and the last: one window's chance correlation does not move decisions.
    const fit = this.#fitDecodeWeight(slopes);
    const w = Math.min(fit, this.#lastDecodeFit);
    this.#lastDecodeFit = fit;
    const ms = this.#lessDecodes(w);
    let k = 0;
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        const dx = tokens[j]! - tokens[i]!;
        if (Math.abs(dx) >= this.#minGap) slopes[k++] = (ms[j]! - ms[i]!) / dx;
      }
    }
    if (k === 0) {
      for (let i = 0; i < n; i++) if (tokens[i]! > 0) slopes[k++] = ms[i]! / tokens[i]!;
    }
    if (k === 0) return;
    const slope = medianOf(slopes.subarray(0, k));
    if (!(slope > 0)) return;
    this.#decodeWeight = w;
    // The line's intercept: what the slope leaves, over the whole window. The factors are measured against this line.
    const rest = slopes.subarray(0, n);
    for (let i = 0; i < n; i++) rest[i] = ms[i]! - slope * tokens[i]!;
    const intercept = Math.max(0, medianOf(rest));
    // The latency a prediction adds: what the slope leaves on the window's smallest first tokens
    // (LATENCY_SHARE of it, by tokens), where it is most of the time (LATENCY_SHARE's comment).
    // The same for every rank, so it moves no decision; the factors keep the line's intercept.
    for (let i = 0; i < n; i++) rest[i] = tokens[i]!;
    const cut = selectNth(rest, Math.floor((n - 1) * LATENCY_SHARE));
    let m = 0;
    for (let i = 0; i < n; i++) if (tokens[i]! <= cut) rest[m++] = ms[i]! - slope * tokens[i]!;
    this.#msPerToken = slope;
    this.#latencyMs = Math.max(0, medianOf(rest.subarray(0, m)));
    this.#fitted = true;
    this.#refitFactors(slope, intercept, slopes);
  }

  /** The fleet window's first tokens less `w` × the decode step each met (the window's own array when w is 0). */
  #lessDecodes(w: number): Float64Array {
    const { ms, step, count: n } = this.#fleet;
    if (w === 0) return ms;
    const out = this.#adjusted;
    for (let i = 0; i < n; i++) out[i] = ms[i]! - w * step[i]!;
    return out;
  }

  /**
   * The decode weight: the least-squares slope of Δms on Δstep over pairs of the fleet's window
   * whose tokens are within a block of each other (so the tokens do not explain the difference),
   * each Δms clipped to three times the pairs' median |Δms| (a first token stalled by a busy host
   * must not decide it). Least squares, not the median of Δms ÷ Δstep: step times in a window
   * differ by a millisecond or two while first tokens wait a random part of a step, and those
   * ratios have no stable median. 0 unless the slope is DECODE_EVIDENCE standard errors above 0:
   * when the window's step times span too little to tell (every engine at a similar batch), the
   * term could not move a decision anyway, and a guessed weight would take the place of prefill
   * speed in the line (the first tokens of SGLang's shared-prefix load, whose steps span 1.5 ms
   * while each waits a random part of one, read 2 there and the slope fell to a quarter in the
   * timing simulation). Kept as it was with fewer than MIN_DECODE_SAMPLES samples that met
   * decodes (0 at first) or fewer than MIN_DECODE_SAMPLES such pairs; at most MAX_DECODE_WEIGHT.
   */
  #fitDecodeWeight(scratch: Float64Array): number {
    const { tokens, ms, step, count: n } = this.#fleet;
    let met = 0;
    for (let i = 0; i < n; i++) if (step[i]! > 0) met++;
    if (met < MIN_DECODE_SAMPLES) return this.#lastDecodeFit;
    let k = 0;
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        if (Math.abs(tokens[j]! - tokens[i]!) < this.#minGap && step[j] !== step[i])
          scratch[k++] = Math.abs(ms[j]! - ms[i]!);
      }
    }
    if (k < MIN_DECODE_SAMPLES) return this.#lastDecodeFit;
    const clip = 3 * medianOf(scratch.subarray(0, k));
    let sxy = 0;
    let sxx = 0;
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        const dx = step[j]! - step[i]!;
        if (Math.abs(tokens[j]! - tokens[i]!) >= this.#minGap || dx === 0) continue;
        const dy = Math.max(-clip, Math.min(clip, ms[j]! - ms[i]!));
        sxy += dx * dy;
        sxx += dx * dx;
      }
    }
    if (!(sxx > 0)) return this.#lastDecodeFit;
    const w = sxy / sxx;
    // What the window can tell: the slope's standard error from the pairs' residuals, counted as
    // n samples' worth of evidence rather than k pairs' (each sample is in many pairs).
    let see = 0;
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        const dx = step[j]! - step[i]!;
        if (Math.abs(tokens[j]! - tokens[i]!) >= this.#minGap || dx === 0) continue;
        const r = Math.max(-clip, Math.min(clip, ms[j]! - ms[i]!)) - w * dx;
        see += r * r;
      }
    }
    const se = Math.sqrt((see / Math.max(1, k - 1) / sxx) * (k / n));
    return w > DECODE_EVIDENCE * se ? Math.min(MAX_DECODE_WEIGHT, w) : 0;
  }

  /**
   * Every rank's factor against the new line (ms = intercept + slope × tokens). A rank's samples are
   * compared with the line as (ms − intercept) ÷ (slope × tokens), over those where the tokens, not
   * the intercept, make most of the time, and where most of the tokens are the request's own
   * (MOSTLY_OWN). A sample that is mostly latency (a cache hit) says nothing about speed, and
   * counting it would make an engine that serves many hits look fast, draw more of them and look
   * faster still; one that is mostly queue measures how well the router counted the queue.
   *
   * The factor is the rank's median ratio ÷ the fleet's typical rank's (the lower median of the
   * ranks' medians), not ÷ the line: when the line is off (a window of first tokens that all
   * waited, whose tokens span too little to set a slope), every rank is off alike and none is
   * faster than the others. The lower median, so that when half the fleet is slower the slow half
   * reads above 1 rather than every rank at 1 (none reads below 1: factorOf). `scratch` holds
   * at least RANK_WINDOW numbers.
   */
  #refitFactors(slope: number, intercept: number, scratch: Float64Array): void {
    const minTokens = Math.max(this.#minGap, intercept / slope);
    const q = (this.#q1AndMid = atLeast(this.#q1AndMid, 2 * this.#ranks.size));
    const mids = (this.#mids = atLeast(this.#mids, this.#ranks.size));
    let measured = 0;
    let i = 0;
    for (const r of this.#ranks.values()) {
      let m = 0;
      for (let j = 0; j < r.count; j++) {
        const t = r.tokens[j]!;
        if (t >= minTokens && r.own[j]! >= MOSTLY_OWN * t)
          scratch[m++] = (r.ms[j]! - intercept - this.#decodeWeight * r.step[j]!) / (slope * t);
      }
      if (m < MIN_OWN_SAMPLES) q[2 * i] = NaN;
      else {
        const ratios = scratch.subarray(0, m).sort();
        q[2 * i] = ratios[Math.floor((m - 1) / 4)]!;
        q[2 * i + 1] = ratios[m >> 1]!;
        mids[measured++] = q[2 * i + 1]!;
      }
      i++;
    }
    const centre = measured === 0 ? 1 : mids.subarray(0, measured).sort()[(measured - 1) >> 1]!;
    i = 0;
    for (const key of this.#ranks.keys()) {
      if (Number.isNaN(q[2 * i]!)) this.#factors.delete(key);
      else this.#factors.set(key, factorOf(q[2 * i]!, q[2 * i + 1]!, centre));
      i++;
    }
  }
}

/** What a booking tells the predictor when its first token comes. */
export interface PredictedBooking {
  readonly key: WorkerKey;
  readonly bookedAt: number;
  readonly tokens: number;
  /** Of `tokens`, the request's own uncached ones (FirstTokenObservation.ownTokens). */
  readonly ownTokens?: number;
  readonly predictedMs?: number;
  /** The rank's decode step time the prediction met (FirstTokenObservation.stepMs). */
  readonly stepMs?: number;
  /**
   * The rank's books just before this request was booked: with them the sample counts
   * the prompts that went ahead of it unseen. Absent: the sample counts `tokens` as they were.
   */
  readonly queue?: QueueAtBooking;
}

/** A rank's prefill queue as a booking found it: its ActiveSequences and two of its readings then. */
export interface QueueAtBooking {
  readonly seqs: ActiveSequences;
  /** seqs.activeTokens(): the prefill booked there, ahead of this request. */
  readonly queuedTokens: number;
  /** seqs.prefilledTokens: the running total of prefills seen done there. */
  readonly prefilledTokens: number;
}

/**
 * The rank's books now, for PredictedBooking.queue (read before the request itself is booked);
 * undefined for a rank not tracked. `claimed`: prefill tokens other decisions claimed there that
 * the books do not hold yet (burst-claims.ts), queued ahead all the same: once their bookings
 * arrive and finish, they are not counted again as prompts that went ahead unseen.
 */
export function queueAtBooking(
  seqs: ActiveSequences | undefined,
  claimed = 0,
): QueueAtBooking | undefined {
  return seqs === undefined
    ? undefined
    : { seqs, queuedTokens: seqs.activeTokens() + claimed, prefilledTokens: seqs.prefilledTokens };
}

/**
 * The prefill tokens the rank computed before this request's first token, as far as the books
 * can tell once it has come: what the prediction counted, plus the prefills seen done in between
 * beyond everything that was queued ahead of it. Engines prefill in arrival order, so what was
 * queued ahead finishes first; anything more that finished before this first token reached the
 * engine ahead of it without this router having counted it: another router's booking that the
 * load sync brought only after this decision (a burst split across routers arrives at one
 * instant, and each decides before the others' bookings reach it), or a request this router
 * booked later that overtook it on the way. Counted, the sample says what the engine really did,
 * and those misses do not teach the predictor a slower speed or a longer latency: with four
 * routers, a fifth to a third of the samples were such, and the line they taught predicted small
 * requests on idle engines at twice their time (68 ms for 32 on conversation; bench/replay/findings.md,
 * "Races between routers"). Never less than the prediction counted: a prefill done just before
 * this first token may be reported by its router a little later. It can also count one that came
 * after this one if the router reads that first token first (both in one turn of its event loop):
 * an error of one prompt the other way, which the line's medians absorb.
 */
export function tokensInHindsight(b: PredictedBooking): number {
  const q = b.queue;
  if (q === undefined) return b.tokens;
  const extra = q.seqs.prefilledTokens - q.prefilledTokens - q.queuedTokens;
  return extra > 0 ? b.tokens + extra : b.tokens;
}

/**
 * The lease's first-token hook for one booking (RequestLease.book): one sample for `predictor`,
 * its tokens counted in hindsight (tokensInHindsight). `onError` hears |predicted ÷ observed − 1|
 * (the metric: the decision's prediction, whatever the hindsight).
 */
export function firstTokenSampler(
  predictor: TtftPredictor,
  b: PredictedBooking,
  onError?: (error: number) => void,
): FirstTokenHook {
  return (at) => {
    const error = predictor.observe({
      key: b.key,
      bookedAt: b.bookedAt,
      tokens: tokensInHindsight(b),
      ownTokens: b.ownTokens,
      predictedMs: b.predictedMs,
      stepMs: b.stepMs,
      at,
    });
    if (error !== undefined) onError?.(error);
  };
}

/**
 * The lease's end hook for one booking on `key` (RequestLease.book): the request's time on its
 * engine for the prefix traffic (Little's law), and, for a streamed answer with at least two
 * gaps, its mean inter-token gap and the decodes running on the rank then (`seqs`: the rank's
 * books, still holding this request) for the step-time line.
 */
export function decodeSampler(
  predictor: TtftPredictor,
  key: WorkerKey,
  bookedAt: number,
  seqs: ActiveSequences | undefined,
): LeaseEndHook {
  return (end) => {
    predictor.traffic.finished(end.at - bookedAt);
    if (
      seqs === undefined ||
      end.firstTokenAt === undefined ||
      end.lastTokenAt === undefined ||
      end.laterTokens < 2
    )
      return;
    const decodes = seqs.activeRequests - seqs.prefillingRequests;
    predictor.steps.observe({
      key,
      gapMs: (end.lastTokenAt - end.firstTokenAt) / end.laterTokens,
      decodes: Math.max(1, decodes),
    });
  };
}

/**
 * The prefill tokens still queued on a rank: every booked prefill's, less what the oldest has
 * computed since it could start (once booked, and once the prefill before it was seen done).
 * A prefill past its predicted end counts as finishing now: it cannot be negative work.
 */
function tokensAhead(seqs: ActiveSequences, msPerToken: number, now: number): number {
  if (seqs.prefillingRequests === 0) return 0;
  const total = seqs.activeTokens();
  if (!(msPerToken > 0)) return total;
  const started = Math.max(seqs.prefillHeadBookedAt, seqs.lastPrefillDoneAt);
  const done = Math.min(seqs.prefillHeadTokens, Math.max(0, now - started) / msPerToken);
  return total - done;
}

/**
 * A rank's factor from the quartiles of its samples' ratios to the fleet's line and the typical
 * rank's median (`centre`): its median ÷ centre, but 1 unless three quarters of its ratios lie
 * above centre and its median is more than SAME_AS_FLEET above it. Noise scatters an identical
 * engine's ratios around the centre, sometimes by more than a quarter for a while (a busy
 * machine's stalls land on whichever engine is being waited on); an engine that is really slower
 * is so in nearly every sample.
 *
 * Never below 1: a rank is credited at most the typical rank's speed. A factor below 1 draws work,
 * and the one way a router measures an engine fast by mistake is common: with several routers,
 * each counts only its own bookings ahead of a request, so an engine the other routers happen to
 * use less reads fast, draws this router's work, then theirs (gen-rag with four routers: the
 * busiest engine at 1.30-1.33 × the mean work with factors below 1 allowed, 1.03-1.07 with this
 * floor). The price: in a fleet whose faster engines are fewer than half, those run at the typical
 * speed in the predictions, so they are not given more than their share.
 */
function factorOf(q1: number, mid: number, centre: number): number {
  const rel = mid / centre;
  if (!(q1 > centre) || rel < SAME_AS_FLEET) return 1;
  return Math.min(MAX_FACTOR, rel);
}

/** `buf` if it holds `n` numbers, else a new buffer twice as large (or `n`). */
function atLeast(buf: Float64Array, n: number): Float64Array {
  return buf.length >= n ? buf : new Float64Array(Math.max(n, 2 * buf.length));
}

/**
 * The (upper) median of `xs`, by quickselect: reorders `xs`, linear on average. A sort of the
 * pairwise slopes cost several times more, on every refit.
 */
function medianOf(xs: Float64Array): number {
  return selectNth(xs, xs.length >> 1);
}

/** The `k`-th smallest of `xs` (0-based), by quickselect: reorders `xs`. */
function selectNth(xs: Float64Array, k: number): number {
  let lo = 0;
  let hi = xs.length - 1;
  while (lo < hi) {
    const pivot = xs[(lo + hi) >> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (xs[i]! < pivot) i++;
      while (xs[j]! > pivot) j--;
      if (i <= j) {
        const t = xs[i]!;
        xs[i++] = xs[j]!;
        xs[j--] = t;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return xs[k]!;
  }
  return xs[k]!;
}
