/**
 * The HTTP event path: a JSON batch of router events (`RouterEvent` of src/core/events.ts:
 * worker id + one stored/removed/cleared event with its id and dp rank; the body of
 * POST /v1/kv/events) -> validated RouterEvents (here) -> createRouter's `ingest` -> the
 * recovery driver, which orders them per (worker, dp_rank) and applies them to the index.
 * `ingest` counts and drops the events of workers this router has not registered: their
 * ranks have no recovery state, and registering a worker needs its URL, which an event does
 * not carry.
 *
 * A batch is the engine's own stream only when the request says so with the header
 * `X-Switchyard-Event-Source: engine` (the simulated engine sends it). Anything else posted
 * here is an admin event: applied as it says, outside the engine's id order, so a hand-made
 * event carrying the engine's next id cannot make the engine's real event look like a
 * duplicate (dropped as stale, its blocks would never reach the index).
 */
import * as v from "valibot";
import { RouterError } from "../../core/errors.ts";
import {
  describeIssues,
  fastRouterEventBatch,
  RouterEventBatchSchema,
  type RouterEvent,
} from "../../core/events.ts";
import type { EventSource } from "../../router/index.ts";

export type { EventSource } from "../../router/index.ts";

/** The request header that marks a batch as the engine's own stream. */
export const EVENT_SOURCE_HEADER = "x-switchyard-event-source";

/** The source a batch's header names: "engine" only when it says exactly that. */
export function eventSourceOf(header: string | null | undefined): EventSource {
  return header?.trim().toLowerCase() === "engine" ? "engine" : "admin";
}

/** Validate a parsed JSON batch; throws RouterError("invalid_request") naming the bad fields. */
export function parseEventBatch(json: unknown): RouterEvent[] {
  // The usual batch in one hand-written pass; the schema for anything else (it names the problem).
  const fast = fastRouterEventBatch(json);
  if (fast !== undefined) return fast;
  const result = v.safeParse(RouterEventBatchSchema, json);
  if (!result.success) {
    throw new RouterError(
      "invalid_request",
      `invalid KV event batch: ${describeIssues(result.issues.slice(0, 5))}`,
    );
  }
  return result.output;
}
