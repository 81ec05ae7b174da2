/**
 * Predicts a request's time to first token on each (worker, dp rank) from what the books hold
 * there, and learns each rank's speed online from the first tokens the router sees.
 *
 * The model is the engines' own: one prefill at a time per rank, in arrival order, each taking
 * a per-request overhead plus a time per uncached token. So a request booked now on a rank gets
 * its first token after the prefill work queued ahead of it there (less what the oldest one has
 * done since it could start) and then its own uncached tokens, or, on an idle rank, after the
 * round trip to the engine and its own prefill:
 *   ttft = max(latency, queued ahead) + overhead + msPerToken × uncached.
 * What is uncached is the caller's to say (cached there, or being computed there by a request
 * ahead of it in the queue).
 *
 * Learning: each first token gives one sample. A request booked while the rank was busy started
 * when the previous prefill there finished, so the gap between the two first tokens is its own
 * prefill (overhead + msPerToken × uncached); a request booked on an idle rank took the round
 * trip plus its prefill. Each rank keeps its last WINDOW samples and fits the three numbers with
 * medians (of per-sample rates, then of the residuals), so a stray sample (a request stalled by a
 * restart, a GC pause) moves nothing, and a rank that really slows down or speeds up is followed
 * within half a window. A rank without enough samples of its own borrows the fleet's median,
 * which is how a new or restarted engine starts. Per rank, so mixed GPUs are fine.
 *
 * PURE: times are milliseconds passed in; no clock, no I/O. It books nothing and chooses nothing.
 */
import { parseWorkerKey, type WorkerId, type WorkerKey } from "../../core/ids.ts";
import type { ActiveSequences } from "./active-sequences.ts";
import type { LoadTracker } from "./load-tracker.ts";
import type { FirstTokenHook } from "./request-lease.ts";

/** One rank's learned speed. */
export interface EngineSpeed {
  /** Prefill time per uncached prompt token. */
  readonly msPerToken: number;
  /** Engine time per request on top of its tokens (scheduling, the first sampling step). */
  readonly overheadMs: number;
  /** Round trip router → engine → router, paid by a request that found the rank idle. */
  readonly latencyMs: number;
  /** Where these numbers come from: the rank's own samples, the fleet's, or the prior. */
  readonly source: "own" | "fleet" | "prior";
}

/** One request's first token, as the router saw it. */
export interface FirstTokenObservation {
  readonly key: WorkerKey;
  /** When the request was booked on the rank (ms). */
  readonly bookedAt: number;
  /** When its first token arrived (ms). */
  readonly at: number;
  /** Prompt tokens the rank had to compute for it. */
  readonly uncachedTokens: number;
  /** When the rank's previous prefill was seen done (ms; -Infinity when none). */
  readonly previousDoneAt: number;
  /** What was predicted when it was routed, if anything. */
  readonly predictedMs?: number;
}

/** Samples kept per rank: enough for a stable median, few enough to follow a change quickly. */
export const WINDOW = 32;
/** A rank's own estimate is used from this many rate samples on; before, the fleet's. */
export const MIN_OWN_SAMPLES = 4;
/**
 * Before any engine has answered: 20k prefill tokens per second (a mid-size model on one
 * GPU). Only the ranks' relative order matters until the first samples arrive, and with no
 * overhead and no latency that order is by tokens alone, whatever this number is.
 */
export const PRIOR: EngineSpeed = { msPerToken: 0.05, overheadMs: 0, latencyMs: 0, source: "prior" };

class RankSamples {
  readonly tokens = new Float64Array(WINDOW);
  readonly ms = new Float64Array(WINDOW);
  /** 1 when the request waited behind another (its sample is overhead + tokens, no round trip). */
  readonly queued = new Uint8Array(WINDOW);
  count = 0;
  #next = 0;
  msPerToken = NaN;
  overheadMs = 0;
  latencyMs = 0;
  rateSamples = 0;

  add(tokens: number, ms: number, queued: boolean): void {
    this.tokens[this.#next] = tokens;
    this.ms[this.#next] = ms;
    this.queued[this.#next] = queued ? 1 : 0;
    this.#next = (this.#next + 1) % WINDOW;
    if (this.count < WINDOW) this.count++;
  }

  /**
   * Refit from the window: the rate as the median of per-sample rates (samples with at least
   * `minTokens` uncached, so the fixed parts do not swamp them), then overhead and latency as
   * medians of what the rate leaves, twice so each sees the other's update.
   */
  refit(minTokens: number, prior: EngineSpeed): void {
    let overhead = this.overheadMs;
    let latency = this.latencyMs;
    let rate = Number.isNaN(this.msPerToken) ? prior.msPerToken : this.msPerToken;
    const rates: number[] = [];
    const queuedRest: number[] = [];
    const idleRest: number[] = [];
    for (let pass = 0; pass < 2; pass++) {
      rates.length = 0;
      for (let i = 0; i < this.count; i++) {
        const t = this.tokens[i]!;
        if (t < minTokens) continue;
        const fixed = this.queued[i] ? overhead : overhead + latency;
        rates.push(Math.max(0, this.ms[i]! - fixed) / t);
      }
      if (rates.length > 0) rate = median(rates);
      queuedRest.length = 0;
      idleRest.length = 0;
      for (let i = 0; i < this.count; i++) (this.queued[i] ? queuedRest : idleRest).push(this.ms[i]! - rate * this.tokens[i]!);
      if (queuedRest.length > 0) overhead = Math.max(0, median(queuedRest));
      if (idleRest.length > 0) latency = Math.max(0, median(idleRest) - overhead);
    }
    this.rateSamples = rates.length;
    this.msPerToken = rates.length > 0 ? rate : NaN;
    this.overheadMs = overhead;
    this.latencyMs = latency;
  }
}

export interface TtftPredictorOptions {
  /** Tokens per KV block: a sample tells the rate only when at least a block was computed. */
  readonly blockSize: number;
}

export class TtftPredictor {
  readonly #ranks = new Map<WorkerKey, RankSamples>();
  readonly #minTokens: number;
  #fleet: EngineSpeed = PRIOR;

  constructor(opts: TtftPredictorOptions) {
    if (!(opts.blockSize >= 1)) throw new Error(`block size must be >= 1, got ${opts.blockSize}`);
    this.#minTokens = opts.blockSize;
  }

  /** The speed used for `key`: its own once it has MIN_OWN_SAMPLES rate samples, else the fleet's median. */
  speed(key: WorkerKey): EngineSpeed {
    const r = this.#ranks.get(key);
    if (r === undefined || r.rateSamples < MIN_OWN_SAMPLES) return this.#fleet;
    return { msPerToken: r.msPerToken, overheadMs: r.overheadMs, latencyMs: r.latencyMs, source: "own" };
  }

  /**
   * Predicted TTFT (ms) of a request booked now on `key` that must compute `uncachedTokens`
   * there, behind the prefills `seqs` (the rank's books) still hold. No books: an idle rank.
   */
  predict(seqs: ActiveSequences | undefined, key: WorkerKey, uncachedTokens: number, now: number): number {
    const sp = this.speed(key);
    const own = sp.overheadMs + sp.msPerToken * uncachedTokens;
    if (seqs === undefined || seqs.prefillingRequests === 0) return sp.latencyMs + own;
    return Math.max(sp.latencyMs, queuedAheadMs(seqs, sp, now)) + own;
  }

  /**
   * Learn from one first token. Returns |predicted ÷ observed − 1| when the request carried a
   * prediction (the predictor's error, for the metric), else undefined.
   */
  observe(o: FirstTokenObservation): number | undefined {
    const observed = o.at - o.bookedAt;
    if (!(observed >= 0) || !(o.uncachedTokens >= 0)) return undefined;
    // Booked while the rank was busy and the lane freed after: it started when the previous
    // prefill there finished, so the gap between the two first tokens is its own prefill.
    const queued = o.previousDoneAt > o.bookedAt && o.previousDoneAt <= o.at;
    let r = this.#ranks.get(o.key);
    if (r === undefined) {
      r = new RankSamples();
      this.#ranks.set(o.key, r);
    }
    r.add(o.uncachedTokens, queued ? o.at - o.previousDoneAt : observed, queued);
    r.refit(this.#minTokens, this.#fleet);
    this.#refleet();
    if (o.predictedMs === undefined || !(observed > 0)) return undefined;
    return Math.abs(o.predictedMs / observed - 1);
  }

  /** Drop a worker's samples, every rank (it left); if it comes back it starts from the fleet's speed. */
  forgetWorker(workerId: WorkerId): void {
    let dropped = false;
    for (const key of [...this.#ranks.keys()]) {
      if (parseWorkerKey(key).workerId !== workerId) continue;
      this.#ranks.delete(key);
      dropped = true;
    }
    if (dropped) this.#refleet();
  }

  /**
   * The fleet's speed: per-number medians over the ranks with at least one rate sample, so a
   * single first token already replaces the prior for every rank that has none of its own.
   */
  #refleet(): void {
    const rates: number[] = [];
    const overheads: number[] = [];
    const latencies: number[] = [];
    for (const r of this.#ranks.values()) {
      if (r.rateSamples === 0) continue;
      rates.push(r.msPerToken);
      overheads.push(r.overheadMs);
      latencies.push(r.latencyMs);
    }
    this.#fleet = rates.length === 0 ? PRIOR : { msPerToken: median(rates), overheadMs: median(overheads), latencyMs: median(latencies), source: "fleet" };
  }
}

/** What a booking tells the predictor when its first token comes. */
export interface PredictedBooking {
  readonly key: WorkerKey;
  readonly bookedAt: number;
  readonly uncachedTokens: number;
  readonly predictedMs?: number;
}

/**
 * The lease's first-token hook for one booking (RequestLease.book): one sample for `predictor`,
 * read before the lease marks the prefill done, so the rank's last prefill is still the one
 * before this. `onError` hears |predicted ÷ observed − 1| (the metric).
 */
export function firstTokenSampler(
  predictor: TtftPredictor,
  tracker: LoadTracker,
  b: PredictedBooking,
  onError?: (error: number) => void,
): FirstTokenHook {
  return (at) => {
    const previousDoneAt = tracker.slotOf(b.key)?.lastPrefillDoneAt ?? -Infinity;
    const error = predictor.observe({ ...b, at, previousDoneAt });
    if (error !== undefined) onError?.(error);
  };
}

/**
 * The prefill time still queued on a rank: every booked prefill's overhead and tokens, less
 * what the oldest has done since it could start (booked and sent, and the lane free). A prefill
 * past its predicted end counts as finishing now: it cannot be negative work.
 */
function queuedAheadMs(seqs: ActiveSequences, sp: EngineSpeed, now: number): number {
  const total = seqs.prefillingRequests * sp.overheadMs + sp.msPerToken * seqs.activeTokens();
  const head = seqs.prefillHead();
  if (head === undefined) return total;
  const started = Math.max(head.bookedAt + sp.latencyMs, seqs.lastPrefillDoneAt);
  const headMs = sp.overheadMs + sp.msPerToken * head.tokens;
  const done = Math.min(headMs, Math.max(0, now - started));
  return total - done;
}

function median(xs: number[]): number {
  xs.sort((a, b) => a - b);
  const m = xs.length >> 1;
  return xs.length % 2 ? xs[m]! : (xs[m - 1]! + xs[m]!) / 2;
}
