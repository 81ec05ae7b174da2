/**
 * One dp rank's KV event log: it gives events dense ids from 0 and keeps the most recent ones in
 * the recovery ring buffer (src/protocol/event-buffer.ts), which answers the recovery query
 * (src/protocol/kv-query.ts). Pure; the tree dump comes from the caller (it knows the cache).
 */
import type { KvCacheEventData, KvMedium, RouterEvent } from "../core/events.ts";
import type { DpRank, EventId, WorkerId } from "../core/ids.ts";
import { EventBuffer, WORKER_KV_INDEXER_BUFFER_SIZE } from "../protocol/event-buffer.ts";
import type { WorkerKvQueryResponse } from "../protocol/kv-query.ts";

export type { WorkerKvQueryResponse } from "../protocol/kv-query.ts";

export class RankEventLog {
  private readonly buffer: EventBuffer;
  private nextId = 0n;

  constructor(
    readonly workerId: WorkerId,
    readonly dpRank: DpRank,
    /** The rank's cached blocks as Stored events, parents first (for tree dumps). */
    dump: () => RouterEvent[],
    bufferSize = WORKER_KV_INDEXER_BUFFER_SIZE,
  ) {
    this.buffer = new EventBuffer({ dump, capacity: bufferSize });
  }

  /** The id the next event will get. */
  get nextEventId(): EventId {
    return this.nextId;
  }

  /** Id of the newest event emitted since the last restart, if any. */
  get lastEventId(): EventId | undefined {
    return this.nextId === 0n ? undefined : this.nextId - 1n;
  }

  get buffered(): number {
    return this.buffer.size;
  }

  /** Give `data` the next id, keep it in the ring, and return the event. */
  append(data: KvCacheEventData, medium?: KvMedium): RouterEvent {
    const base = { eventId: this.nextId++, dpRank: this.dpRank, data };
    // A GPU event carries no medium, as every engine without tiers sends it.
    const event: RouterEvent = {
      workerId: this.workerId,
      event: medium === undefined || medium === "gpu" ? base : { ...base, medium },
    };
    this.buffer.push(event);
    return event;
  }

  /** Simulated engine restart: ids start again at 0, the buffer is empty. */
  reset(): void {
    this.buffer.clear();
    this.nextId = 0n;
  }

  /** Events with ids in [startId, endId], inclusive; no start: a tree dump (event-buffer.ts). */
  query(startId?: EventId, endId?: EventId): WorkerKvQueryResponse {
    return this.buffer.getEventsInIdRange(startId, endId);
  }
}
