/**
 * The admission queue's decisions: who waits, in what order, and who has waited too long,
 * when every candidate worker is busy. Past saturation a request sent on would only wait in
 * an engine's queue, where nothing bounds its wait; waiting here instead, the router can
 * refuse what it cannot serve in time (429 with Retry-After) and still choose a worker for
 * each request when one frees up. Pure: time comes in as `now` (ms), there are no timers and
 * no promises here; the gate (admission-gate.ts) does the waiting and asks this module what
 * to do.
 *
 * Order: lower `priority` first, then arrival order. That is vLLM's rule for its own
 * `priority` request field: "lower means earlier handling; default 0"
 * (vllm/entrypoints/openai/protocol.py, `CompletionRequest.priority`, v0.10/0.11; the
 * priority scheduler sorts by (priority, arrival_time) in vllm/v1/core/sched/request_queue.py).
 * Dynamo's scheduler queue (first come, first served) is the special case where every
 * priority is 0.
 *
 * With fair admission (`fair`: the tenants' virtual token counters) the order within a
 * priority band is by tenant instead: the waiting tenant with the least service goes next,
 * each tenant's own requests in arrival order (virtual-token-counter.ts). Entries without a
 * tenant share one (""), so without tenants the order is exactly the one above.
 */
import type { TenantShare, VirtualTokenCounters } from "./virtual-token-counter.ts";
import { serviceTokens } from "./virtual-token-counter.ts";

export interface QueuedEntry<T> {
  readonly item: T;
  readonly priority: number;
  /** When it entered the queue (ms). */
  readonly enqueuedAt: number;
  /** Arrival number: breaks priority ties in arrival order. */
  readonly seq: number;
  /** The tenant and what it asks, for fair admission; undefined: the shared "" tenant, costing nothing. */
  readonly share?: TenantShare;
}

export interface AdmissionQueueOptions {
  /** At most this many waiting; more are refused (0 = never queue). */
  readonly maxSize: number;
  /** A waiter older than this is timed out (ms). */
  readonly timeoutMs: number;
  /** Fair admission between tenants within a band; without it, arrival order. */
  readonly fair?: VirtualTokenCounters;
}

export type EnqueueResult<T> =
  | { readonly queued: true; readonly entry: QueuedEntry<T> }
  | { readonly queued: false; readonly reason: "queue_full" };

export class AdmissionQueue<T> {
  /** Kept sorted by (priority, seq): the head is entries[0]. Bounded by maxSize, so insertion by binary search is cheap. */
  readonly #entries: QueuedEntry<T>[] = [];
  #seq = 0;
  /** Waiting entries per band and tenant: who is backlogged where (fair admission's lift). */
  readonly #backlog = new Map<number, Map<string, number>>();
  /** Entries with a tenant share: while 0, the order is the plain (priority, arrival) one. */
  #shared = 0;

  constructor(readonly options: AdmissionQueueOptions) {
    if (!(options.maxSize >= 0) || !Number.isInteger(options.maxSize))
      throw new Error(`maxSize must be an integer >= 0, got ${options.maxSize}`);
    if (!(options.timeoutMs > 0))
      throw new Error(`timeoutMs must be > 0, got ${options.timeoutMs}`);
  }

  get size(): number {
    return this.#entries.length;
  }

  /** Put `item` in line, or refuse it when the queue is full. */
  enqueue(item: T, priority: number, now: number, share?: TenantShare): EnqueueResult<T> {
    if (this.#entries.length >= this.options.maxSize)
      return { queued: false, reason: "queue_full" };
    const entry: QueuedEntry<T> = { item, priority, enqueuedAt: now, seq: this.#seq++, share };
    this.#join(entry);
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
    return this.first(1)[0];
  }

  /**
   * The first `n` entries in admission order (a copy). With tenants, each band's order is
   * what fair admission would do if they were admitted one after another: the least served
   * tenant's oldest request, its counter advanced by that request's cost, and again.
   */
  first(n: number): QueuedEntry<T>[] {
    const fair = this.options.fair;
    if (fair === undefined || this.#shared === 0) return this.#entries.slice(0, n);
    const out: QueuedEntry<T>[] = [];
    const all = this.#entries;
    for (let i = 0; i < all.length && out.length < n; ) {
      let j = i + 1;
      while (j < all.length && all[j]!.priority === all[i]!.priority) j++;
      fairOrder(all, i, j, n - out.length, fair, out);
      i = j;
    }
    return out;
  }

  /** Remove and return the entry first in (priority, arrival) order (closing: every waiter goes). */
  shift(): QueuedEntry<T> | undefined {
    const e = this.#entries.shift();
    if (e !== undefined) this.#leave(e);
    return e;
  }

  /** Remove one entry (its client left); returns whether it was there. */
  remove(entry: QueuedEntry<T>): boolean {
    const i = this.#entries.indexOf(entry);
    if (i < 0) return false;
    this.#entries.splice(i, 1);
    this.#leave(entry);
    return true;
  }

  /**
   * A request of `share` arrives at `priority` (to wait, or admitted at once): a tenant not
   * waiting there yet is lifted to the least counter of the tenants that are, so idle time is
   * not banked as credit (virtual-token-counter.ts).
   */
  lift(share: TenantShare, priority: number): void {
    const fair = this.options.fair;
    if (fair === undefined) return;
    const band = this.#backlog.get(priority);
    if (band?.has(share.tenant)) return;
    let floor: number | undefined;
    if (band !== undefined)
      for (const t of band.keys()) floor = Math.min(floor ?? Infinity, fair.counter(t));
    fair.lift(share.tenant, floor);
  }

  #join(e: QueuedEntry<T>): void {
    if (e.share === undefined) return;
    this.lift(e.share, e.priority);
    this.#shared++;
    let band = this.#backlog.get(e.priority);
    if (band === undefined) this.#backlog.set(e.priority, (band = new Map()));
    band.set(e.share.tenant, (band.get(e.share.tenant) ?? 0) + 1);
  }

  #leave(e: QueuedEntry<T>): void {
    if (e.share === undefined) return;
    this.#shared--;
    const band = this.#backlog.get(e.priority);
    if (band === undefined) return;
    const left = (band.get(e.share.tenant) ?? 1) - 1;
    if (left > 0) band.set(e.share.tenant, left);
    else band.delete(e.share.tenant);
    if (band.size === 0) this.#backlog.delete(e.priority);
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
        this.#leave(e);
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

/**
 * Append to `out` up to `n` entries of one band (`all[from..to)`, in arrival order) in fair
 * order: repeatedly the tenant with the least (simulated) counter, its oldest entry. On equal
 * counters the tenant with fewer requests waiting goes first: a tenant that just joined was
 * lifted to the others' counter, and making a light tenant's one request wait behind a heavy
 * tenant's backlog head would cost it a whole extra turn for nothing. Then arrival order.
 */
function fairOrder<T>(
  all: readonly QueuedEntry<T>[],
  from: number,
  to: number,
  n: number,
  fair: VirtualTokenCounters,
  out: QueuedEntry<T>[],
): void {
  const lines = new Map<string, { entries: QueuedEntry<T>[]; next: number; counter: number }>();
  for (let i = from; i < to; i++) {
    const e = all[i]!;
    const tenant = e.share?.tenant ?? "";
    let line = lines.get(tenant);
    if (line === undefined)
      lines.set(tenant, (line = { entries: [], next: 0, counter: fair.counter(tenant) }));
    line.entries.push(e);
  }
  for (let picked = 0; picked < n; picked++) {
    let best: { entries: QueuedEntry<T>[]; next: number; counter: number } | undefined;
    for (const line of lines.values()) {
      if (line.next >= line.entries.length) continue;
      if (best === undefined || line.counter < best.counter) {
        best = line;
        continue;
      }
      if (line.counter > best.counter) continue;
      const waiting = line.entries.length - line.next;
      const bestWaiting = best.entries.length - best.next;
      if (
        waiting < bestWaiting ||
        (waiting === bestWaiting && line.entries[line.next]!.seq < best.entries[best.next]!.seq)
      )
        best = line;
    }
    if (best === undefined) return;
    const e = best.entries[best.next++]!;
    out.push(e);
    if (e.share !== undefined)
      best.counter += serviceTokens(e.share.promptTokens, e.share.outputTokens) / e.share.weight;
  }
}
