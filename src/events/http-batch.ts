/**
 * The HTTP event path: a JSON batch of router events (spec §1.2/§1.3, the body of
 * POST /v1/kv/events) -> validated RouterEvents -> the recovery driver, which orders them
 * per (worker, dp_rank) and applies them to the index. Events of workers this router has
 * not registered are counted and dropped: their ranks have no recovery state, and
 * registering a worker needs its URL, which an event does not carry.
 */
import * as v from "valibot";
import { RouterError } from "../core/errors.ts";
import { describeIssues, RouterEventBatchSchema, type RouterEvent } from "../core/events.ts";
import type { DpRank, WorkerId } from "../core/ids.ts";

export interface EventIngestDeps {
  /** Is this (worker, dp_rank) registered? */
  readonly isKnown: (workerId: WorkerId, dpRank: DpRank) => boolean;
  /** The recovery driver's live-event entry point. */
  readonly onLiveEvent: (event: RouterEvent) => void;
  readonly onDropped?: (reason: "unknown_worker", count: number) => void;
}

export interface IngestResult {
  readonly accepted: number;
  readonly dropped: number;
}

/** Validate a parsed JSON batch; throws RouterError("invalid_request") naming the bad fields. */
export function parseEventBatch(json: unknown): RouterEvent[] {
  const result = v.safeParse(RouterEventBatchSchema, json);
  if (!result.success) {
    throw new RouterError("invalid_request", `invalid KV event batch: ${describeIssues(result.issues.slice(0, 5))}`);
  }
  return result.output;
}

export function ingestEvents(events: readonly RouterEvent[], d: EventIngestDeps): IngestResult {
  let accepted = 0;
  let dropped = 0;
  for (const ev of events) {
    if (!d.isKnown(ev.workerId, ev.event.dpRank)) {
      dropped++;
      continue;
    }
    d.onLiveEvent(ev);
    accepted++;
  }
  if (dropped > 0) d.onDropped?.("unknown_worker", dropped);
  return { accepted, dropped };
}
