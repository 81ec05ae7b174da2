/**
 * How fast each prefix's requests arrive, and how long a request stays on its engine: with both,
 * Little's law gives how many of a prefix group's requests run at once on the engine that holds
 * it (`runningOf`), the batch a group brings where it is placed.
 *
 * A prefix is named by the sequence hash of its last block: a request is counted under the
 * longest prefix of its prompt some engine holds or is computing when it is routed (its group: the
 * siblings that share a system prompt, a document, an agent's tools). A request nothing matches
 * starts a group whose rate is not known yet: it is priced at the typical group's rate (the median
 * of the groups seen recently, each read as its gaps over its life so far; before any group has a
 * gap, the decisions' rate shared among the prefixes started), so the first of a burst of new
 * groups is priced like the ones whose siblings are already arriving.
 *
 * Rates are exponentially smoothed gaps between a group's arrivals (a group gone quiet decays:
 * the gap since its last arrival counts once it is longer). Bounded: MAX_PREFIXES groups, the
 * least recently seen out first.
 *
 * Per rank, the group traffic it draws (`hostedPerMs`): each group's rate shared among its homes
 * (the ranks its requests were booked on; a group's own rate shrunk towards the typical one by
 * PRIOR_GAPS gaps, and none once it has gone quiet), plus the new prefixes booked there whose
 * siblings have not come yet, each at the typical group's rate. A new prefix cannot be named as a group until
 * a sibling shows which part of it is shared, so it waits on its rank as pending; the first
 * sibling booked on a rank that holds it names it (`arrive` with its holders). A pending prefix
 * that draws no sibling within PENDING_GAPS typical gaps was no group, and stops counting. So the
 * first placement of a group is priced for the traffic it will bring before that traffic shows:
 * in a burst of new groups, an engine that just took one reads busier to the next
 * (costs/arrivals-behind.ts). Bounded: MAX_HOMES per group, MAX_PENDING per rank.
 *
 * PURE: time is `now` in ms, passed in; it chooses and books nothing.
 */
import type { WorkerKey } from "../../core/ids.ts";

/** Ranks a group's rate is shared among: its most recent homes. */
export const MAX_HOMES = 8;
/** New prefixes kept pending per rank (the oldest dropped first). */
export const MAX_PENDING = 64;
/** A pending new prefix, or a group gone quiet, stops counting after this many of the typical group's gaps (or its own, if longer) without an arrival: the first sibling comes later than that once in e⁴ ≈ 55. */
export const PENDING_GAPS = 4;

/** Decisions the rate of a burst of new prefixes is read over. */
const DECISIONS_KEPT = 64;
/**
 * A group's own rate counts as much as the typical group's once it has shown this many gaps: its
 * first few gaps are single exponential draws, and ranking engines by them put three of SGLang's
 * shared-prefix groups on one engine in the timing simulation (4 gaps: 2 seeds of 8; 16: none).
 */
export const PRIOR_GAPS = 16;

/** Prefix groups remembered (each a few numbers). */
export const MAX_PREFIXES = 4096;
/** Weight of the newest gap in a group's smoothed gap. */
const GAP_SMOOTHING = 0.25;
/** Weight of the newest request's time on its engine in the smoothed duration. */
const DURATION_SMOOTHING = 0.05;
/** The typical rate is recomputed after this many arrivals (a scan of the groups). */
const TYPICAL_EVERY = 16;

interface Group {
  /** Its first arrival (ms). */
  first: number;
  last: number;
  /** Smoothed ms between arrivals; NaN until the second arrival. */
  gap: number;
  /** Gaps seen (arrivals − 1). */
  gaps: number;
  /** Ranks its requests were booked on, the most recent last. */
  homes: WorkerKey[];
}

export class PrefixTraffic {
  readonly #groups = new Map<bigint, Group>();
  /** Per rank, the groups it is a home of. */
  readonly #hosted = new Map<WorkerKey, Set<bigint>>();
  /** Per rank, when each new prefix booked there that no sibling has named yet was booked. */
  readonly #pending = new Map<WorkerKey, number[]>();
  #durationMs = NaN;
  #typicalPerMs = 0;
  #sinceTypical = 0;
  /** When the last DECISIONS_KEPT decisions (arrivals and new prefixes) were counted, a ring. */
  readonly #decidedAt = new Float64Array(DECISIONS_KEPT);
  #decisions = 0;

  /**
   * A request of prefix `key` was booked at `now` on `rank`. `holders`: the ranks that held the
   * prefix when it was routed; on a group's first arrival, each names one new prefix pending
   * there (the request that put the prefix there was this group's first).
   */
  arrive(key: bigint, now: number, rank?: WorkerKey, holders?: readonly WorkerKey[]): void {
    let g = this.#groups.get(key);
    if (g === undefined) {
      if (this.#groups.size >= MAX_PREFIXES) this.#evict(this.#groups.keys().next().value!);
      g = { first: now, last: now, gap: NaN, gaps: 0, homes: [] };
      this.#groups.set(key, g);
      for (const h of holders ?? []) {
        this.#pending.get(h)?.shift();
        this.#addHome(key, g, h);
      }
    } else {
      const dt = Math.max(0, now - g.last);
      g.gap = Number.isNaN(g.gap) ? dt : g.gap + GAP_SMOOTHING * (dt - g.gap);
      g.gaps++;
      g.last = now;
      // Re-inserted: the Map's order is least recently seen first.
      this.#groups.delete(key);
      this.#groups.set(key, g);
    }
    if (rank !== undefined) this.#addHome(key, g, rank);
    this.#decided(now);
  }

  /** Whether prefix `key` is a group already (its first arrival is counted). */
  knows(key: bigint): boolean {
    return this.#groups.has(key);
  }

  /** A request that starts a new prefix (no engine held any of its prompt) was booked on `rank` at `now`. */
  startedPrefix(rank: WorkerKey, now: number): void {
    let p = this.#pending.get(rank);
    if (p === undefined) this.#pending.set(rank, (p = []));
    if (p.length >= MAX_PENDING) p.shift();
    p.push(now);
    this.#decided(now);
  }

  #decided(now: number): void {
    this.#decidedAt[this.#decisions++ % DECISIONS_KEPT] = now;
    if (++this.#sinceTypical >= TYPICAL_EVERY) this.#refreshTypical(now);
  }

  /**
   * The group traffic `rank` draws, in arrivals per ms: each group it is a home of at its rate ÷
   * its homes, and each new prefix pending there at the typical group's rate (one booked within
   * PENDING_GAPS typical gaps). 0 for a rank that holds no group.
   */
  hostedPerMs(rank: WorkerKey, now: number): number {
    const typical = this.#typicalPerMs;
    // Until some group's rate is known, none is counted: a group that happened to show a gap
    // first must not make its rank read busier than one whose groups are as new.
    if (typical === 0) return 0;
    let sum = 0;
    const hosted = this.#hosted.get(rank);
    if (hosted !== undefined)
      for (const key of hosted) {
        const g = this.#groups.get(key)!;
        // Gone quiet for PENDING_GAPS of its gaps, or of the typical group's if longer (a group's
        // first gaps are single draws): it draws nothing more here. A prompt sent twice is named
        // as a group of its own, which its later silence retires.
        const gap = Math.max(1 / typical, g.gaps === 0 ? 0 : (g.last - g.first) / g.gaps);
        if (now - g.last > PENDING_GAPS * gap) continue;
        // Shrunk towards the typical rate by PRIOR_GAPS gaps' worth: a group's first gaps are
        // single Poisson draws (two siblings 10 ms apart read as 100 a second).
        const own = spanRate(g, now);
        sum += (g.gaps * own + PRIOR_GAPS * typical) / (g.gaps + PRIOR_GAPS) / g.homes.length;
      }
    const p = this.#pending.get(rank);
    if (p !== undefined && p.length > 0) {
      const since = now - PENDING_GAPS / typical;
      while (p.length > 0 && p[0]! < since) p.shift();
      sum += p.length * typical;
    }
    return sum;
  }

  /** Forget a rank (its worker left): its pending prefixes, and it as a home. */
  forgetRank(rank: WorkerKey): void {
    this.#pending.delete(rank);
    const hosted = this.#hosted.get(rank);
    if (hosted === undefined) return;
    for (const key of hosted) {
      const g = this.#groups.get(key);
      if (g !== undefined) g.homes = g.homes.filter((h) => h !== rank);
    }
    this.#hosted.delete(rank);
  }

  #addHome(key: bigint, g: Group, rank: WorkerKey): void {
    const at = g.homes.indexOf(rank);
    if (at === g.homes.length - 1 && at >= 0) return;
    if (at >= 0) g.homes.splice(at, 1);
    else if (g.homes.length >= MAX_HOMES) this.#hosted.get(g.homes.shift()!)?.delete(key);
    g.homes.push(rank);
    let set = this.#hosted.get(rank);
    if (set === undefined) this.#hosted.set(rank, (set = new Set()));
    set.add(key);
  }

  #evict(key: bigint): void {
    const g = this.#groups.get(key);
    if (g !== undefined) for (const h of g.homes) this.#hosted.get(h)?.delete(key);
    this.#groups.delete(key);
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

  /**
   * The typical group's rate: the median over groups with a gap of their gaps ÷ the time since
   * their first arrival (not 1 ÷ the smoothed gap: a group's first gaps are single exponential
   * draws, whose inverse overstates its rate, two siblings 10 ms apart reading 100 a second),
   * ignoring groups quiet for over four of their mean gaps.
   */
  #refreshTypical(now: number): void {
    this.#sinceTypical = 0;
    const rates: number[] = [];
    for (const g of this.#groups.values()) {
      if (g.gaps === 0 || now - g.last > (4 * Math.max(g.last - g.first, 1)) / g.gaps) continue;
      rates.push(spanRate(g, now));
    }
    rates.sort((a, b) => a - b);
    this.#typicalPerMs = rates.length === 0 ? this.#sharePerPrefix(now) : rates[rates.length >> 1]!;
  }

  /**
   * Before any group has shown a gap (a burst of new prefixes): the decisions' rate shared among
   * the prefixes started over the last DECISIONS_KEPT decisions. The siblings of a burst of new
   * groups are as many of the coming requests as there are groups, whatever they turn out to be;
   * prompts nobody shares are priced at the same share, which is the rate each of them draws.
   */
  #sharePerPrefix(now: number): number {
    const n = Math.min(this.#decisions, DECISIONS_KEPT);
    if (n < 2) return 0;
    const oldest =
      this.#decidedAt[this.#decisions < DECISIONS_KEPT ? 0 : this.#decisions % DECISIONS_KEPT]!;
    let prefixes = 0;
    for (const p of this.#pending.values()) for (const at of p) if (at >= oldest) prefixes++;
    if (prefixes === 0) return 0;
    for (const g of this.#groups.values()) if (g.last >= oldest) prefixes++;
    return (n - 1) / Math.max(now - oldest, 1) / prefixes;
  }

  /** Groups remembered (tests). */
  get size(): number {
    return this.#groups.size;
  }
}

/** A group's arrivals per ms over its life so far: its gaps ÷ the time since its first arrival (0 with none). */
function spanRate(g: Group, now: number): number {
  return g.gaps === 0 ? 0 : g.gaps / Math.max(now - g.first, 1);
}
