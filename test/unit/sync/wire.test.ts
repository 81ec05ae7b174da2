import { describe, expect, test } from "bun:test";
import { stringifyBigint } from "../../../src/core/json.ts";
import {
  activeSequenceEventToWire,
  type ActiveSequenceEvent,
} from "../../../src/router/books/sequence-events.ts";
import {
  decodeMessage,
  encodeEvent,
  encodeEventsMessage,
  encodeHeartbeat,
  encodeResync,
  encodeSnapshotMessage,
  originPrefix,
} from "../../../src/sync/wire.ts";

const U64_MAX = (1n << 64n) - 1n;
const origin = { routerId: U64_MAX, epoch: "0123abcd" };

function addEvent(requestId: string, routerId = origin.routerId): ActiveSequenceEvent {
  return {
    requestId,
    worker: { workerId: U64_MAX - 1n, dpRank: 3 },
    data: {
      type: "add_request",
      tokenSequence: BigUint64Array.of(1n, U64_MAX),
      isl: 40,
      overlap: 1,
      expectedOutputTokens: 12,
    },
    routerId,
    loraName: "lora-x",
  };
}

describe("sync wire envelope", () => {
  test("an events message round-trips with exact u64s and starts with the origin prefix", () => {
    const free: ActiveSequenceEvent = {
      requestId: "r2",
      worker: { workerId: 5n, dpRank: 0 },
      data: { type: "free" },
      routerId: origin.routerId,
      loraName: null,
    };
    const text = encodeEventsMessage(origin, 7, [encodeEvent(addEvent("r1")), encodeEvent(free)]);
    expect(text.startsWith(originPrefix(U64_MAX))).toBe(true);
    const d = decodeMessage(text)!;
    expect(d.invalidEvents).toBe(0);
    expect(d.message).toEqual({
      kind: "events",
      routerId: U64_MAX,
      epoch: "0123abcd",
      seq: 7,
      events: [addEvent("r1"), free],
    });
  });

  test("snapshot, heartbeat and resync round-trip", () => {
    expect(
      decodeMessage(encodeSnapshotMessage(origin, 9, 1, true, [encodeEvent(addEvent("s"))]))!
        .message,
    ).toEqual({
      kind: "snapshot",
      routerId: U64_MAX,
      epoch: "0123abcd",
      seq: 9,
      part: 1,
      last: true,
      events: [addEvent("s")],
    });
    expect(decodeMessage(encodeHeartbeat(origin, 0))!.message).toEqual({
      kind: "heartbeat",
      routerId: U64_MAX,
      epoch: "0123abcd",
      seq: 0,
    });
    expect(decodeMessage(encodeResync(origin, 42n))!.message).toEqual({
      kind: "resync",
      routerId: U64_MAX,
      epoch: "0123abcd",
      target: 42n,
    });
  });

  test("events claiming another origin, or malformed, are left out and counted", () => {
    const text = encodeEventsMessage(origin, 1, [
      encodeEvent(addEvent("ok")),
      encodeEvent(addEvent("forged", 5n)),
      `{"request_id":3}`,
    ]);
    const d = decodeMessage(text)!;
    expect(d.invalidEvents).toBe(2);
    expect(d.message.kind === "events" && d.message.events.map((e) => e.requestId)).toEqual(["ok"]);
  });

  test("anything that is not a sync message decodes to undefined, never throws", () => {
    for (const junk of [
      "",
      "not json",
      "[]",
      `{"kind":"events"}`,
      `{"router_id":"1","epoch":"e","kind":"nope","seq":1}`,
      `{"router_id":"x","epoch":"e","kind":"heartbeat","seq":1}`,
      `{"router_id":"18446744073709551616","epoch":"e","kind":"heartbeat","seq":1}`,
      `{"router_id":"1","epoch":"e","kind":"heartbeat","seq":-1}`,
    ]) {
      expect(decodeMessage(junk)).toBeUndefined();
    }
  });

  test("the fast event writer gives exactly the scheduler's wire text", () => {
    const variants: ActiveSequenceEvent[] = [
      addEvent("plain"),
      { ...addEvent('quo"te\\ ünï\n'), loraName: 'a "lora"' },
      {
        ...addEvent("no-tokens"),
        data: {
          type: "add_request",
          tokenSequence: null,
          isl: 0,
          overlap: 0,
          expectedOutputTokens: null,
        },
      },
      {
        ...addEvent("empty"),
        data: {
          type: "add_request",
          tokenSequence: new BigUint64Array(0),
          isl: 1,
          overlap: 0,
          expectedOutputTokens: 0,
        },
      },
      { ...addEvent("free"), data: { type: "free" } },
      { ...addEvent("pf"), data: { type: "mark_prefill_completed" }, loraName: null },
    ];
    for (const e of variants) {
      const text = encodeEvent(e);
      expect(text).toBe(stringifyBigint(activeSequenceEventToWire(e)));
      const d = decodeMessage(
        encodeEventsMessage({ routerId: e.routerId, epoch: "x" }, 1, [text]),
      )!;
      expect(d.message.kind === "events" && d.message.events[0]).toEqual(e);
    }
  });

  test("sequence hashes out of u64 range or not integers make the event invalid", () => {
    const base = JSON.parse(
      encodeEvent({ ...addEvent("t"), routerId: 3n, worker: { workerId: 1n, dpRank: 0 } }),
    ) as {
      data: { AddRequest: { token_sequence: unknown[] } };
    };
    for (const bad of [-1, 1.5, "18446744073709551616", "12a", "", "0x10", null, true]) {
      base.data.AddRequest.token_sequence = [1, bad];
      const msg = `{"router_id":"3","epoch":"x","kind":"events","seq":1,"events":[${JSON.stringify(base)}]}`;
      expect(decodeMessage(msg)!.invalidEvents).toBe(1);
    }
    base.data.AddRequest.token_sequence = [0, 9007199254740991, "18446744073709551615"];
    const ok = decodeMessage(
      `{"router_id":"3","epoch":"x","kind":"events","seq":1,"events":[${JSON.stringify(base)}]}`,
    )!.message;
    expect(ok.kind === "events" && ok.events[0]!.data).toMatchObject({
      tokenSequence: BigUint64Array.of(0n, 9007199254740991n, U64_MAX),
    });
  });
});
