/**
 * The HTTP event path: a JSON batch of router events (`RouterEvent` of src/core/events.ts:
 * worker id + one stored/removed/cleared event with its id and dp rank; the body of
 * POST /v1/kv/events) -> validated RouterEvents -> the recovery driver, which orders them
 * per (worker, dp_rank) and applies them to the index. Events of workers this router has
 * not registered are counted and dropped: their ranks have no recovery state, and
 * registering a worker needs its URL, which an event does not carry.
 *
 * A batch is the engine's own stream only when the request says so with the header
 * `X-Switchyard-Event-Source: engine` (the simulated engine sends it). Anything else posted
 * here is an admin event: applied as it says, outside the engine's id order, so a hand-made
 * event carrying the engine's next id cannot make the engine's real event look like a
 * duplicate (25 blocks were once lost for good that way: the real event was dropped as stale).
 */
import * as v from "valibot";
import { RouterError } from "../../core/errors.ts";
import { describeIssues, fastRouterEventBatch, RouterEventBatchSchema, type RouterEvent } from "../../core/events.ts";
import type { DpRank, WorkerId } from "../../core/ids.ts";
import type { EventSource } from "../../router/index.ts";

export type { EventSource } from "../../router/index.ts";

/** The request header that marks a batch as the engine's own stream. */
export const EVENT_SOURCE_HEADER = "x-switchyard-event-source";

/** The source a batch's header names: "engine" only when it says exactly that. */
export function eventSourceOf(header: string | null | undefined): EventSource {
  return header?.trim().toLowerCase() === "engine" ? "engine" : "admin";
}

export interface EventIngestDeps {
  /** Is this (worker, dp_rank) registered? */
  readonly isKnown: (workerId: WorkerId, dpRank: DpRank) => boolean;
  /** The recovery driver's entry point (`RecoveryDriver.ingest`). */
  readonly onLiveEvent: (event: RouterEvent, source: EventSource) => void;
  readonly onDropped?: (reason: "unknown_worker", count: number) => void;
}

export interface IngestResult {
  readonly accepted: number;
  readonly dropped: number;
}

/** Validate a parsed JSON batch; throws RouterError("invalid_request") naming the bad fields. */
export function parseEventBatch(json: unknown): RouterEvent[] {
  // The usual batch in one hand-written pass; the schema for anything else (it names the problem).
  const fast = fastRouterEventBatch(json);
  if (fast !== undefined) return fast;
  const result = v.safeParse(RouterEventBatchSchema, json);
  if (!result.success) {
    throw new RouterError("invalid_request", `invalid KV event batch: ${describeIssues(result.issues.slice(0, 5))}`);
  }
  return result.output;
}

export function ingestEvents(events: readonly RouterEvent[], d: EventIngestDeps, source: EventSource = "admin"): IngestResult {
  let accepted = 0;
  let dropped = 0;
  for (const ev of events) {
    if (!d.isKnown(ev.workerId, ev.event.dpRank)) {
      dropped++;
      continue;
    }
    d.onLiveEvent(ev, source);
    accepted++;
  }
  if (dropped > 0) d.onDropped?.("unknown_worker", dropped);
  return { accepted, dropped };
}
