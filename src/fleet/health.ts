/**
 * Periodic health checks (GET {url}/health) of every registered worker, and fencing: a
 * worker that failed a request before its first byte is marked unhealthy at once and
 * comes back only when a later check passes. fetch and timers are injected for tests.
 * With an outlier detector, the proxy reports every answer (report()); a worker whose
 * answers keep failing is ejected, and no passing check lifts the ejection before its time.
 * A hold (hold()/release()) takes a worker out of routing until it is released, whatever its
 * checks say: a pod that is terminating or not ready still answers /health while its in-flight
 * requests finish, and a passing check must not send it new ones.
 */
import type { WorkerId } from "../core/ids.ts";
import { judgeDeadline } from "../core/lagged-deadline.ts";
import { type Ejection, mayTakeOut, type OutlierDetector } from "./outlier-detector.ts";
import type { WorkerRegistry } from "./registry.ts";

export interface HealthCheckerOptions {
  readonly registry: WorkerRegistry;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly fetch?: (url: string, init: RequestInit) => Promise<Response>;
  /** Called when a worker changes state (logging, metrics). */
  readonly onChange?: (id: WorkerId, healthy: boolean, reason: string | undefined) => void;
  /** Passive health: answers reported by the proxy eject workers that keep failing. */
  readonly outliers?: OutlierDetector;
  /** Called once per ejection (logging, metrics). */
  readonly onEject?: (e: Ejection) => void;
  /**
   * Most workers out of rotation at once (failed checks, fences, ejections, holds) that a fence
   * may bring about, percent of the registered ones (--max-fenced-percent); one always may be
   * fenced of two or more, the only worker never. Undefined: fences are not capped.
   */
  readonly maxFencedPercent?: number;
  /**
   * The router's event-loop lag (src/observe/process-metrics.ts), once it runs: a check that timed
   * out while the loop was held for part of its wait is inconclusive (the worker keeps its state),
   * since the router, not the engine, could not read the answer in time.
   */
  readonly loopLag?: () => { mark(): number; lagSince(mark: number): number } | undefined;
  /** A fence the cap refused (logging, metrics): the worker stays in rotation. */
  readonly onFenceRefused?: (id: WorkerId, reason: string, out: number, registered: number) => void;
  /** Milliseconds, monotonic (default performance.now); the outlier detector's clock. */
  readonly now?: () => number;
  /**
   * After a good check, within the same timeout: re-read what the worker serves (its
   * GET /v1/models, src/fleet/models.ts). A failure here does not make the worker unhealthy.
   */
  readonly afterHealthy?: (id: WorkerId, url: string, signal: AbortSignal) => Promise<void>;
}

export class HealthChecker {
  readonly #o: HealthCheckerOptions;
  readonly #fetch: (url: string, init: RequestInit) => Promise<Response>;
  readonly #inflight = new Set<WorkerId>();
  /** Bumped per fence, so a check that started before a fence cannot lift it. */
  readonly #fences = new Map<WorkerId, number>();
  /** Held workers and why; no check runs for them until they are released. */
  readonly #held = new Map<WorkerId, string>();
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(o: HealthCheckerOptions) {
    this.#o = o;
    this.#fetch = o.fetch ?? ((url, init) => fetch(url, init));
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.checkAll(), this.#o.intervalMs);
  }

  /** Forget a removed worker. */
  forget(id: WorkerId): void {
    this.#fences.delete(id);
    this.#held.delete(id);
    this.#o.outliers?.forget(id);
  }

  /** No new requests for this worker until release(); in-flight ones are not touched (those still before their first byte included). */
  hold(id: WorkerId, reason: string): void {
    this.#held.set(id, reason);
    this.#fences.set(id, (this.#fences.get(id) ?? 0) + 1);
    this.#set(id, false, reason, true);
  }

  /** Ends a hold; a check runs at once, and it alone makes the worker healthy again. */
  release(id: WorkerId): Promise<boolean | undefined> {
    if (!this.#held.delete(id)) return Promise.resolve(this.#o.registry.get(id)?.healthy);
    return this.check(id);
  }

  isHeld(id: WorkerId): boolean {
    return this.#held.has(id);
  }

  /** Why this worker is held; undefined when it is not. */
  heldFor(id: WorkerId): string | undefined {
    return this.#held.get(id);
  }

  /**
   * How an answer of this worker went: `failure` says what failed (5xx, cut stream, missed
   * deadline, refused connection), undefined means it went well. Client cancels are not reported.
   */
  report(id: WorkerId, failure: string | undefined): void {
    const od = this.#o.outliers;
    if (od === undefined) return;
    const now = this.#now();
    if (failure === undefined) {
      od.success(id, now);
      return;
    }
    const e = od.failure(id, now, failure);
    if (e === undefined) return;
    this.#fences.set(id, (this.#fences.get(id) ?? 0) + 1);
    this.#set(id, false, `ejected for ${Math.round((e.untilMs - now) / 1000)} s: ${e.reason}`);
    this.#o.onEject?.(e);
  }

  #now(): number {
    return this.#o.now?.() ?? performance.now();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Check every worker once (concurrently); resolves when all checks are done. */
  async checkAll(): Promise<void> {
    await Promise.all(this.#o.registry.list().map((w) => this.check(w.id)));
  }

  /** Check one worker now; a check already running for it is not duplicated. */
  async check(id: WorkerId): Promise<boolean | undefined> {
    const rec = this.#o.registry.get(id);
    if (!rec || this.#inflight.has(id)) return rec?.healthy;
    if (this.#held.has(id)) return false;
    this.#inflight.add(id);
    const fenceAtStart = this.#fences.get(id) ?? 0;
    const timeout = this.#timeout();
    let ok = false;
    let reason: string | undefined;
    try {
      // Never followed: a /health that redirects (to another host, say) is not this engine healthy.
      const res = await this.#fetch(`${rec.url}/health`, {
        signal: timeout.signal,
        redirect: "manual",
      });
      ok = res.ok;
      if (!ok) reason = `health check answered HTTP ${res.status}`;
      await res.body?.cancel().catch(() => {});
    } catch (e) {
      reason = `health check failed: ${(e as Error).message}`;
    } finally {
      this.#inflight.delete(id);
      timeout.clear();
    }
    // Timed out while the router's own loop was held for most of the wait: the check says nothing
    // about the engine, and the worker keeps its state (on a starved router every check would
    // otherwise fail at once and take the whole fleet out).
    if (timeout.excused()) return this.#o.registry.get(id)?.healthy;
    if (this.#held.has(id) || (ok && (this.#fences.get(id) ?? 0) !== fenceAtStart)) return false;
    const od = this.#o.outliers;
    if (ok && od !== undefined && od.ejectedUntil(id) !== undefined) {
      // Ejected: /health passing is not enough (a hung engine passes it) until the time is over.
      const now = this.#now();
      if (od.isEjected(id, now)) return false;
      od.readmitted(id, now);
    }
    if (ok && this.#o.afterHealthy) {
      await this.#o
        .afterHealthy(id, rec.url, AbortSignal.timeout(this.#o.timeoutMs))
        .catch(() => {});
      // A hold or a fence that came while the models were re-read wins over this check.
      if (this.#held.has(id) || (this.#fences.get(id) ?? 0) !== fenceAtStart) return false;
    }
    this.#set(id, ok, reason);
    return ok;
  }

  /**
   * The check's timeout: --health-timeout of time the router could watch (core/lagged-deadline.ts)
   * when the lag meter runs, else wall time. `excused()`: it ran out mostly while the loop was held.
   */
  #timeout(): { signal: AbortSignal; clear(): void; excused(): boolean } {
    const limit = this.#o.timeoutMs;
    const lag = this.#o.loopLag?.();
    if (lag === undefined)
      return { signal: AbortSignal.timeout(limit), clear: () => {}, excused: () => false };
    const ctl = new AbortController();
    const startedAt = this.#now();
    const mark = lag.mark();
    let excused = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const judge = () => {
      const v = judgeDeadline(limit, this.#now() - startedAt, lag.lagSince(mark));
      if (v.kind === "wait") {
        timer = setTimeout(judge, v.ms);
        return;
      }
      excused = v.kind === "excused";
      ctl.abort(new DOMException(`health check timed out after ${limit / 1000} s`, "TimeoutError"));
    };
    timer = setTimeout(judge, limit);
    return {
      signal: ctl.signal,
      clear: () => clearTimeout(timer),
      excused: () => excused,
    };
  }

  /**
   * A request to this worker failed before its first byte: no new requests until a check passes.
   * Unless the fence cap says too many are out already: then it stays in rotation (false). A fence
   * is one request's word; on a starved router or a shared network fault every engine can fail one
   * request, and fencing them all turns a slow fleet into one that answers nothing. The health
   * checks, which ask each engine itself, still take out any that are really down.
   */
  fence(id: WorkerId, reason: string): boolean {
    const pct = this.#o.maxFencedPercent;
    if (pct !== undefined && this.#o.registry.get(id)?.healthy === true) {
      const all = this.#o.registry.list();
      let out = 0;
      for (const w of all) if (!w.healthy) out++;
      if (!mayTakeOut(out, all.length, pct)) {
        this.#o.onFenceRefused?.(id, reason, out, all.length);
        return false;
      }
    }
    this.#fences.set(id, (this.#fences.get(id) ?? 0) + 1);
    this.#set(id, false, `fenced: ${reason}`);
    return true;
  }

  #set(id: WorkerId, healthy: boolean, reason: string | undefined, finishInFlight = false): void {
    if (this.#o.registry.setHealthy(id, healthy, reason, finishInFlight))
      this.#o.onChange?.(id, healthy, reason);
  }
}
