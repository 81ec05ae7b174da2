/**
 * How fast each prefix's requests arrive, and how long a request stays on its engine: with both,
 * Little's law gives how many of a prefix group's requests run at once on the engine that holds
 * it (`runningOf`), the batch a group brings where it is placed.
 *
 * A prefix is named by the sequence hash of its last block: a request is counted under the
 * longest prefix of its prompt some engine holds or is computing when it is routed (its group: the
 * siblings that share a system prompt, a document, an agent's tools). A request nothing matches
 * starts a group whose rate is not known yet: it is priced at the typical group's rate (the median
 * of the groups seen recently), so the first of a burst of new groups is priced like the ones
 * whose siblings are already arriving.
 *
 * Rates are exponentially smoothed gaps between a group's arrivals (a group gone quiet decays:
 * the gap since its last arrival counts once it is longer). Bounded: MAX_PREFIXES groups, the
 * least recently seen out first. PURE: time is `now` in ms, passed in; it chooses and books nothing.
 */

/** Prefix groups remembered (each a few numbers). */
export const MAX_PREFIXES = 4096;
/** Weight of the newest gap in a group's smoothed gap. */
const GAP_SMOOTHING = 0.25;
/** Weight of the newest request's time on its engine in the smoothed duration. */
const DURATION_SMOOTHING = 0.05;
/** The typical rate is recomputed after this many arrivals (a scan of the groups). */
const TYPICAL_EVERY = 16;

interface Group {
  last: number;
  /** Smoothed ms between arrivals; NaN until the second arrival. */
  gap: number;
}

export class PrefixTraffic {
  readonly #groups = new Map<bigint, Group>();
  #durationMs = NaN;
  #typicalPerMs = 0;
  #sinceTypical = 0;

  /** A request of prefix `key` was booked at `now`. */
  arrive(key: bigint, now: number): void {
    const g = this.#groups.get(key);
    if (g === undefined) {
      if (this.#groups.size >= MAX_PREFIXES) this.#groups.delete(this.#groups.keys().next().value!);
      this.#groups.set(key, { last: now, gap: NaN });
    } else {
      const dt = Math.max(0, now - g.last);
      g.gap = Number.isNaN(g.gap) ? dt : g.gap + GAP_SMOOTHING * (dt - g.gap);
      g.last = now;
      // Re-inserted: the Map's order is least recently seen first.
      this.#groups.delete(key);
      this.#groups.set(key, g);
    }
    if (++this.#sinceTypical >= TYPICAL_EVERY) this.#refreshTypical(now);
  }

  /** A request spent `ms` on its engine (booked to freed). */
  finished(ms: number): void {
    if (!(ms >= 0 && Number.isFinite(ms))) return;
    this.#durationMs = Number.isNaN(this.#durationMs)
      ? ms
      : this.#durationMs + DURATION_SMOOTHING * (ms - this.#durationMs);
  }

  /** The smoothed time a request stays on its engine (ms); 0 before any finished. */
  get durationMs(): number {
    return Number.isNaN(this.#durationMs) ? 0 : this.#durationMs;
  }

  /** Arrivals per ms of prefix `key` (undefined: the typical group's). 0 when nothing is known. */
  ratePerMs(key: bigint | undefined, now: number): number {
    const g = key === undefined ? undefined : this.#groups.get(key);
    if (g === undefined || Number.isNaN(g.gap)) return this.#typicalPerMs;
    return 1 / Math.max(g.gap, now - g.last, 1e-3);
  }

  /** Requests of the group running at once on the engine that holds it (Little's law: rate × time on the engine). */
  runningOf(key: bigint | undefined, now: number): number {
    return this.ratePerMs(key, now) * this.durationMs;
  }

  /** The typical group's rate: the median over groups with a gap, ignoring ones quiet for over four of their gaps. */
  #refreshTypical(now: number): void {
    this.#sinceTypical = 0;
    const rates: number[] = [];
    for (const g of this.#groups.values()) {
      if (Number.isNaN(g.gap) || now - g.last > 4 * Math.max(g.gap, 1)) continue;
      rates.push(1 / Math.max(g.gap, now - g.last, 1e-3));
    }
    rates.sort((a, b) => a - b);
    this.#typicalPerMs = rates.length === 0 ? 0 : rates[rates.length >> 1]!;
  }

  /** Groups remembered (tests). */
  get size(): number {
    return this.#groups.size;
  }
}
