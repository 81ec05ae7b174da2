/**
 * The admission queue's decisions (issue 13): who waits, in what order, and who has waited
 * too long, when every candidate worker is busy. Pure: time comes in as `now` (ms), there
 * are no timers and no promises here; the gate (admission-gate.ts) does the waiting and
 * asks this module what to do.
 *
 * Order: lower `priority` first, then arrival order. That is vLLM's rule for its own
 * `priority` request field: "lower means earlier handling; default 0"
 * (vllm/entrypoints/openai/protocol.py, `CompletionRequest.priority`, v0.10/0.11; the
 * priority scheduler sorts by (priority, arrival_time) in vllm/v1/core/sched/request_queue.py).
 * Dynamo's FCFS queue (spec §4.3) is the special case where every priority is 0.
 */

export interface QueuedEntry<T> {
  readonly item: T;
  readonly priority: number;
  /** When it entered the queue (ms). */
  readonly enqueuedAt: number;
  /** Arrival number: breaks priority ties in arrival order. */
  readonly seq: number;
}

export interface AdmissionQueueOptions {
  /** At most this many waiting; more are refused (0 = never queue). */
  readonly maxSize: number;
  /** A waiter older than this is timed out (ms). */
  readonly timeoutMs: number;
}

export type EnqueueResult<T> = { readonly queued: true; readonly entry: QueuedEntry<T> } | { readonly queued: false; readonly reason: "queue_full" };

export class AdmissionQueue<T> {
  /** Kept sorted by (priority, seq): the head is entries[0]. Bounded by maxSize, so insertion by binary search is cheap. */
  readonly #entries: QueuedEntry<T>[] = [];
  #seq = 0;

  constructor(readonly options: AdmissionQueueOptions) {
    if (!(options.maxSize >= 0) || !Number.isInteger(options.maxSize)) throw new Error(`maxSize must be an integer >= 0, got ${options.maxSize}`);
    if (!(options.timeoutMs > 0)) throw new Error(`timeoutMs must be > 0, got ${options.timeoutMs}`);
  }

  get size(): number {
    return this.#entries.length;
  }

  /** Put `item` in line, or refuse it when the queue is full. */
  enqueue(item: T, priority: number, now: number): EnqueueResult<T> {
    if (this.#entries.length >= this.options.maxSize) return { queued: false, reason: "queue_full" };
    const entry: QueuedEntry<T> = { item, priority, enqueuedAt: now, seq: this.#seq++ };
    // First index whose entry sorts after the new one (same priority: after, it came later).
    let lo = 0;
    let hi = this.#entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#entries[mid]!.priority <= priority) lo = mid + 1;
      else hi = mid;
    }
    this.#entries.splice(lo, 0, entry);
    return { queued: true, entry };
  }

  /** The entry to admit next, if any. */
  head(): QueuedEntry<T> | undefined {
    return this.#entries[0];
  }

  /** The first `n` entries in admission order (a copy). */
  first(n: number): QueuedEntry<T>[] {
    return this.#entries.slice(0, n);
  }

  /** Remove and return the head. */
  shift(): QueuedEntry<T> | undefined {
    return this.#entries.shift();
  }

  /** Remove one entry (its client left); returns whether it was there. */
  remove(entry: QueuedEntry<T>): boolean {
    const i = this.#entries.indexOf(entry);
    if (i < 0) return false;
    this.#entries.splice(i, 1);
    return true;
  }

  /** Remove and return every entry that has waited `timeoutMs` or more by `now`, in queue order. */
  expire(now: number): QueuedEntry<T>[] {
    const out: QueuedEntry<T>[] = [];
    const limit = this.options.timeoutMs;
    for (let i = 0; i < this.#entries.length; ) {
      const e = this.#entries[i]!;
      if (now - e.enqueuedAt >= limit) {
        out.push(e);
        this.#entries.splice(i, 1);
      } else i++;
    }
    return out;
  }

  /** Ms until the oldest waiter times out (0 when one already has); undefined when empty. */
  nextDeadlineIn(now: number): number | undefined {
    let oldest = Infinity;
    for (const e of this.#entries) if (e.enqueuedAt < oldest) oldest = e.enqueuedAt;
    return oldest === Infinity ? undefined : Math.max(0, oldest + this.options.timeoutMs - now);
  }
}
