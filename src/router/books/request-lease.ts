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

/** What a streamed answer showed of its engine's decode, told once when the booking is released. */
export interface LeaseEnd {
  /** When it was freed (ms). */
  readonly at: number;
  /** When its first token came (ms); undefined: none seen (not streamed, or failed first). */
  readonly firstTokenAt: number | undefined;
  /** When the last output tokens were counted (ms). */
  readonly lastTokenAt: number | undefined;
  /** Output tokens counted after the first token's event (the gaps between them are decode steps). */
  readonly laterTokens: number;
}

/** Told when a booking is released (the decode step learner's samples). */
export type LeaseEndHook = (end: LeaseEnd) => void;

export class RequestLease {
  #prefillDone = false;
  #onFirstToken: FirstTokenHook | undefined;
  #freed = false;
  #afterFree: (() => void) | undefined;
  /** Blocks the sequence spans so far: ceil((isl + output) / blockSize). */
  #blocks: number;
  #onEnd: LeaseEndHook | undefined;
  #firstTokenAt: number | undefined;
  #lastTokenAt: number | undefined;
  /** Output tokens counted when the first token came, and the latest total. */
  #tokensAtFirst = 0;
  #tokens = 0;

  constructor(
    private readonly tracker: LoadTracker,
    readonly requestId: string,
    private readonly isl: number,
    private readonly blockSize: number,
    private readonly now: () => number,
    private readonly rng: Rng,
    onFirstToken?: FirstTokenHook,
    onEnd?: LeaseEndHook,
  ) {
    this.#blocks = Math.ceil(isl / blockSize);
    this.#onFirstToken = onFirstToken;
    this.#onEnd = onEnd;
  }

  /**
   * Book `b` on its worker at time `at` (ms) and return the lease that frees it. Throws RouterError
   * duplicate_request when the id is already booked. A worker the tracker does not know yet
   * (membership and tracker momentarily out of step) is added first. `onFirstToken` hears the
   * time of the first token, once, if `firstToken()` reports it; `onEnd` what the answer showed of
   * the engine's decode, once, when it is freed.
   */
  static book(
    tracker: LoadTracker,
    b: Booking,
    at: number,
    blockSize: number,
    now: () => number,
    rng: Rng,
    onFirstToken?: FirstTokenHook,
    onEnd?: LeaseEndHook,
  ): RequestLease {
    if (!tracker.hasWorker(keyOf(b.worker))) tracker.addWorkers([b.worker]);
    tracker.addRequest(b, at);
    return new RequestLease(tracker, b.requestId, b.isl, blockSize, now, rng, onFirstToken, onEnd);
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
    const at = this.now();
    this.#firstTokenAt = at;
    hook?.(at);
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
    if (this.#onEnd !== undefined && total > this.#tokens) {
      // The first count after the first token is the first token's own event: gaps start there.
      if (this.#firstTokenAt !== undefined && this.#lastTokenAt === undefined)
        this.#tokensAtFirst = this.#tokens;
      this.#tokens = total;
      if (this.#firstTokenAt !== undefined) this.#lastTokenAt = this.now();
    }
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
    const end = this.#onEnd;
    if (end !== undefined) {
      this.#onEnd = undefined;
      const at = this.now();
      const later =
        this.#lastTokenAt === undefined ? 0 : this.#tokens - Math.max(1, this.#tokensAtFirst);
      // Told before the booking goes, so the rank's books still count this request's batch.
      end({
        at,
        firstTokenAt: this.#firstTokenAt,
        lastTokenAt: this.#lastTokenAt,
        laterTokens: Math.max(0, later),
      });
    }
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
