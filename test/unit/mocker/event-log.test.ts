import { describe, expect, test } from "bun:test";
import { stringifyBigint } from "../../../src/core/json.ts";
import { clearedEvent } from "../../../src/core/events.ts";
import { kvQueryToWire, RankEventLog } from "../../../src/mocker/event-log.ts";

const DUMP = [clearedEvent(7n, 0n)]; // a recognizable stand-in for the tree dump
const dump = () => DUMP;

function logWith(n: number, bufferSize = 4) {
  const log = new RankEventLog(7n, 2, bufferSize);
  for (let i = 0; i < n; i++) log.append({ type: "removed", blockHashes: [BigInt(i)] });
  return log;
}
const ids = (r: ReturnType<RankEventLog["query"]>) =>
  r.kind === "events" || r.kind === "tree_dump" ? r.events.map((e) => e.event.eventId) : undefined;

describe("RankEventLog.query (spec §3.8)", () => {
  test("end before start is an invalid range", () => {
    expect(logWith(3).query(2n, 1n, dump)).toEqual({ kind: "invalid_range", startId: 2n, endId: 1n });
  });
  test("no start id means a tree dump carrying the newest id", () => {
    const r = logWith(3).query(undefined, undefined, dump);
    expect(r).toEqual({ kind: "tree_dump", events: DUMP, lastEventId: 2n });
  });
  test("an empty buffer answers with a dump; with no event ever its last id is null", () => {
    expect(logWith(0).query(0n, undefined, dump)).toEqual({ kind: "tree_dump", events: DUMP, lastEventId: null });
  });
  test("a start past the newest id is too new", () => {
    expect(logWith(3).query(5n, undefined, dump)).toEqual({ kind: "too_new", requestedStart: 5n, requestedEnd: 2n, newestAvailable: 2n });
    expect(logWith(3).query(5n, 9n, dump)).toEqual({ kind: "too_new", requestedStart: 5n, requestedEnd: 9n, newestAvailable: 2n });
  });
  test("a start older than the buffer falls back to a dump", () => {
    const log = logWith(10); // buffer holds 6..9
    const r = log.query(3n, undefined, dump);
    expect(r.kind).toBe("tree_dump");
  });
  test("an inclusive range inside the buffer returns those events with their ids", () => {
    const log = logWith(10);
    expect(ids(log.query(6n, 8n, dump))).toEqual([6n, 7n, 8n]);
    expect(ids(log.query(7n, undefined, dump))).toEqual([7n, 8n, 9n]);
    expect(ids(log.query(9n, 100n, dump))).toEqual([9n]);
    const r = log.query(6n, 7n, dump);
    expect(r.kind === "events" && r.lastEventId).toBe(7n);
  });
  test("the ring keeps the newest events after wrapping many times", () => {
    const log = logWith(1003, 4);
    expect(log.buffered).toBe(4);
    expect(ids(log.query(999n, undefined, dump))).toEqual([999n, 1000n, 1001n, 1002n]);
    expect(log.lastEventId).toBe(1002n);
  });
  test("reset restarts ids at 0 with an empty buffer", () => {
    const log = logWith(5);
    log.reset();
    expect(log.lastEventId).toBeUndefined();
    expect(log.append({ type: "cleared" }).event.eventId).toBe(0n);
  });
  test("wire forms are the externally tagged shapes", () => {
    const log = logWith(2);
    expect(stringifyBigint(kvQueryToWire(log.query(1n, undefined, dump)))).toBe(
      '{"events":{"events":[{"worker_id":7,"event":{"event_id":1,"data":{"removed":{"block_hashes":[1]}},"dp_rank":2}}],"last_event_id":1}}',
    );
    expect(stringifyBigint(kvQueryToWire(log.query(5n, undefined, dump)))).toBe(
      '{"too_new":{"requested_start":5,"requested_end":1,"newest_available":1}}',
    );
    expect(stringifyBigint(kvQueryToWire(log.query(3n, 1n, dump)))).toBe('{"invalid_range":{"start_id":3,"end_id":1}}');
    expect(stringifyBigint(kvQueryToWire(logWith(0).query(undefined, undefined, () => [])))).toBe(
      '{"tree_dump":{"events":[],"last_event_id":null}}',
    );
  });
});
