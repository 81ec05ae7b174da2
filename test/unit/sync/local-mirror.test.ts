import { describe, expect, test } from "bun:test";
import type {
  ActiveSequenceEvent,
  ActiveSequenceEventData,
} from "../../../src/router/books/sequence-events.ts";
import { LocalMirror } from "../../../src/sync/local-mirror.ts";

function ev(requestId: string, data: ActiveSequenceEventData): ActiveSequenceEvent {
  return { requestId, worker: { workerId: 1n, dpRank: 0 }, data, routerId: 9n, loraName: null };
}
const add = (id: string) =>
  ev(id, {
    type: "add_request",
    tokenSequence: BigUint64Array.of(1n),
    isl: 16,
    overlap: 0,
    expectedOutputTokens: null,
  });

describe("LocalMirror", () => {
  test("a snapshot is every live add, each followed by prefill-done when it is done", () => {
    const m = new LocalMirror();
    m.record(add("a"));
    m.record(add("b"));
    m.record(add("c"));
    m.record(ev("b", { type: "mark_prefill_completed" }));
    m.record(ev("c", { type: "free" }));
    const snap = m.snapshot(() => true);
    expect(snap.map((e) => `${e.requestId}:${e.data.type}`)).toEqual([
      "a:add_request",
      "b:add_request",
      "b:mark_prefill_completed",
    ]);
    expect(m.size).toBe(2);
  });

  test("requests the tracker dropped on its own are forgotten", () => {
    const m = new LocalMirror();
    m.record(add("live"));
    m.record(add("expired"));
    expect(m.snapshot((id) => id === "live").map((e) => e.requestId)).toEqual(["live"]);
    expect(m.size).toBe(1);
  });
});
