/**
 * A counting semaphore for promises: at most `limit` holders at once, waiters served in
 * arrival order. Pure (no timers); used to bound concurrent worker queries.
 */
export class Semaphore {
  private available: number;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!(limit >= 1)) throw new Error(`semaphore limit must be >= 1, got ${limit}`);
    this.available = limit;
  }

  acquire(): Promise<void> {
    if (this.available > 0) {
      this.available -= 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Hand the permit to the oldest waiter, or put it back. */
  release(): void {
    const next = this.waiters.shift();
    if (next !== undefined) next();
    else this.available += 1;
  }

  /** Permits free right now. */
  get free(): number {
    return this.available;
  }
}
