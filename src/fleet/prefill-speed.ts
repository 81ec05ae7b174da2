/**
 * An engine's own prefill speed, from the cumulative counters on its metrics page (vLLM's
 * prefill seconds and prefilled tokens, engine-metrics.ts): milliseconds per prefilled token
 * over what was prefilled since the last reading. The router's TTFT predictor starts from it
 * before it has seen first tokens of its own (a fresh router in front of a running fleet, a new
 * engine of a slower GPU model), so its first predictions are not a guess.
 *
 * A reading needs MIN_PREFILL_TOKENS prefilled since the last one: a few short prompts say
 * more about the engine's fixed costs than about its speed. The first reading of a rank counts
 * from zero, i.e. everything since the engine started. Counters that go down mean the engine
 * restarted: the next reading counts from zero again.
 *
 * What vLLM measures is each request's time from its first scheduling to its first token, so
 * prefills batched together (chunked prefill) each count the whole step: under load the speed
 * reads slower than the engine computes. Identical engines under like load read alike, and the
 * predictor uses the readings only relative to each other once it has fitted its own line.
 *
 * PURE: numbers in, numbers out; the scraper calls it once per rank per scrape.
 */
import type { DpRank, WorkerId } from "../core/ids.ts";

/** Prefilled tokens a reading needs since the last one (about two long prompts). */
export const MIN_PREFILL_TOKENS = 4096;

/** One rank's cumulative counters at one scrape. */
export interface PrefillCounters {
  readonly seconds: number;
  readonly tokens: number;
}

const ZERO: PrefillCounters = { seconds: 0, tokens: 0 };

export class PrefillSpeeds {
  /** Per worker, per rank: the counters of the last reading. */
  readonly #base = new Map<WorkerId, Map<DpRank, PrefillCounters>>();

  constructor(private readonly minTokens = MIN_PREFILL_TOKENS) {
    if (!(minTokens >= 1))
      throw new Error(`minimum prefilled tokens must be >= 1, got ${minTokens}`);
  }

  /**
   * A rank's counters at a scrape; returns its ms per prefilled token since the last reading,
   * or undefined when too few tokens were prefilled since (or the counters make no sense).
   */
  update(workerId: WorkerId, dpRank: DpRank, now: PrefillCounters): number | undefined {
    if (
      !(
        Number.isFinite(now.seconds) &&
        now.seconds >= 0 &&
        Number.isFinite(now.tokens) &&
        now.tokens >= 0
      )
    )
      return undefined;
    let ranks = this.#base.get(workerId);
    if (ranks === undefined) this.#base.set(workerId, (ranks = new Map()));
    let base = ranks.get(dpRank) ?? ZERO;
    // Counters only grow while the engine lives: lower ones are a restarted engine's, from zero.
    if (now.tokens < base.tokens || now.seconds < base.seconds) ranks.set(dpRank, (base = ZERO));
    const tokens = now.tokens - base.tokens;
    if (tokens < this.minTokens) return undefined;
    ranks.set(dpRank, now);
    const seconds = now.seconds - base.seconds;
    return seconds > 0 ? (1000 * seconds) / tokens : undefined;
  }

  /** Drop every worker not in `live` (they left): one that comes back counts from zero. */
  keepOnly(live: ReadonlySet<WorkerId>): void {
    for (const id of this.#base.keys()) if (!live.has(id)) this.#base.delete(id);
  }
}
