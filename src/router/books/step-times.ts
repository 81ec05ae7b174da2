/**
 * Each rank's decode step time as it grows with its batch, learned from the inter-token gaps the
 * router sees: one sample per streamed answer (its mean gap between output tokens, and the rank's
 * running decodes then), a fleet line gap = base + perSeq × decodes fitted with medians
 * (Theil–Sen, as the TTFT predictor's line), and per rank a factor on it (a slower GPU, an engine
 * whose host is busier) by the predictor's rules: the median of its own samples' ratios to the
 * line ÷ the typical rank's, 1 unless three quarters of them read more than STEP_SAME_AS_FLEET
 * slower, never below 1.
 *
 * Why: engines interleave a prefill with the batch that is decoding (vLLM V1's scheduler gives
 * every step a token budget that the running decodes take first, chunked prefill shares the rest),
 * so a prompt on a rank whose batch is full of decodes waits for those steps. How much of a step a
 * first token waits for is the TTFT predictor's to learn (ttft-predictor.ts, `decodeWeight`): on
 * an engine with a separate prefill lane it is nothing.
 *
 * PURE: no clock, no I/O; it chooses and books nothing.
 */
import type { WorkerKey } from "../../core/ids.ts";

/** Samples the fleet's line is fitted to. */
export const STEP_WINDOW = 64;
/** Samples kept per rank for its factor. */
export const STEP_RANK_WINDOW = 16;
/** A rank's own factor from this many samples. */
export const MIN_STEP_SAMPLES = 4;
/** A factor within [1, this] counts as the fleet's (the TTFT predictor's SAME_AS_FLEET, for the same reason: noise on identical engines). */
export const STEP_SAME_AS_FLEET = 1.25;
/** A factor stays at most this. */
export const MAX_STEP_FACTOR = 4;
/** Once the window is full, the line is refitted every this many samples. */
const REFIT_EVERY = 8;

/** One answer's decode as the router saw it. */
export interface DecodeObservation {
  readonly key: WorkerKey;
  /** Mean ms between its output tokens (after the first). */
  readonly gapMs: number;
  /** Decodes running on the rank meanwhile (the router's books). */
  readonly decodes: number;
}

class Ring {
  readonly x: Float64Array;
  readonly y: Float64Array;
  count = 0;
  #next = 0;
  constructor(readonly size: number) {
    this.x = new Float64Array(size);
    this.y = new Float64Array(size);
  }
  add(x: number, y: number): void {
    this.x[this.#next] = x;
    this.y[this.#next] = y;
    this.#next = (this.#next + 1) % this.size;
    if (this.count < this.size) this.count++;
  }
}

export class StepTimes {
  readonly #fleet = new Ring(STEP_WINDOW);
  readonly #ranks = new Map<WorkerKey, Ring>();
  readonly #factors = new Map<WorkerKey, number>();
  #base = 0;
  #perSeq = 0;
  #fitted = false;
  #observed = 0;
  readonly #scratch = new Float64Array((STEP_WINDOW * (STEP_WINDOW - 1)) / 2);
  readonly #rankScratch = new Float64Array(STEP_RANK_WINDOW);

  /** Whether any gap has been seen (before that every step reads 0: nothing is known). */
  get fitted(): boolean {
    return this.#fitted;
  }

  /** The fleet's step with one decode, and what each further decode adds (ms). */
  get line(): { readonly baseMs: number; readonly perSeqMs: number } {
    return { baseMs: this.#base, perSeqMs: this.#perSeq };
  }

  /** The rank's step time (ms) with `decodes` running (at least one step's worth: a prefill runs a step too); 0 before any sample. */
  stepMs(key: WorkerKey, decodes: number): number {
    if (!this.#fitted) return 0;
    const f = this.#factors.size === 0 ? 1 : (this.#factors.get(key) ?? 1);
    return f * (this.#base + this.#perSeq * Math.max(0, decodes));
  }

  /** Learn from one answer's decode. Samples that are not times (negative, not finite) are ignored. */
  observe(o: DecodeObservation): void {
    if (!(o.gapMs >= 0 && Number.isFinite(o.gapMs) && o.decodes >= 0)) return;
    this.#fleet.add(o.decodes, o.gapMs);
    let r = this.#ranks.get(o.key);
    if (r === undefined) this.#ranks.set(o.key, (r = new Ring(STEP_RANK_WINDOW)));
    r.add(o.decodes, o.gapMs);
    this.#observed++;
    if (this.#fleet.count === STEP_WINDOW && this.#observed % REFIT_EVERY !== 0) return;
    this.#refit();
  }

  /** Forget a rank (its worker left). */
  forget(key: WorkerKey): void {
    this.#ranks.delete(key);
    this.#factors.delete(key);
  }

  #refit(): void {
    const { x, y, count: n } = this.#fleet;
    const s = this.#scratch;
    let k = 0;
    for (let i = 0; i < n; i++)
      for (let j = i + 1; j < n; j++) if (x[j] !== x[i]) s[k++] = (y[j]! - y[i]!) / (x[j]! - x[i]!);
    // A batch that grows makes no step faster: a negative slope is noise.
    const perSeq = k === 0 ? 0 : Math.max(0, median(s.subarray(0, k)));
    for (let i = 0; i < n; i++) s[i] = y[i]! - perSeq * x[i]!;
    const base = Math.max(0, median(s.subarray(0, n)));
    this.#base = base;
    this.#perSeq = perSeq;
    this.#fitted = n > 0;
    this.#factors.clear();
    // Each rank's quartile and median ratio to the line; the factor is against the typical rank's
    // (the lower median of the ranks' medians), not the line, as the TTFT predictor's: a line
    // through two engines of different speeds reads the faster one's steps as slower than it is.
    const q1s: number[] = [];
    const mids: number[] = [];
    const keys: WorkerKey[] = [];
    for (const [key, r] of this.#ranks) {
      if (r.count < MIN_STEP_SAMPLES) continue;
      const ratios = this.#rankScratch;
      let m = 0;
      for (let i = 0; i < r.count; i++) {
        const line = base + perSeq * r.x[i]!;
        if (line > 0) ratios[m++] = r.y[i]! / line;
      }
      if (m < MIN_STEP_SAMPLES) continue;
      const sorted = ratios.subarray(0, m).sort();
      q1s.push(sorted[Math.floor((m - 1) / 4)]!);
      mids.push(sorted[m >> 1]!);
      keys.push(key);
    }
    if (keys.length === 0) return;
    const centre = [...mids].sort((a, b) => a - b)[(mids.length - 1) >> 1]!;
    for (let i = 0; i < keys.length; i++) {
      const rel = mids[i]! / centre;
      if (q1s[i]! > centre && rel >= STEP_SAME_AS_FLEET)
        this.#factors.set(keys[i]!, Math.min(MAX_STEP_FACTOR, rel));
    }
  }
}

/** The upper median; sorts a copy-free view in place. */
function median(xs: Float64Array): number {
  xs.sort();
  return xs[xs.length >> 1]!;
}
