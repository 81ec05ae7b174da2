/**
 * Passive health ("outlier detection"): the proxy reports how each answer of a worker went,
 * and a worker whose answers keep failing (5xx, streams cut, deadlines missed) is ejected
 * for a while, even if its /health says 200 — an engine that hangs or answers 500 still
 * looks idle to the scheduler and would otherwise draw more and more traffic.
 *
 * Modelled on Envoy's outlier detection (envoyproxy/envoy,
 * source/common/upstream/outlier_detection_impl.cc @00c7146d, docs/root/intro/arch_overview/
 * upstream/outlier.rst):
 * - consecutive failures (Envoy `consecutive_5xx`, default 5): ejected inline at the Nth;
 * - failure percentage (Envoy `failure_percentage_threshold` + `_request_volume`): a worker
 *   with at least `requestVolume` answers in the current interval, `failurePercent`% of them
 *   failed, is ejected. Envoy judges it per interval over hosts with enough volume and needs
 *   `failure_percentage_minimum_hosts` (5) hosts; routers front 2–8 engines, so that minimum
 *   is dropped and the check runs inline;
 * - ejection time = min(base × k, max) where k counts ejections and goes down by one for each
 *   interval the worker stays in service after its return (Envoy's `ejectTimeBackoff`);
 * - at most `maxEjectionPercent` of the workers ejected at once, but one always may be when
 *   there are two or more (Envoy's `max_ejection_percent` with `always_eject_one_host`); the
 *   only worker is never ejected (its failures reach the client either way; ejecting it would
 *   turn some failed requests into all of them).
 * One deliberate difference: Envoy lets a passing active health check end an ejection at once
 * (`successful_active_health_check_uneject_host`, default true). Here the ejection time must
 * pass first, then a good health check brings the worker back: a hung engine still answers
 * /health.
 *
 * PURE: time comes in as milliseconds; no timers, no I/O.
 */
import type { WorkerId } from "../core/ids.ts";

export interface OutlierConfig {
  /** Failures in a row that eject a worker; 0 = off. */
  readonly consecutiveFailures: number;
  /** Failed share (percent) of a worker's answers in one interval that ejects it; 0 = off. */
  readonly failurePercent: number;
  /** Answers a worker needs in the interval before its failure percentage counts. */
  readonly requestVolume: number;
  /** Length of a counting interval, and of one step down of the ejection multiplier (ms). */
  readonly intervalMs: number;
  /** First ejection time (ms); the k-th in a row lasts k times as long. */
  readonly baseEjectionMs: number;
  /** Longest ejection (ms). */
  readonly maxEjectionMs: number;
  /** Most workers ejected at once, in percent of the registered ones (one always may be, of two or more). */
  readonly maxEjectionPercent: number;
}

export interface Ejection {
  readonly workerId: WorkerId;
  /** Milliseconds (same clock as the calls) when the worker may come back. */
  readonly untilMs: number;
  /** The how-many-th ejection in a row (the multiplier used). */
  readonly multiplier: number;
  readonly reason: string;
}

interface WorkerState {
  consecutive: number;
  windowStart: number;
  windowTotal: number;
  windowFailed: number;
  /** Ejection multiplier (Envoy's ejectTimeBackoff). */
  backoff: number;
  ejectedUntil: number | undefined;
  /** When it last came back into service (for the multiplier's decay). */
  returnedAt: number | undefined;
}

export class OutlierDetector {
  readonly #c: OutlierConfig;
  readonly #workers = new Map<WorkerId, WorkerState>();
  /** How many workers are registered (the ejection cap is a share of them). */
  readonly #population: () => number;

  constructor(config: OutlierConfig, population: () => number) {
    this.#c = config;
    this.#population = population;
  }

  /** An answer that went well (non-5xx, stream complete). */
  success(id: WorkerId, nowMs: number): void {
    const s = this.#state(id, nowMs);
    s.consecutive = 0;
    s.windowTotal++;
  }

  /** An answer that failed; returns the ejection when this failure ejects the worker. */
  failure(id: WorkerId, nowMs: number, what: string): Ejection | undefined {
    const s = this.#state(id, nowMs);
    s.consecutive++;
    s.windowTotal++;
    s.windowFailed++;
    if (this.isEjected(id, nowMs)) return undefined;
    const c = this.#c;
    let reason: string | undefined;
    if (c.consecutiveFailures > 0 && s.consecutive >= c.consecutiveFailures) {
      reason = `${s.consecutive} failures in a row (last: ${what})`;
    } else if (
      c.failurePercent > 0 &&
      s.windowTotal >= c.requestVolume &&
      (100 * s.windowFailed) / s.windowTotal >= c.failurePercent
    ) {
      reason = `${s.windowFailed} of its last ${s.windowTotal} answers failed (last: ${what})`;
    }
    if (reason === undefined || !this.#mayEject(nowMs)) return undefined;
    return this.#eject(id, s, nowMs, reason);
  }

  /** Is the worker inside its ejection time? */
  isEjected(id: WorkerId, nowMs: number): boolean {
    const until = this.#workers.get(id)?.ejectedUntil;
    return until !== undefined && nowMs < until;
  }

  /** When its ejection ends, if it is (or was, and was not readmitted) ejected. */
  ejectedUntil(id: WorkerId): number | undefined {
    return this.#workers.get(id)?.ejectedUntil;
  }

  /**
   * The health checker put the worker back into service (its ejection time is over and a
   * check passed): counters start afresh, so a few new errors do not eject it again at once.
   */
  readmitted(id: WorkerId, nowMs: number): void {
    const s = this.#workers.get(id);
    if (s === undefined || s.ejectedUntil === undefined) return;
    s.ejectedUntil = undefined;
    s.returnedAt = nowMs;
    s.consecutive = 0;
    s.windowStart = nowMs;
    s.windowTotal = 0;
    s.windowFailed = 0;
  }

  forget(id: WorkerId): void {
    this.#workers.delete(id);
  }

  #state(id: WorkerId, nowMs: number): WorkerState {
    let s = this.#workers.get(id);
    if (s === undefined) {
      s = {
        consecutive: 0,
        windowStart: nowMs,
        windowTotal: 0,
        windowFailed: 0,
        backoff: 0,
        ejectedUntil: undefined,
        returnedAt: undefined,
      };
      this.#workers.set(id, s);
    } else if (nowMs - s.windowStart >= this.#c.intervalMs) {
      s.windowStart = nowMs;
      s.windowTotal = 0;
      s.windowFailed = 0;
    }
    return s;
  }

  #mayEject(nowMs: number): boolean {
    let ejected = 0;
    for (const s of this.#workers.values())
      if (s.ejectedUntil !== undefined && nowMs < s.ejectedUntil) ejected++;
    return mayTakeOut(ejected, this.#population(), this.#c.maxEjectionPercent);
  }

  #eject(id: WorkerId, s: WorkerState, nowMs: number, reason: string): Ejection {
    const c = this.#c;
    // The multiplier steps down once per interval spent in service since the last return.
    if (s.returnedAt !== undefined && c.intervalMs > 0) {
      s.backoff = Math.max(0, s.backoff - Math.floor((nowMs - s.returnedAt) / c.intervalMs));
    }
    if (s.backoff * c.baseEjectionMs < c.maxEjectionMs) s.backoff++;
    const duration = Math.min(c.baseEjectionMs * s.backoff, c.maxEjectionMs);
    s.ejectedUntil = nowMs + duration;
    s.returnedAt = undefined;
    s.consecutive = 0;
    return { workerId: id, untilMs: s.ejectedUntil, multiplier: s.backoff, reason };
  }
}

/**
 * Whether one more of `population` workers may be taken out of rotation while `out` already are,
 * with at most `maxPercent` out at once (Envoy's `max_ejection_percent`): one always may be of two
 * or more (`always_eject_one_host`), the only worker never (its failures reach clients either way;
 * taking it out turns some failed requests into all of them). Used for ejections and for fences.
 */
export function mayTakeOut(out: number, population: number, maxPercent: number): boolean {
  if (population < 2) return false;
  if (out === 0) return true;
  return (100 * (out + 1)) / population <= maxPercent;
}
