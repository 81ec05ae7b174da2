/**
 * The load one routed request holds on its worker, from booking to release (Dynamo's push-router lifecycle
 * RequestGuard): prefill done at the first token, one output block per block_size
 * generated tokens, and free exactly once, whatever ends the request (finish, upstream
 * error, client disconnect, retry elsewhere). Frontends that forward themselves drive the
 * same lease through /v1/route/:id/prefill-done and /free.
 *
 * The booking is made here too (`RequestLease.book`), not by the scheduler: choosing has no
 * side effects, and the load a request puts on its worker is created and released
 * by the same object.
 */
import type { WorkerWithDpRank } from "../../core/ids.ts";
import { keyOf } from "../../core/ids.ts";
import type { LoadTracker } from "./load-tracker.ts";
import type { Rng } from "../../core/rng.ts";

/** What a booking holds: the tracker's TrackedRequest without the clock. */
export interface Booking {
  readonly requestId: string;
  readonly worker: WorkerWithDpRank;
  readonly seqHashes: BigUint64Array | null;
  readonly isl: number;
  /** Cached prefix blocks on the worker (prefill load is the rest). */
  readonly overlap: number;
  readonly loraName?: string;
}

/** Told when a request's first token is seen (ms), by whoever booked it (the TTFT predictor's samples). */
export type FirstTokenHook = (at: number) => void;

export class RequestLease {
  #prefillDone = false;
  #onFirstToken: FirstTokenHook | undefined;
  #freed = false;
  #afterFree: (() => void) | undefined;
  /** Blocks the sequence spans so far: ceil((isl + output) / blockSize). */
  #blocks: number;

  constructor(
    private readonly tracker: LoadTracker,
    readonly requestId: string,
    private readonly isl: number,
    private readonly blockSize: number,
    private readonly now: () => number,
    private readonly rng: Rng,
    onFirstToken?: FirstTokenHook,
  ) {
    this.#blocks = Math.ceil(isl / blockSize);
    this.#onFirstToken = onFirstToken;
  }

  /**
   * Book `b` on its worker at time `at` (ms) and return the lease that frees it. Throws RouterError
   * duplicate_request when the id is already booked. A worker the tracker does not know yet
   * (membership and tracker momentarily out of step) is added first. `onFirstToken` hears the
   * time of the first token, once, if `firstToken()` reports it.
   */
  static book(tracker: LoadTracker, b: Booking, at: number, blockSize: number, now: () => number, rng: Rng, onFirstToken?: FirstTokenHook): RequestLease {
    if (!tracker.hasWorker(keyOf(b.worker))) tracker.addWorkers([b.worker]);
    tracker.addRequest(b, at);
    return new RequestLease(tracker, b.requestId, b.isl, blockSize, now, rng, onFirstToken);
  }

  get freed(): boolean {
    return this.#freed;
  }

  /**
   * The engine's first token has just arrived (the first chunk of a streamed answer): tell the
   * booker when (its TTFT sample), then the prefill is done. Only the first report counts, and
   * none after the prefill was marked done another way: a late one would be a wrong sample.
   */
  firstToken(): void {
    if (this.#prefillDone || this.#freed) return;
    const hook = this.#onFirstToken;
    this.#onFirstToken = undefined;
    hook?.(this.now());
    this.prefillDone();
  }

  /** First token seen: the prompt is computed, its prefill load goes away. Idempotent. */
  prefillDone(): void {
    if (this.#prefillDone || this.#freed) return;
    this.#prefillDone = true;
    this.tracker.markPrefillCompleted(this.requestId, this.now());
  }

  /** `total` output tokens so far: add a block each time the sequence grows past one. */
  outputTokens(total: number): void {
    if (this.#freed) return;
    this.prefillDone();
    const blocks = Math.ceil((this.isl + total) / this.blockSize);
    while (this.#blocks < blocks) {
      this.#blocks++;
      this.tracker.addOutputBlock(this.requestId, undefined, this.rng);
    }
  }

  /** Release the booking. Only the first call does anything; returns whether it did. */
  free(): boolean {
    if (this.#freed) return false;
    this.#freed = true;
    this.tracker.free(this.requestId, this.now());
    const after = this.#afterFree;
    if (after) {
      this.#afterFree = undefined;
      after();
    }
    return true;
  }

  /** Run `fn` (must not throw) once the booking is released, e.g. a deferred session close. */
  afterFree(fn: () => void): void {
    if (this.#freed) fn();
    else this.#afterFree = fn;
  }
}
