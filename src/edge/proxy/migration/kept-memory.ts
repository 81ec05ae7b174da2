/**
 * The bytes every running stream keeps so it can be continued elsewhere (the text sent so far
 * and the raw events not yet folded into it), held against one router-wide limit
 * (--migrate-memory-mib). A stream that cannot take more stops keeping and is no longer moved
 * on a failure: it ends as it would without migration. Pure counting.
 */
export class KeptMemory {
  #held = 0;
  constructor(readonly limit: number) {}

  get held(): number {
    return this.#held;
  }

  /** Take `n` more bytes; false (nothing taken) past the limit. */
  take(n: number): boolean {
    if (this.#held + n > this.limit) return false;
    this.#held += n;
    return true;
  }

  give(n: number): void {
    this.#held = Math.max(0, this.#held - n);
  }
}
