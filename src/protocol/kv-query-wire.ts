/**
 * JSON wire form of WorkerKvQueryResponse (kv-query.ts) as a worker's query endpoint returns it
 * (serde externally tagged, snake_case):
 *   {"events":{"events":[RouterEvent…],"last_event_id":N}}   (older workers: {"events":[…]})
 *   {"tree_dump":{"events":[…],"last_event_id":N}}           (last_event_id null: nothing emitted yet)
 *   {"too_new":{"requested_start":N,"requested_end":N,"newest_available":N}}
 *   {"invalid_range":{"start_id":N,"end_id":N}}
 *   {"error":"message"}
 * Decoding and encoding only; no I/O. Parse the text with core/json.ts parseJsonBigintSafe.
 */
import * as v from "valibot";
import { RouterEventSchema, U64Schema, describeIssues, routerEventToWire } from "../core/events.ts";
import { parseJsonBigintSafe } from "../core/json.ts";
import type { WorkerKvQueryResponse } from "./kv-query.ts";

const EventsBody = v.union([
  v.object({
    events: v.array(RouterEventSchema),
    last_event_id: v.optional(v.nullable(U64Schema), null),
  }),
  // Older workers: a bare list, no last id.
  v.pipe(
    v.array(RouterEventSchema),
    v.transform((events) => ({ events, last_event_id: null })),
  ),
]);

const Response = v.union(
  [
    v.object({ events: EventsBody }),
    v.object({ tree_dump: EventsBody }),
    v.object({
      too_new: v.object({
        requested_start: U64Schema,
        requested_end: U64Schema,
        newest_available: U64Schema,
      }),
    }),
    v.object({ invalid_range: v.object({ start_id: U64Schema, end_id: U64Schema }) }),
    v.object({ error: v.string() }),
  ],
  'must be {"events":…}, {"tree_dump":…}, {"too_new":…}, {"invalid_range":…} or {"error":"…"}',
);

/** Valibot schema: wire JSON value -> WorkerKvQueryResponse. */
export const WorkerKvQueryResponseSchema = v.pipe(
  Response,
  v.transform((r): WorkerKvQueryResponse => {
    if ("events" in r)
      return { kind: "events", events: r.events.events, lastEventId: lastIdOf(r.events) };
    if ("tree_dump" in r)
      return {
        kind: "tree_dump",
        events: r.tree_dump.events,
        lastEventId: r.tree_dump.last_event_id,
      };
    if ("too_new" in r) {
      const t = r.too_new;
      return {
        kind: "too_new",
        requestedStart: t.requested_start,
        requestedEnd: t.requested_end,
        newestAvailable: t.newest_available,
      };
    }
    if ("invalid_range" in r)
      return {
        kind: "invalid_range",
        startId: r.invalid_range.start_id,
        endId: r.invalid_range.end_id,
      };
    return { kind: "error", message: r.error };
  }),
);

/** An events answer without last_event_id ends at its last event. */
function lastIdOf(body: {
  events: readonly { event: { eventId: bigint } }[];
  last_event_id: bigint | null;
}): bigint | null {
  if (body.last_event_id !== null) return body.last_event_id;
  const tail = body.events[body.events.length - 1];
  return tail === undefined ? null : tail.event.eventId;
}

/**
 * Decode a parsed JSON value. A malformed body becomes an `error` response (the driver
 * retries those), so an adapter can hand the result straight to the driver.
 */
export function decodeWorkerKvQueryResponse(value: unknown): WorkerKvQueryResponse {
  const r = v.safeParse(WorkerKvQueryResponseSchema, value);
  if (r.success) return r.output;
  return { kind: "error", message: `malformed worker query response: ${describeIssues(r.issues)}` };
}

/** Decode response text; u64 values above 2^53 keep every bit. */
export function parseWorkerKvQueryResponse(text: string): WorkerKvQueryResponse {
  let value: unknown;
  try {
    value = parseJsonBigintSafe(text);
  } catch (e) {
    return { kind: "error", message: `worker query response is not JSON: ${String(e)}` };
  }
  return decodeWorkerKvQueryResponse(value);
}

/** The JSON-ready wire object (bigints kept; write it with core/json.ts stringifyBigint). */
export function workerKvQueryResponseToWire(r: WorkerKvQueryResponse): unknown {
  switch (r.kind) {
    case "events":
    case "tree_dump":
      return {
        [r.kind]: { events: r.events.map(routerEventToWire), last_event_id: r.lastEventId },
      };
    case "too_new":
      return {
        too_new: {
          requested_start: r.requestedStart,
          requested_end: r.requestedEnd,
          newest_available: r.newestAvailable,
        },
      };
    case "invalid_range":
      return { invalid_range: { start_id: r.startId, end_id: r.endId } };
    case "error":
      return { error: r.message };
  }
}
