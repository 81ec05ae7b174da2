import { describe, expect, test } from "bun:test";
import { clearedEvent } from "../../../src/core/events.ts";
import { stringifyBigint } from "../../../src/core/json.ts";
import { RankEventLog } from "../../../src/mocker/event-log.ts";
import {
  parseWorkerKvQueryResponse,
  workerKvQueryResponseToWire,
} from "../../../src/protocol/kv-query-wire.ts";

const DUMP = [clearedEvent(7n, 0n)]; // a recognizable stand-in for the tree dump

function logWith(n: number, bufferSize = 4) {
  const log = new RankEventLog(7n, 2, () => DUMP, bufferSize);
  for (let i = 0; i < n; i++) log.append({ type: "removed", blockHashes: [BigInt(i)] });
  return log;
}
const ids = (r: ReturnType<RankEventLog["query"]>) =>
  r.kind === "events" || r.kind === "tree_dump" ? r.events.map((e) => e.event.eventId) : undefined;

describe("RankEventLog", () => {
  test("ids are dense from 0 and carry the worker and dp rank", () => {
    const log = logWith(3);
    expect(log.lastEventId).toBe(2n);
    expect(log.nextEventId).toBe(3n);
    const e = log.append({ type: "cleared" });
    expect(e).toEqual({
      workerId: 7n,
      event: { eventId: 3n, dpRank: 2, data: { type: "cleared" } },
    });
  });
  test("reset restarts ids at 0 with an empty buffer", () => {
    const log = logWith(5);
    log.reset();
    expect(log.lastEventId).toBeUndefined();
    expect(log.buffered).toBe(0);
    expect(log.append({ type: "cleared" }).event.eventId).toBe(0n);
  });
});

describe("RankEventLog.query (the recovery query's answers)", () => {
  test("end before start is an invalid range", () => {
    expect(logWith(3).query(2n, 1n)).toEqual({ kind: "invalid_range", startId: 2n, endId: 1n });
  });
  test("no start id means a tree dump carrying the newest id", () => {
    expect(logWith(3).query()).toEqual({ kind: "tree_dump", events: DUMP, lastEventId: 2n });
  });
  test("an empty buffer answers with a dump; with no event ever its last id is null", () => {
    expect(logWith(0).query(0n)).toEqual({ kind: "tree_dump", events: DUMP, lastEventId: null });
  });
  test("a start past the newest id is too new", () => {
    expect(logWith(3).query(5n)).toEqual({
      kind: "too_new",
      requestedStart: 5n,
      requestedEnd: 2n,
      newestAvailable: 2n,
    });
    expect(logWith(3).query(5n, 9n)).toEqual({
      kind: "too_new",
      requestedStart: 5n,
      requestedEnd: 9n,
      newestAvailable: 2n,
    });
  });
  test("a start older than the buffer falls back to a dump", () => {
    expect(logWith(10).query(3n).kind).toBe("tree_dump"); // buffer holds 6..9
  });
  test("an inclusive range inside the buffer returns those events with their ids", () => {
    const log = logWith(10);
    expect(ids(log.query(6n, 8n))).toEqual([6n, 7n, 8n]);
    expect(ids(log.query(7n))).toEqual([7n, 8n, 9n]);
    expect(ids(log.query(9n, 100n))).toEqual([9n]);
    const r = log.query(6n, 7n);
    expect(r.kind === "events" && r.lastEventId).toBe(7n);
  });
  test("the ring keeps the newest events after wrapping many times", () => {
    const log = logWith(1003, 4);
    expect(log.buffered).toBe(4);
    expect(ids(log.query(999n))).toEqual([999n, 1000n, 1001n, 1002n]);
  });
  test("answers round-trip through the router's wire decoder", () => {
    const log = logWith(6);
    for (const r of [log.query(3n), log.query(), log.query(9n), log.query(4n, 1n)]) {
      expect(parseWorkerKvQueryResponse(stringifyBigint(workerKvQueryResponseToWire(r)))).toEqual(
        r,
      );
    }
  });
});
