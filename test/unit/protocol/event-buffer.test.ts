import { describe, expect, test } from "bun:test";
import { EventBuffer, WORKER_KV_INDEXER_BUFFER_SIZE } from "../../../src/protocol/event-buffer.ts";
import { ids, makeStoreEvent } from "../router/recovery/support/events.ts";

const DUMP = [makeStoreEvent(0), makeStoreEvent(1)];

function bufferWith(idList: number[], capacity?: number): EventBuffer {
  const b = new EventBuffer({ dump: () => DUMP, capacity });
  for (const id of idList) b.push(makeStoreEvent(id));
  return b;
}

describe("EventBuffer.getEventsInIdRange (spec §3.8)", () => {
  test("end before start is an invalid range", () => {
    expect(bufferWith([1, 2]).getEventsInIdRange(5n, 4n)).toEqual({
      kind: "invalid_range",
      startId: 5n,
      endId: 4n,
    });
  });

  test("no start asks for a tree dump as of the newest event", () => {
    expect(bufferWith([1, 2, 3]).getEventsInIdRange()).toEqual({
      kind: "tree_dump",
      events: DUMP,
      lastEventId: 3n,
    });
  });

  test("an empty buffer answers with a dump whose last id is null", () => {
    expect(bufferWith([]).getEventsInIdRange(0n)).toEqual({
      kind: "tree_dump",
      events: DUMP,
      lastEventId: null,
    });
  });

  test("a start past the newest event is too new", () => {
    expect(bufferWith([1, 2, 3]).getEventsInIdRange(5n)).toEqual({
      kind: "too_new",
      requestedStart: 5n,
      requestedEnd: 3n,
      newestAvailable: 3n,
    });
    expect(bufferWith([1, 2, 3]).getEventsInIdRange(5n, 9n)).toMatchObject({
      kind: "too_new",
      requestedEnd: 9n,
    });
  });

  test("a start older than the ring holds falls back to a dump", () => {
    const b = bufferWith(
      Array.from({ length: 10 }, (_, i) => i),
      4,
    );
    expect(b.size).toBe(4);
    expect(b.getEventsInIdRange(5n)).toEqual({ kind: "tree_dump", events: DUMP, lastEventId: 9n });
  });

  test("a range inside the ring returns those events with their own ids", () => {
    const b = bufferWith(
      Array.from({ length: 10 }, (_, i) => i),
      6,
    );
    const r = b.getEventsInIdRange(5n, 7n);
    expect(r.kind).toBe("events");
    if (r.kind !== "events") return;
    expect(ids(r.events)).toEqual([5, 6, 7]);
    expect(r.lastEventId).toBe(7n);
    const all = b.getEventsInIdRange(4n);
    expect(all.kind === "events" && ids(all.events)).toEqual([4, 5, 6, 7, 8, 9]);
    expect(all.kind === "events" && all.lastEventId).toBe(9n);
    const capped = b.getEventsInIdRange(8n, 100n);
    expect(capped.kind === "events" && ids(capped.events)).toEqual([8, 9]);
  });

  test("binary search finds ranges across the ring's wrap point", () => {
    const b = bufferWith(
      Array.from({ length: 1000 }, (_, i) => i),
      7,
    );
    for (let s = 993; s <= 999; s++) {
      const r = b.getEventsInIdRange(BigInt(s));
      expect(r.kind === "events" && ids(r.events)).toEqual(
        Array.from({ length: 1000 - s }, (_, i) => s + i),
      );
    }
  });

  test("out-of-sequence ids are recorded and counted; a range with no ids inside is empty", () => {
    const b = bufferWith([1, 2, 5, 6]);
    expect(b.outOfSequence).toBe(1);
    const r = b.getEventsInIdRange(3n, 4n);
    expect(r).toEqual({ kind: "events", events: [], lastEventId: 4n });
  });

  test("ids going back (engine restart) start the buffer over", () => {
    const b = bufferWith([10, 11, 12]);
    b.push(makeStoreEvent(0));
    expect(b.size).toBe(1);
    expect(b.lastEventId).toBe(0n);
    expect(b.getEventsInIdRange(11n).kind).toBe("too_new");
    b.clear();
    expect(b.lastEventId).toBeNull();
  });

  test("holds 1024 events by default", () => {
    const b = bufferWith(Array.from({ length: 2000 }, (_, i) => i));
    expect(WORKER_KV_INDEXER_BUFFER_SIZE).toBe(1024);
    expect(b.size).toBe(1024);
    expect(b.getEventsInIdRange(975n).kind).toBe("tree_dump");
    expect(b.getEventsInIdRange(976n).kind).toBe("events");
  });
});
