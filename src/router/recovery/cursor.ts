/**
 * The event-id cursor of one (worker, dp_rank) stream (Dynamo's recovery cursor, Dynamo
 * `dynamo_kv_router::recovery::{CursorState, CursorObservation}`). Pure values and pure
 * functions: nothing here mutates, so a state machine can compute a new cursor and decide
 * whether to keep it.
 */
import type { EventId } from "../../core/ids.ts";

export type CursorState =
  /** Nothing applied yet: the first event (or a restore) decides where the stream is. */
  | { readonly kind: "initial" }
  /** Every event up to and including `lastApplied` is in the index. */
  | { readonly kind: "live"; readonly lastApplied: EventId };

export type CursorObservation =
  | { readonly kind: "initial"; readonly got: EventId }
  | { readonly kind: "contiguous"; readonly got: EventId }
  | { readonly kind: "gap"; readonly expected: EventId; readonly got: EventId }
  | { readonly kind: "stale"; readonly got: EventId; readonly lastApplied: EventId };

export const INITIAL_CURSOR: CursorState = Object.freeze({ kind: "initial" });

/**
 * The "applied" id of a restored engine that has not emitted any event yet: with it, id 0
 * is contiguous. Ids are u64 on the wire; -1 exists only inside the cursor.
 */
export const BEFORE_FIRST_EVENT_ID: EventId = -1n;

/**
 * How far below the last applied id an event may be and still be read as a late duplicate.
 * Further below (or id 0 when something after 0 was applied) means the engine restarted
 * and its ids began again at 0. Transports reorder/duplicate over a few events, so a small
 * margin catches restarts early; a false positive only costs one extra full restore.
 */
export const RESTART_ID_MARGIN = 10n;

export function live(lastApplied: EventId): CursorState {
  return { kind: "live", lastApplied };
}

export function lastAppliedId(c: CursorState): EventId | undefined {
  return c.kind === "initial" ? undefined : c.lastApplied;
}

/** Classify an incoming event id against the cursor (Dynamo's recovery cursor `observe`). */
export function observe(c: CursorState, got: EventId): CursorObservation {
  switch (c.kind) {
    case "initial":
      return { kind: "initial", got };
    case "live": {
      const last = c.lastApplied;
      if (got <= last) return { kind: "stale", got, lastApplied: last };
      if (got === last + 1n) return { kind: "contiguous", got };
      return { kind: "gap", expected: last + 1n, got };
    }
  }
}

/** The cursor after applying event `id`. */
export function advanceTo(_c: CursorState, id: EventId): CursorState {
  return live(id);
}

/** The cursor of the rank that emitted a Cleared: its state is "empty as of `clearId`". */
export function applyBarrier(_c: CursorState, clearId: EventId): CursorState {
  return live(clearId);
}

/**
 * Whether an id at or below the last applied one means the engine restarted (ids began
 * again at 0, its cache is empty) rather than being a late duplicate. The rule:
 * `got < last` and (`got == 0` or `last - got > margin`). Ids within `margin` of the
 * last applied one are duplicates; see README.md for the limits of telling them apart.
 */
export function isEngineRestart(
  got: EventId,
  lastApplied: EventId,
  margin: bigint = RESTART_ID_MARGIN,
): boolean {
  if (got >= lastApplied) return false;
  return got === 0n || lastApplied - got > margin;
}
