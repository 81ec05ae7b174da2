/**
 * One dp rank's KV event log: dense event ids from 0, and a ring buffer of the most recent
 * events that answers the recovery query of spec §3.8 (`get_events_in_id_range`).
 * Pure: the tree dump is produced by the caller (it knows the cache) and passed in lazily.
 */
import { routerEventToWire, type KvCacheEventData, type RouterEvent } from "../core/events.ts";
import type { DpRank, EventId, WorkerId } from "../core/ids.ts";

export type KvQueryResponse =
  | { readonly kind: "events"; readonly events: RouterEvent[]; readonly lastEventId: EventId }
  /** `lastEventId` is null when the rank has never emitted an event (nothing to resume from). */
  | { readonly kind: "tree_dump"; readonly events: RouterEvent[]; readonly lastEventId: EventId | null }
  | { readonly kind: "too_new"; readonly requestedStart: EventId; readonly requestedEnd: EventId; readonly newestAvailable: EventId }
  | { readonly kind: "invalid_range"; readonly startId: EventId; readonly endId: EventId };

export class RankEventLog {
  private readonly ring: (RouterEvent | undefined)[];
  /** Index in `ring` of the oldest buffered event. */
  private head = 0;
  private count = 0;
  private nextId = 0n;

  constructor(
    readonly workerId: WorkerId,
    readonly dpRank: DpRank,
    readonly bufferSize = 1024,
  ) {
    if (!(Number.isInteger(bufferSize) && bufferSize > 0)) throw new RangeError(`bufferSize must be a positive integer (got ${bufferSize})`);
    this.ring = new Array(bufferSize);
  }

  /** The id the next event will get. */
  get nextEventId(): EventId {
    return this.nextId;
  }

  /** Id of the newest event ever emitted (since the last restart), if any. */
  get lastEventId(): EventId | undefined {
    return this.nextId === 0n ? undefined : this.nextId - 1n;
  }

  get buffered(): number {
    return this.count;
  }

  /** Give `data` the next id, keep it in the ring, and return the event. */
  append(data: KvCacheEventData): RouterEvent {
    const event: RouterEvent = { workerId: this.workerId, event: { eventId: this.nextId++, dpRank: this.dpRank, data } };
    const size = this.ring.length;
    if (this.count < size) {
      this.ring[(this.head + this.count) % size] = event;
      this.count++;
    } else {
      this.ring[this.head] = event;
      this.head = (this.head + 1) % size;
    }
    return event;
  }

  /** Simulated engine restart: ids start again at 0, the buffer is empty. */
  reset(): void {
    this.ring.fill(undefined);
    this.head = 0;
    this.count = 0;
    this.nextId = 0n;
  }

  private at(i: number): RouterEvent {
    return this.ring[(this.head + i) % this.ring.length]!;
  }

  /** First buffered position whose id is >= id (binary search; ids ascend). */
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

  /**
   * Spec §3.8, in its order: invalid range; no start -> dump; empty buffer -> dump;
   * start past the newest -> too_new; start older than the buffer -> dump; else the
   * buffered events in [start, min(end, newest)] with their original ids.
   */
  query(startId: EventId | undefined, endId: EventId | undefined, dump: () => RouterEvent[]): KvQueryResponse {
    if (startId !== undefined && endId !== undefined && endId < startId) {
      return { kind: "invalid_range", startId, endId };
    }
    const treeDump = (): KvQueryResponse => ({ kind: "tree_dump", events: dump(), lastEventId: this.lastEventId ?? null });
    if (startId === undefined || this.count === 0) return treeDump();
    const first = this.at(0).event.eventId;
    const last = this.at(this.count - 1).event.eventId;
    if (startId > last) {
      return { kind: "too_new", requestedStart: startId, requestedEnd: endId ?? last, newestAvailable: last };
    }
    if (startId < first) return treeDump();
    const upTo = endId === undefined || endId > last ? last : endId;
    const from = this.lowerBound(startId);
    const to = this.lowerBound(upTo + 1n);
    const events: RouterEvent[] = [];
    for (let i = from; i < to; i++) events.push(this.at(i));
    // The last id this answer covers, so the router resumes right after it.
    return { kind: "events", events, lastEventId: events.length > 0 ? events[events.length - 1]!.event.eventId : upTo };
  }
}

/** JSON-ready wire form (write with stringifyBigint): `{"events":{...}}`, `{"tree_dump":{...}}`, ... */
export function kvQueryToWire(r: KvQueryResponse): unknown {
  switch (r.kind) {
    case "events":
    case "tree_dump":
      return { [r.kind]: { events: r.events.map(routerEventToWire), last_event_id: r.lastEventId } };
    case "too_new":
      return {
        too_new: { requested_start: r.requestedStart, requested_end: r.requestedEnd, newest_available: r.newestAvailable },
      };
    case "invalid_range":
      return { invalid_range: { start_id: r.startId, end_id: r.endId } };
  }
}
