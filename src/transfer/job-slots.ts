/**
 * A bound on the native jobs one handler keeps in flight. Every batch of a transfer is one
 * job, and a job holds a slot of the library's handle table (4096 slots, ffi/src/handles.c,
 * shared with pools and groups) until it is awaited; a request of 65,536 pairs cut into
 * batches of 16 submitted them all at once and got 503 SY_E_BUSY, although
 * request.ts accepts up to 1,048,576 pairs. With the bound, batches beyond it wait their
 * turn here instead; a request of any accepted size runs to the end.
 */

/** Jobs in flight per handler (all requests together): well under the 4096 handle slots. */
export const MAX_JOBS_IN_FLIGHT = 1024;

export class JobSlots {
  #active = 0;
  readonly #waiting: (() => void)[] = [];
  #head = 0;

  constructor(readonly limit: number = MAX_JOBS_IN_FLIGHT) {
    if (!(limit >= 1)) throw new RangeError(`limit must be >= 1, got ${limit}`);
  }

  /** Jobs running now. */
  get active(): number {
    return this.#active;
  }

  /** Runs `fn` once a slot is free; the slot is given back however `fn` ends. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#active >= this.limit)
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#active++;
    try {
      return await fn();
    } finally {
      this.#release();
    }
  }

  #release(): void {
    if (this.#head < this.#waiting.length) {
      // Hand the slot straight to the next waiter (the count stays the same).
      const next = this.#waiting[this.#head]!;
      this.#waiting[this.#head++] = undefined as unknown as () => void;
      if (this.#head > 1024 && this.#head * 2 > this.#waiting.length) {
        this.#waiting.splice(0, this.#head);
        this.#head = 0;
      }
      next();
    } else {
      this.#active--;
    }
  }
}
