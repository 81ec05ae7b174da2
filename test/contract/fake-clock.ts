/**
 * A clock tests move by hand. `advance` walks time forward and fires every repeating timer
 * that falls due on the way, at its due time, in order — as real timers would have.
 */
import type { StoreClock } from "../../src/router/sessions/store.ts";

interface Timer {
  readonly id: number;
  readonly ms: number;
  readonly fn: () => void;
  due: number;
}

export class FakeClock implements StoreClock {
  #now: number;
  #nextId = 1;
  readonly #timers = new Map<number, Timer>();

  constructor(start = 1_700_000_000_000) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  every(ms: number, fn: () => void): () => void {
    if (!(ms > 0)) throw new RangeError(`interval must be positive, got ${ms}`);
    const id = this.#nextId++;
    this.#timers.set(id, { id, ms, fn, due: this.#now + ms });
    return () => this.#timers.delete(id);
  }

  /** Move time forward by `ms`, firing due timers on the way. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.#timers.values())
        if (t.due <= target && (!next || t.due < next.due)) next = t;
      if (!next) break;
      this.#now = next.due;
      next.due += next.ms;
      next.fn();
    }
    this.#now = target;
  }

  /** Repeating timers not cancelled yet. */
  get activeTimers(): number {
    return this.#timers.size;
  }
}
