/**
 * Active-sequence events (Dynamo's ActiveSequenceEvent): what a router tells its replicas about the load it
 * books, so every replica sees the whole load. In-memory shape plus the JSON wire form of
 * Dynamo's serde encoding (externally tagged, PascalCase variants):
 *   {"request_id":"r1","worker":{"worker_id":7,"dp_rank":0},
 *    "data":{"AddRequest":{"token_sequence":[…],"isl":64,"overlap":2,"expected_output_tokens":null}},
 *    "router_id":3,"lora_name":null}
 * with `"data":"Free"` and `"data":"MarkPrefillCompleted"` for the other two. Output-block
 * growth is deliberately not replicated. Write the wire object with core/json's stringifyBigint.
 */
import * as v from "valibot";
import { DpRankSchema, U64Schema } from "../../core/events.ts";
import type { WorkerWithDpRank } from "../../core/ids.ts";

export interface AddRequestData {
  readonly type: "add_request";
  readonly tokenSequence: BigUint64Array | null;
  readonly isl: number;
  readonly overlap: number;
  readonly expectedOutputTokens: number | null;
}
export type ActiveSequenceEventData =
  | AddRequestData
  | { readonly type: "free" }
  | { readonly type: "mark_prefill_completed" };

export interface ActiveSequenceEvent {
  readonly requestId: string;
  readonly worker: WorkerWithDpRank;
  readonly data: ActiveSequenceEventData;
  /** The publishing router; a router ignores its own events. */
  readonly routerId: bigint;
  readonly loraName: string | null;
}

export function activeSequenceEventToWire(e: ActiveSequenceEvent): unknown {
  const d = e.data;
  const data =
    d.type === "free"
      ? "Free"
      : d.type === "mark_prefill_completed"
        ? "MarkPrefillCompleted"
        : {
            AddRequest: {
              token_sequence: d.tokenSequence ? Array.from(d.tokenSequence) : null,
              isl: d.isl,
              overlap: d.overlap,
              expected_output_tokens: d.expectedOutputTokens,
            },
          };
  return {
    request_id: e.requestId,
    worker: { worker_id: e.worker.workerId, dp_rank: e.worker.dpRank },
    data,
    router_id: e.routerId,
    lora_name: e.loraName,
  };
}

const count = v.pipe(v.number(), v.integer(), v.minValue(0));

const AddRequestWire = v.object({
  AddRequest: v.object({
    token_sequence: v.optional(v.nullable(v.array(U64Schema)), null),
    isl: count,
    overlap: count,
    expected_output_tokens: v.optional(v.nullable(count), null),
  }),
});

export const ActiveSequenceEventSchema = v.pipe(
  v.object({
    request_id: v.string(),
    worker: v.object({ worker_id: U64Schema, dp_rank: v.optional(DpRankSchema, 0) }),
    data: v.union([AddRequestWire, v.literal("Free"), v.literal("MarkPrefillCompleted")]),
    router_id: U64Schema,
    lora_name: v.optional(v.nullable(v.string()), null),
  }),
  v.transform((w): ActiveSequenceEvent => {
    let data: ActiveSequenceEventData;
    if (w.data === "Free") data = { type: "free" };
    else if (w.data === "MarkPrefillCompleted") data = { type: "mark_prefill_completed" };
    else {
      const a = w.data.AddRequest;
      data = {
        type: "add_request",
        tokenSequence: a.token_sequence ? BigUint64Array.from(a.token_sequence) : null,
        isl: a.isl,
        overlap: a.overlap,
        expectedOutputTokens: a.expected_output_tokens,
      };
    }
    return {
      requestId: w.request_id,
      worker: { workerId: w.worker.worker_id, dpRank: w.worker.dp_rank },
      data,
      routerId: w.router_id,
      loraName: w.lora_name,
    };
  }),
);
