/**
 * A counting semaphore that admits waiters strictly in arrival order (a real engine's
 * waiting queue is FIFO). A waiter whose AbortSignal fires leaves the queue. No timers.
 */

export class AbortedError extends Error {
  override readonly name = "AbortedError";
  constructor(message = "request aborted") {
    super(message);
  }
}

interface Waiter {
  resolve(): void;
  reject(e: unknown): void;
}

export class FifoSemaphore {
  private inUse = 0;
  private readonly queue: Waiter[] = [];
  /** Index of the first live entry of `queue` (dequeue without shifting the array). */
  private qHead = 0;

  constructor(readonly permits: number) {
    if (!(Number.isInteger(permits) && permits > 0))
      throw new RangeError(`permits must be a positive integer (got ${permits})`);
  }

  /** Permits held. */
  get held(): number {
    return this.inUse;
  }

  /** Callers waiting for a permit. */
  get waiting(): number {
    return this.queue.length - this.qHead;
  }

  /** Resolves when a permit is held; rejects with AbortedError if `signal` fires first. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortedError());
    if (this.inUse < this.permits && this.waiting === 0) {
      this.inUse++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const i = this.queue.indexOf(waiter, this.qHead);
        if (i >= 0) {
          this.queue.splice(i, 1);
          reject(new AbortedError());
        }
      };
      const waiter: Waiter = {
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        reject,
      };
      this.queue.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Give a permit back; the oldest waiter, if any, takes it over. */
  release(): void {
    if (this.inUse <= 0) throw new Error("release without acquire");
    if (this.waiting > 0) {
      const w = this.queue[this.qHead]!;
      this.queue[this.qHead] = undefined as unknown as Waiter;
      this.qHead++;
      if (this.qHead > 1024 && this.qHead * 2 > this.queue.length) {
        this.queue.splice(0, this.qHead);
        this.qHead = 0;
      }
      w.resolve(); // the permit passes on: inUse is unchanged
      return;
    }
    this.inUse--;
  }
}
