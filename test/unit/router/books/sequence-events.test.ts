import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { parseJsonBigintSafe, stringifyBigint } from "../../../../src/core/json.ts";
import {
  ActiveSequenceEventSchema,
  activeSequenceEventToWire,
  type ActiveSequenceEvent,
} from "../../../../src/router/books/sequence-events.ts";

const big = 18446744073709551615n;

function roundTrip(e: ActiveSequenceEvent): ActiveSequenceEvent {
  return v.parse(
    ActiveSequenceEventSchema,
    parseJsonBigintSafe(stringifyBigint(activeSequenceEventToWire(e))),
  );
}

describe("active sequence events wire form (§1.6)", () => {
  test("AddRequest is externally tagged and keeps u64 hashes exact", () => {
    const e: ActiveSequenceEvent = {
      requestId: "r1",
      worker: { workerId: big, dpRank: 2 },
      data: {
        type: "add_request",
        tokenSequence: BigUint64Array.of(1n, big),
        isl: 64,
        overlap: 3,
        expectedOutputTokens: null,
      },
      routerId: 7n,
      loraName: "adapter-a",
    };
    const wire = stringifyBigint(activeSequenceEventToWire(e));
    expect(wire).toBe(
      `{"request_id":"r1","worker":{"worker_id":${big},"dp_rank":2},"data":{"AddRequest":{"token_sequence":[1,${big}],"isl":64,"overlap":3,"expected_output_tokens":null}},"router_id":7,"lora_name":"adapter-a"}`,
    );
    expect(roundTrip(e)).toEqual(e);
  });

  test("Free and MarkPrefillCompleted are bare strings", () => {
    for (const [type, tag] of [
      ["free", "Free"],
      ["mark_prefill_completed", "MarkPrefillCompleted"],
    ] as const) {
      const e: ActiveSequenceEvent = {
        requestId: "r",
        worker: { workerId: 1n, dpRank: 0 },
        data: { type },
        routerId: 1n,
        loraName: null,
      };
      expect((activeSequenceEventToWire(e) as { data: unknown }).data).toBe(tag);
      expect(roundTrip(e)).toEqual(e);
    }
  });

  test("optional fields default as serde does; bad variants are rejected", () => {
    const ok = v.parse(ActiveSequenceEventSchema, {
      request_id: "r",
      worker: { worker_id: 3 },
      data: { AddRequest: { isl: 5, overlap: 0 } },
      router_id: "12",
    });
    expect(ok.worker).toEqual({ workerId: 3n, dpRank: 0 });
    expect(ok.loraName).toBeNull();
    expect(ok.data).toEqual({
      type: "add_request",
      tokenSequence: null,
      isl: 5,
      overlap: 0,
      expectedOutputTokens: null,
    });
    expect(
      v.safeParse(ActiveSequenceEventSchema, {
        request_id: "r",
        worker: { worker_id: 3 },
        data: "Oops",
        router_id: 1,
      }).success,
    ).toBe(false);
  });
});
