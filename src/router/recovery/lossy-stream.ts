/**
 * Event streams that cannot be replayed past a point (vLLM over ZMQ: its replay buffer
 * moves on; batches lost beyond it are gone for good). Their subscriber numbers events
 * densely and leaves an id gap where batches were lost (events/zmq/subscriber.ts). Lost
 * batches may hold Removed events, so blocks the engine dropped would stay in the index for
 * good (319 such blocks). An id gap therefore wipes the rank before the next
 * event applies: a cold rank is honest, stale hits are not. PURE: ids in, decisions out.
 */
import type { RouterEvent } from "../../core/events.ts";
import { workerKey, type WorkerId, type WorkerKey } from "../../core/ids.ts";

export class LossyStreamGuard {
  readonly #last = new Map<WorkerKey, bigint>();
  #wipes = 0;

  /** Ranks wiped because of a gap so far. */
  get wipes(): number {
    return this.#wipes;
  }

  /** (worker, dp rank) streams whose last id is kept: bounded by the registered ranks once removed workers are forgotten. */
  get streams(): number {
    return this.#last.size;
  }

  /** Whether the event's rank must be wiped before the event is applied (ids were skipped). */
  observe(ev: RouterEvent): boolean {
    const key = workerKey(ev.workerId, ev.event.dpRank);
    const id = ev.event.eventId;
    const last = this.#last.get(key);
    this.#last.set(key, id);
    // A lower id is a new subscriber or a restarted publisher (it says so with a Cleared).
    const gap = last !== undefined && id > last + 1n;
    if (gap) this.#wipes++;
    return gap;
  }

  forget(workerId: WorkerId): void {
    const prefix = `${workerId}:`;
    for (const k of this.#last.keys()) if (k.startsWith(prefix)) this.#last.delete(k);
  }
}
