import { describe, expect, test } from "bun:test";
import { stringifyBigint } from "../../../src/core/json.ts";
import type { WorkerKvQueryResponse } from "../../../src/protocol/kv-query.ts";
import {
  decodeWorkerKvQueryResponse,
  parseWorkerKvQueryResponse,
  workerKvQueryResponseToWire,
} from "../../../src/protocol/kv-query-wire.ts";
import {
  makeClearEvent,
  makeRemoveEvent,
  makeStoreEvent,
} from "../router/recovery/support/events.ts";

const BIG = 18446744073709551615n;

describe("worker query response wire form (spec §1.8)", () => {
  test("decodes events with their last id, keeping u64 bits", () => {
    const text =
      '{"events":{"events":[{"worker_id":18446744073709551615,"event":{"event_id":7,"dp_rank":1,' +
      '"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":12345678901234567890,"tokens_hash":3}]}}}}],' +
      '"last_event_id":7}}';
    const r = parseWorkerKvQueryResponse(text);
    expect(r.kind).toBe("events");
    if (r.kind !== "events") return;
    expect(r.lastEventId).toBe(7n);
    expect(r.events[0]!.workerId).toBe(BIG);
    expect(r.events[0]!.event.dpRank).toBe(1);
    const d = r.events[0]!.event.data;
    expect(d.type === "stored" && d.blocks[0]!.blockHash).toBe(12345678901234567890n);
  });

  test("decodes a tree dump, including one from a worker that emitted nothing yet", () => {
    expect(parseWorkerKvQueryResponse('{"tree_dump":{"events":[],"last_event_id":null}}')).toEqual({
      kind: "tree_dump",
      events: [],
      lastEventId: null,
    });
    expect(parseWorkerKvQueryResponse('{"tree_dump":{"events":[]}}')).toMatchObject({
      lastEventId: null,
    });
  });

  test("older workers' bare event lists end at their last event", () => {
    const r = parseWorkerKvQueryResponse(
      '{"events":[{"worker_id":1,"event":{"event_id":4,"data":"cleared"}},{"worker_id":1,"event":{"event_id":5,"data":"cleared"}}]}',
    );
    expect(r.kind === "events" && r.lastEventId).toBe(5n);
  });

  test("decodes too_new, invalid_range and error", () => {
    expect(
      parseWorkerKvQueryResponse(
        '{"too_new":{"requested_start":9,"requested_end":"18446744073709551615","newest_available":3}}',
      ),
    ).toEqual({ kind: "too_new", requestedStart: 9n, requestedEnd: BIG, newestAvailable: 3n });
    expect(parseWorkerKvQueryResponse('{"invalid_range":{"start_id":5,"end_id":4}}')).toEqual({
      kind: "invalid_range",
      startId: 5n,
      endId: 4n,
    });
    expect(parseWorkerKvQueryResponse('{"error":"worker id mismatch"}')).toEqual({
      kind: "error",
      message: "worker id mismatch",
    });
  });

  test("malformed bodies become error responses naming the problem", () => {
    const r = parseWorkerKvQueryResponse('{"events":{"events":[{"worker_id":-1.5}]}}');
    expect(r.kind).toBe("error");
    expect(parseWorkerKvQueryResponse("not json").kind).toBe("error");
    expect(decodeWorkerKvQueryResponse({ nope: 1 })).toMatchObject({ kind: "error" });
  });

  test("every response kind survives encode -> JSON text -> decode", () => {
    const cases: WorkerKvQueryResponse[] = [
      {
        kind: "events",
        events: [makeStoreEvent(3, 1, BIG), makeRemoveEvent(4, [BIG]), makeClearEvent(5)],
        lastEventId: 5n,
      },
      { kind: "tree_dump", events: [makeStoreEvent(0)], lastEventId: 99n },
      { kind: "tree_dump", events: [], lastEventId: null },
      { kind: "too_new", requestedStart: 10n, requestedEnd: 12n, newestAvailable: 9n },
      { kind: "invalid_range", startId: 3n, endId: 1n },
      { kind: "error", message: "boom" },
    ];
    for (const c of cases) {
      expect(parseWorkerKvQueryResponse(stringifyBigint(workerKvQueryResponseToWire(c)))).toEqual(
        c,
      );
    }
  });
});
