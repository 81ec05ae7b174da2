/**
 * Where requests wait when every candidate worker is busy. A routing attempt
 * that fails with `all_workers_busy` joins the admission queue (admission-queue.ts
 * decides the order: priority, then arrival); while anyone waits, the gate re-tries the
 * first `scan` waiters in that order every `tickMs` (and whenever `pump()` is called, e.g.
 * after an engine metrics scrape), admitting each that finds a worker. A waiter whose
 * candidates are all still busy keeps its place without holding up one whose candidates
 * (another model, adapter or session) are free. A full queue or a wait past `timeoutMs`
 * answers 429 with Retry-After; a client that leaves is taken out of the line. New arrivals
 * queue behind waiters, so nobody overtakes the line.
 * With `fair`, requests that carry a tenant share are ordered within their priority band by
 * the tenants' virtual token counters (virtual-token-counter.ts): every admission, at once or
 * after a wait, charges its tenant, and `settle` corrects the charge once the answer's output
 * is known. Without tenants (no --api-keys) nothing is charged and the order is as above.
 * Pure: the clock and the re-try timer are passed in (`now`, `timers`). The router owns it:
 * routing.routeOrWait is the request path's one way in (the composition builds it with the
 * runtime's timer and hands it to createRouter as a port; the runtime pumps it and closes it).
 */
import { isRouterError, RouterError } from "../../core/errors.ts";
import { AdmissionQueue, type QueuedEntry } from "./admission-queue.ts";
import { VirtualTokenCounters, type TenantShare } from "./virtual-token-counter.ts";
import type { Timers } from "../ports.ts";

export interface AdmissionGateOptions {
  /** At most this many waiting requests (0: all busy answers 429 at once). */
  readonly maxQueue: number;
  /** Longest wait (ms) before a 429. */
  readonly timeoutMs: number;
  /** How often waiters re-try while the queue is not empty (ms; default 10). */
  readonly tickMs?: number;
  /** Waiters tried per pass, from the head (default 16). */
  readonly scan?: number;
  /** Milliseconds, monotonic. */
  readonly now: () => number;
  /** The runtime's one-shot timer, for the re-try tick while anyone waits. */
  readonly timers: Timers;
  /** Counters for /metrics. */
  readonly onAdmitted?: (waitedMs: number) => void;
  readonly onRejected?: (reason: "queue_full" | "queue_timeout") => void;
  /** Serve tenants fairly within a priority band (requests with a `share`); default false: arrival order. */
  readonly fair?: boolean;
}

/** How one request waits. */
export interface AdmitOptions<T> {
  /** Lower goes first (vLLM's `priority`); default 0. */
  readonly priority?: number;
  /** The client's request signal: leaving takes it out of the line. */
  readonly signal?: AbortSignal;
  /** Undo a successful attempt whose client left meanwhile (free the booking). */
  readonly abandon?: (result: T) => void;
  /** The request's tenant and what it asks, for fair admission; charged once it is admitted. */
  readonly share?: TenantShare;
}

interface Waiter {
  readonly attempt: () => Promise<unknown>;
  readonly abandon?: (result: unknown) => void;
  readonly resolve: (v: unknown) => void;
  readonly reject: (e: unknown) => void;
  readonly signal?: AbortSignal;
  readonly share?: TenantShare;
  onAbort?: () => void;
}

const DEFAULT_TICK_MS = 10;
const DEFAULT_SCAN = 16;

export class AdmissionGate {
  readonly #queue: AdmissionQueue<Waiter>;
  /** The tenants' service so far (fair admission); undefined: arrival order, nothing charged. */
  readonly #fair: VirtualTokenCounters | undefined;
  /**
   * Shares charged and not yet settled: a request is charged once however many times it is
   * routed (retries on other workers), and settled once; one never admitted is never settled.
   */
  readonly #charged = new WeakSet<TenantShare>();
  #timer: unknown;
  #pumping = false;
  #again = false;
  #rejected = { queue_full: 0, queue_timeout: 0 };

  constructor(private readonly o: AdmissionGateOptions) {
    // The queue refuses at maxSize; with maxQueue 0 every busy request is refused at once.
    this.#fair = o.fair === true ? new VirtualTokenCounters() : undefined;
    this.#queue = new AdmissionQueue<Waiter>({
      maxSize: o.maxQueue,
      timeoutMs: o.timeoutMs,
      fair: this.#fair,
    });
  }

  /** Requests waiting now. */
  get size(): number {
    return this.#queue.size;
  }

  get rejected(): Readonly<{ queue_full: number; queue_timeout: number }> {
    return this.#rejected;
  }

  /**
   * Run `attempt` (a routing decision that books load) now, or when workers free up.
   * Only `all_workers_busy` makes a request wait; any other error passes through.
   */
  async admit<T>(attempt: () => Promise<T>, opts: AdmitOptions<T> = {}): Promise<T> {
    const { priority = 0, signal } = opts;
    const share = this.#fair !== undefined ? opts.share : undefined;
    if (signal?.aborted) throw new RouterError("invalid_request", "the client closed the request");
    if (this.#queue.size === 0) {
      try {
        const result = await attempt();
        if (share !== undefined && !this.#charged.has(share)) {
          this.#queue.lift(share, priority);
          this.#charge(share);
        }
        return result;
      } catch (e) {
        if (!isBusy(e)) throw e;
      }
    }
    return new Promise<T>((resolve, reject) => {
      const w: Waiter = {
        attempt,
        abandon: opts.abandon as ((r: unknown) => void) | undefined,
        resolve: resolve as (v: unknown) => void,
        reject,
        signal,
        share,
      };
      const r = this.#queue.enqueue(w, priority, this.o.now(), share);
      if (!r.queued) {
        reject(
          this.#reject(
            "queue_full",
            `every worker is busy and the admission queue is full (${this.o.maxQueue} waiting); try again later`,
          ),
        );
        return;
      }
      if (signal) {
        w.onAbort = () => {
          if (this.#queue.remove(r.entry))
            reject(
              new RouterError(
                "invalid_request",
                "the client closed the request while it waited for a worker",
              ),
            );
        };
        signal.addEventListener("abort", w.onAbort, { once: true });
      }
      this.#schedule();
    });
  }

  /**
   * The answer of a request admitted with `share` is over, with `outputTokens` generated:
   * its tenant's counter is corrected from the booked output to the real one.
   */
  settle(share: TenantShare, outputTokens: number): void {
    if (!this.#charged.delete(share)) return;
    this.#fair?.settle(share, outputTokens);
  }

  /** A tenant's service so far (fair admission), for tests and status pages; 0 without it. */
  serviceOf(tenant: string): number {
    return this.#fair?.counter(tenant) ?? 0;
  }

  /** Try to admit waiters now (load went down, engine metrics changed). */
  pump(): void {
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    void this.#drain();
  }

  /** Reject every waiter (router stopping). */
  close(): void {
    if (this.#timer !== undefined) this.o.timers.clear(this.#timer);
    this.#timer = undefined;
    for (let e = this.#queue.shift(); e; e = this.#queue.shift())
      this.#settle(e, () =>
        e.item.reject(new RouterError("unavailable", "the router is stopping")),
      );
  }

  async #drain(): Promise<void> {
    this.#pumping = true;
    try {
      do {
        this.#again = false;
        for (const e of this.#queue.expire(this.o.now())) {
          this.#settle(e, () =>
            e.item.reject(
              this.#reject(
                "queue_timeout",
                `every worker stayed busy for ${this.o.timeoutMs / 1000} s (--queue-timeout); try again later`,
              ),
            ),
          );
        }
        // In queue order; a waiter still busy keeps its place and the next one is tried, so
        // a request whose workers (model, adapter, session) are all busy does not hold up
        // one whose workers are free. Only the first `scan` are tried per pass: each try is
        // a routing decision, and the queue can hold many.
        for (const w of this.#queue.first(this.o.scan ?? DEFAULT_SCAN)) {
          let result: unknown;
          try {
            result = await w.item.attempt();
          } catch (e) {
            if (isBusy(e)) continue;
            if (this.#queue.remove(w)) this.#settle(w, () => w.item.reject(e));
            continue;
          }
          if (this.#queue.remove(w)) {
            if (w.item.share !== undefined) this.#charge(w.item.share);
            this.o.onAdmitted?.(this.o.now() - w.enqueuedAt);
            this.#settle(w, () => w.item.resolve(result));
          } else {
            // Its client left while the attempt ran: nobody will use the booking.
            w.item.abandon?.(result);
          }
        }
      } while (this.#again);
    } finally {
      this.#pumping = false;
      this.#schedule();
    }
  }

  #charge(share: TenantShare): void {
    if (this.#fair === undefined || this.#charged.has(share)) return;
    this.#charged.add(share);
    this.#fair.charge(share);
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#queue.size === 0) return;
    const wait = Math.min(
      this.o.tickMs ?? DEFAULT_TICK_MS,
      this.#queue.nextDeadlineIn(this.o.now()) ?? Infinity,
    );
    this.#timer = this.o.timers.set(() => {
      this.#timer = undefined;
      this.pump();
    }, wait);
  }

  #settle(e: QueuedEntry<Waiter>, fn: () => void): void {
    if (e.item.onAbort) e.item.signal?.removeEventListener("abort", e.item.onAbort);
    fn();
  }

  #reject(reason: "queue_full" | "queue_timeout", message: string): RouterError {
    this.#rejected[reason]++;
    this.o.onRejected?.(reason);
    // Come back after about one queue timeout: by then the line has moved or drained.
    return new RouterError(
      reason,
      message,
      undefined,
      Math.max(1, Math.ceil(this.o.timeoutMs / 1000)),
    );
  }
}

function isBusy(e: unknown): boolean {
  return isRouterError(e) && e.code === "all_workers_busy";
}
