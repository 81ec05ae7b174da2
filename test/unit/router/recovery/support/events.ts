/** Event builders for the recovery tests (the seed's `make_store_event` and friends). */
import {
  clearedEvent,
  removedEvent,
  storedEvent,
  type RouterEvent,
} from "../../../../../src/core/events.ts";

/** Seed helper: worker 1, one block whose hashes equal the event id. */
export function makeStoreEvent(eventId: number | bigint, dpRank = 0, workerId = 1n): RouterEvent {
  const id = BigInt(eventId);
  return storedEvent(workerId, id, [{ blockHash: id, tokensHash: id }], null, dpRank);
}

export function makeRemoveEvent(
  eventId: number | bigint,
  hashes: bigint[],
  dpRank = 0,
  workerId = 1n,
): RouterEvent {
  return removedEvent(workerId, BigInt(eventId), hashes, dpRank);
}

export function makeClearEvent(eventId: number | bigint, dpRank = 0, workerId = 1n): RouterEvent {
  return clearedEvent(workerId, BigInt(eventId), dpRank);
}

export function ids(events: readonly RouterEvent[]): number[] {
  return events.map((e) => Number(e.event.eventId));
}
