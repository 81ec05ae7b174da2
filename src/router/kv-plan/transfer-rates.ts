/**
 * The learned speeds of moving KV instead of computing it, in ms per token: per engine rank and
 * lower tier (its CPU or disk loads) and per link (a peer's blocks pulled to a rank). Each is the
 * median of the last samples a first token gave (plan.ts attributes to the transfer what the
 * first token took beyond the prediction's computed part); before its own first sample, the
 * fleet's recent median of its kind where that is faster than the prior; else a prior,
 * as a fraction of the rank's learned compute speed, so a faster or slower engine keeps the
 * same proportion.
 *
 * Priors, from an H100 serving Llama-3.1-8B in bf16 (128 KiB of KV per token): a prefill computes
 * about 20k tokens/s (≈ 50 µs/token); PCIe Gen5 x16 moves ≈ 50 GB/s (2.6 µs/token, 1/19 of it),
 * one NVMe drive ≈ 7 GB/s (19 µs/token, ≈ 1/3), a 400 Gb/s NIC ≈ 50 GB/s plus a round trip to
 * the peer. They are rounded towards the slower side (1/16, 1/4, 1/8): a prior that is too
 * optimistic is corrected by the first transfer it plans, one too pessimistic would never be tried.
 *
 * The peer's load: pulls this router planned from one source share its link, so a new pull waits
 * for what those have left (`queuedFrom`). Entries expire at their predicted end: nothing to free.
 *
 * PURE: time is passed in.
 */
import type { KvMedium } from "../../core/events.ts";

/** Samples kept per rate: a median over them shrugs off a stalled first token or two. */
const SAMPLES = 9;
/** Rates kept (ranks × tiers + links actually used): the oldest goes first past this. */
const MAX_RATES = 4096;
/** Pulls remembered per source, the oldest dropped first (they have usually ended). */
const MAX_PULLS_PER_SOURCE = 64;

export const PRIOR_SHARE: Readonly<Record<"cpu" | "disk" | "link", number>> = {
  cpu: 1 / 16,
  disk: 1 / 4,
  link: 1 / 8,
};

export type TransferKind = Exclude<KvMedium, "gpu"> | "link";

export interface RateReading {
  readonly msPerToken: number;
  /** "learned" (median of its own first tokens), "fleet" (of the fleet's, same kind) or "prior". */
  readonly source: "learned" | "fleet" | "prior";
  readonly samples: number;
}

/** Samples kept per kind across the fleet: what a rate not sampled yet is taken to be. */
const FLEET_SAMPLES = 33;

export class TransferRates {
  readonly #rates = new Map<string, number[]>();
  readonly #fleet = new Map<TransferKind, number[]>();
  readonly #pulls = new Map<string, { endsAt: number; ms: number }[]>();

  /** `to` is the rank's key; `from` the source worker's key for a link, unused for a tier. */
  static keyOf(kind: TransferKind, to: string, from?: string): string {
    return kind === "link" ? `${from}>${to}` : `${to}|${kind}`;
  }

  /**
   * Its own median once sampled. Before that, the prior, or the median of the fleet's recent
   * samples of its kind where that is faster: a fan-out pulls over many links, each used once
   * or twice, so a link's own samples come late, and one fleet's links run at about one speed.
   * Only faster: a slow or broken link must not make the others look slow before they are tried
   * (the prior is already on the slow side, see above).
   */
  msPerToken(kind: TransferKind, key: string, computeMsPerToken: number): number {
    const s = this.#rates.get(key);
    if (s !== undefined && s.length > 0) return median(s);
    const prior = computeMsPerToken * PRIOR_SHARE[kind];
    const fleet = this.#fleet.get(kind);
    return fleet !== undefined && fleet.length > 0 ? Math.min(prior, median(fleet)) : prior;
  }

  reading(kind: TransferKind, key: string, computeMsPerToken: number): RateReading {
    const s = this.#rates.get(key);
    const fleet = this.#fleet.get(kind);
    const ms = this.msPerToken(kind, key, computeMsPerToken);
    const own = s !== undefined && s.length > 0;
    const fromFleet = !own && fleet !== undefined && fleet.length > 0 && ms === median(fleet);
    return {
      msPerToken: ms,
      source: own ? "learned" : fromFleet ? "fleet" : "prior",
      samples: own ? s.length : fromFleet ? fleet.length : 0,
    };
  }

  observe(key: string, msPerToken: number): void {
    if (!Number.isFinite(msPerToken) || msPerToken < 0) return;
    const kind = kindOf(key);
    let fleet = this.#fleet.get(kind);
    if (fleet === undefined) this.#fleet.set(kind, (fleet = []));
    fleet.push(msPerToken);
    if (fleet.length > FLEET_SAMPLES) fleet.shift();
    let s = this.#rates.get(key);
    if (s === undefined) {
      if (this.#rates.size >= MAX_RATES) this.#rates.delete(this.#rates.keys().next().value!);
      this.#rates.set(key, (s = []));
    }
    s.push(msPerToken);
    if (s.length > SAMPLES) s.shift();
  }

  /** A pull planned from `fromKey` starting at `now`, predicted to take `ms`. */
  startPull(fromKey: string, now: number, ms: number): void {
    let p = this.#pulls.get(fromKey);
    if (p === undefined) {
      if (this.#pulls.size >= MAX_RATES) this.#pulls.delete(this.#pulls.keys().next().value!);
      this.#pulls.set(fromKey, (p = []));
    }
    p.push({ endsAt: now + ms, ms });
    if (p.length > MAX_PULLS_PER_SOURCE) p.shift();
  }

  /** What the pulls still running from `fromKey` have left to move, in ms: a new one waits for it. */
  queuedFrom(fromKey: string, now: number): number {
    const p = this.#pulls.get(fromKey);
    if (p === undefined) return 0;
    let left = 0;
    let live = 0;
    for (const x of p) {
      if (x.endsAt <= now) continue;
      p[live++] = x;
      left += Math.min(x.ms, x.endsAt - now);
    }
    p.length = live;
    if (live === 0) this.#pulls.delete(fromKey);
    return left;
  }

  /** A worker left: its rates and pulls are forgotten (a new incarnation may sit elsewhere). */
  forgetWorker(workerId: bigint): void {
    const w = workerId.toString();
    const mine = (k: string) =>
      k.startsWith(`${w}:`) || k.includes(`>${w}:`) || k.startsWith(`${w}>`);
    for (const k of [...this.#rates.keys()]) if (mine(k)) this.#rates.delete(k);
    for (const k of [...this.#pulls.keys()]) if (mine(k)) this.#pulls.delete(k);
  }
}

/** The kind of a key made by keyOf. */
function kindOf(key: string): TransferKind {
  if (key.includes(">")) return "link";
  return key.endsWith("|disk") ? "disk" : "cpu";
}

function median(s: readonly number[]): number {
  const a = [...s].sort((x, y) => x - y);
  const m = a.length >> 1;
  return a.length % 2 === 1 ? a[m]! : (a[m - 1]! + a[m]!) / 2;
}
