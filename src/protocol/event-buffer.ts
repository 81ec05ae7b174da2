/**
 * The worker side of recovery (Dynamo `LocalKvIndexer`'s buffer): a ring of the
 * last N events one (worker, dp_rank) publisher emitted, and the answer to "events in
 * [start, end]". It does not hold the worker's blocks: a tree dump comes from the `dump`
 * callback (the engine's own view of its cache), and it does no I/O.
 */
import type { RouterEvent } from "../core/events.ts";
import type { EventId } from "../core/ids.ts";
import type { WorkerKvQueryResponse } from "./kv-query.ts";

/** Events kept per publisher, as Dynamo's workers keep: a router further behind gets a tree dump. */
export const WORKER_KV_INDEXER_BUFFER_SIZE = 1024;

export interface EventBufferOptions {
  /** The publisher's current blocks as Stored events (parents first), for tree dumps. */
  readonly dump: () => RouterEvent[];
  readonly capacity?: number;
}

export class EventBuffer {
  readonly capacity: number;
  /** Pushed events whose id was not the previous id + 1 (kept anyway, as Dynamo does). */
  outOfSequence = 0;
  private readonly ring: (RouterEvent | undefined)[];
  private readonly dump: () => RouterEvent[];
  private head = 0;
  private count = 0;
  private newest: EventId | null = null;

  constructor(opts: EventBufferOptions) {
    this.capacity = opts.capacity ?? WORKER_KV_INDEXER_BUFFER_SIZE;
    if (!(this.capacity >= 1))
      throw new Error(`event buffer capacity must be >= 1, got ${this.capacity}`);
    this.ring = new Array(this.capacity);
    this.dump = opts.dump;
  }

  /** Id of the newest event pushed since construction or the last clear; null if none. */
  get lastEventId(): EventId | null {
    return this.newest;
  }

  get size(): number {
    return this.count;
  }

  /**
   * Record an emitted event. An id at or below the newest one means the publisher started
   * its ids over (an engine restart): the old events describe a cache that is gone, so the
   * buffer starts over too (and binary search stays valid).
   */
  push(event: RouterEvent): void {
    const id = event.event.eventId;
    if (this.newest !== null) {
      if (id <= this.newest) this.clear();
      else if (id !== this.newest + 1n) this.outOfSequence += 1;
    }
    const slot = (this.head + this.count) % this.capacity;
    this.ring[slot] = event;
    if (this.count < this.capacity) this.count += 1;
    else this.head = (this.head + 1) % this.capacity;
    this.newest = id;
  }

  /** Forget everything (the engine restarted; its next id is 0). */
  clear(): void {
    this.ring.fill(undefined);
    this.head = 0;
    this.count = 0;
    this.newest = null;
  }

  /**
   * Dynamo's `get_events_in_id_range`; both ends inclusive, `start` undefined = dump. A start
   * older than the ring is a dump too (those events are gone), one past the newest `too_new`.
   */
  getEventsInIdRange(start?: EventId, end?: EventId): WorkerKvQueryResponse {
    if (start !== undefined && end !== undefined && end < start) {
      return { kind: "invalid_range", startId: start, endId: end };
    }
    if (start === undefined || this.count === 0) return this.treeDump();
    const oldest = this.at(0).event.eventId;
    const newest = this.at(this.count - 1).event.eventId;
    if (start > newest) {
      return {
        kind: "too_new",
        requestedStart: start,
        requestedEnd: end ?? newest,
        newestAvailable: newest,
      };
    }
    if (start < oldest) return this.treeDump();
    const stop = end !== undefined && end < newest ? end : newest;
    const from = this.lowerBound(start);
    const to = this.lowerBound(stop + 1n);
    const events: RouterEvent[] = new Array(to - from);
    for (let i = from; i < to; i++) events[i - from] = this.at(i);
    return { kind: "events", events, lastEventId: stop };
  }

  private treeDump(): WorkerKvQueryResponse {
    return { kind: "tree_dump", events: this.dump(), lastEventId: this.newest };
  }

  private at(i: number): RouterEvent {
    return this.ring[(this.head + i) % this.capacity]!;
  }

  /** First logical index whose id is >= `id` (ids increase along the ring). */
  private lowerBound(id: EventId): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.at(mid).event.eventId < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
