/**
 * How many retries the proxy may spend, fleet-wide, on answers an engine gave (a 500, a 429,
 * a 503 ...): at most `percent` of the requests of the last `windowMs`, plus `minPerSecond`
 * so a quiet router still retries. A request that fails on every worker (a prompt that
 * crashes every engine, a fleet overloaded as a whole) would otherwise be sent
 * 1 + --max-retries times, multiplying the load exactly when the fleet can least take it;
 * with the budget the extra load stays within `percent` (Finagle's and gRPC's retry budgets
 * work the same way). Pure: the clock is injected.
 */

export interface RetryBudgetOptions {
  /** Retries as a share of requests, in percent (20 = one retry per five requests). */
  readonly percent: number;
  /** Retries always allowed per second of the window, whatever the traffic. */
  readonly minPerSecond: number;
  /** Milliseconds of history (default 10 s), kept in one-second buckets. */
  readonly windowMs?: number;
  /** Milliseconds, monotonic. */
  readonly now: () => number;
}

const BUCKET_MS = 1000;

export class RetryBudget {
  readonly #o: RetryBudgetOptions;
  /** Per bucket: which second it holds, its requests and its retries. */
  readonly #second: Float64Array;
  readonly #requests: Float64Array;
  readonly #retries: Float64Array;

  constructor(o: RetryBudgetOptions) {
    this.#o = o;
    const n = Math.max(1, Math.round((o.windowMs ?? 10_000) / BUCKET_MS));
    this.#second = new Float64Array(n).fill(-1);
    this.#requests = new Float64Array(n);
    this.#retries = new Float64Array(n);
  }

  /** A request's first try. */
  request(): void {
    this.#requests[this.#bucket()]! += 1;
  }

  /** Take one retry if the budget allows it; false: answer what the engine said. */
  tryRetry(): boolean {
    const k = this.#bucket();
    let requests = 0;
    let retries = 0;
    for (let i = 0; i < this.#second.length; i++) {
      requests += this.#requests[i]!;
      retries += this.#retries[i]!;
    }
    const allowed = this.#o.minPerSecond * this.#second.length + (this.#o.percent / 100) * requests;
    if (retries + 1 > allowed) return false;
    this.#retries[k]! += 1;
    return true;
  }

  /** This second's bucket, with buckets older than the window emptied. */
  #bucket(): number {
    const second = Math.floor(this.#o.now() / BUCKET_MS);
    const n = this.#second.length;
    for (let i = 0; i < n; i++) {
      if (this.#second[i]! <= second - n) {
        this.#second[i] = -1;
        this.#requests[i] = 0;
        this.#retries[i] = 0;
      }
    }
    const k = second % n;
    if (this.#second[k] !== second) {
      this.#second[k] = second;
      this.#requests[k] = 0;
      this.#retries[k] = 0;
    }
    return k;
  }
}
