/**
 * Recovery state of one (worker, dp_rank) stream: its cursor, whether a recovery is in
 * flight, and the live events buffered meanwhile (a port of Dynamo's `RankState`).
 * It never talks to the index or the worker; the driver does that from its answers.
 */
import type { RouterEvent } from "../../core/events.ts";
import type { EventId } from "../../core/ids.ts";
import {
  BEFORE_FIRST_EVENT_ID,
  INITIAL_CURSOR,
  advanceTo,
  lastAppliedId,
  type CursorState,
} from "./cursor.ts";

/** Live events kept while a recovery is in flight; beyond this the oldest go (a later gap refetches them). */
export const RECOVERY_PENDING_LIVE_EVENT_LIMIT = 1024;
/**
 * The drain skips a stale prefix of the buffer in one step, but always keeps the newest
 * this-many events for the one-by-one checks (seed: `RECOVERY_PENDING_FAST_PRUNE_MARGIN`).
 */
export const RECOVERY_PENDING_FAST_PRUNE_MARGIN = 10;

export type PendingDrainAction =
  /** Apply this buffered event to the index; the cursor already points at it. */
  | { readonly kind: "apply"; readonly event: RouterEvent }
  /** The buffer has a hole (or ids were seen but not kept): fetch again from this id. */
  | { readonly kind: "recover_from"; readonly startEventId: EventId }
  /** Caught up: the recovery is over and live events apply directly again. */
  | { readonly kind: "complete" };

const COMPLETE: PendingDrainAction = Object.freeze({ kind: "complete" });

export class RankState {
  cursor: CursorState = INITIAL_CURSOR;
  /** Highest live id seen while recovering; undefined once the cursor has caught up. */
  maxSeenLiveId: EventId | undefined = undefined;
  recoveryInflight = false;
  /** Live events received while a recovery was in flight, in arrival order (not sorted). */
  pendingLiveEvents: RouterEvent[] = [];
  /**
   * Stamp of the rank's current incarnation. A recovery remembers the epoch it was spawned
   * in; a reset, a barrier or an engine restart moves the epoch and so orphans it.
   */
  epoch: number;

  constructor(
    epoch = 0,
    readonly pendingLimit: number = RECOVERY_PENDING_LIVE_EVENT_LIMIT,
  ) {
    this.epoch = epoch;
  }

  lastAppliedId(): EventId | undefined {
    return lastAppliedId(this.cursor);
  }

  observeLiveId(eventId: EventId): void {
    const seen = this.maxSeenLiveId ?? 0n;
    this.maxSeenLiveId = eventId > seen ? eventId : seen;
  }

  clearMaxSeenIfCaughtUp(lastApplied: EventId): void {
    if (this.maxSeenLiveId !== undefined && this.maxSeenLiveId <= lastApplied)
      this.maxSeenLiveId = undefined;
  }

  /** Record the id and keep the event; returns how many old events the limit pushed out. */
  observeAndBufferLiveEvent(event: RouterEvent): number {
    this.observeLiveId(event.event.eventId);
    return this.pushPendingLiveEvent(event);
  }

  pushPendingLiveEvent(event: RouterEvent): number {
    this.pendingLiveEvents.push(event);
    const over = this.pendingLiveEvents.length - this.pendingLimit;
    if (over <= 0) return 0;
    this.pendingLiveEvents.splice(0, over);
    return over;
  }

  /** Drop every buffered event; returns how many were dropped. */
  clearPendingLiveEvents(): number {
    const n = this.pendingLiveEvents.length;
    this.pendingLiveEvents = [];
    return n;
  }

  /**
   * If the event `MARGIN` places from the end is already applied, everything before it is
   * dropped without a look (seed semantics: the boundary alone decides; the last `MARGIN`
   * events are then checked one by one by the drain).
   */
  fastPruneStalePendingPrefix(lastApplied: EventId): void {
    const q = this.pendingLiveEvents;
    if (q.length <= RECOVERY_PENDING_FAST_PRUNE_MARGIN) return;
    const splitAt = q.length - RECOVERY_PENDING_FAST_PRUNE_MARGIN;
    if (q[splitAt]!.event.eventId <= lastApplied) q.splice(0, splitAt);
  }

  /**
   * One step of draining the buffer after a successful recovery: skip stale events, apply
   * the next contiguous one (advancing the cursor), or ask for another recovery from the
   * first missing id. `complete` also ends the recovery (`recoveryInflight = false`).
   */
  nextPendingDrainAction(): PendingDrainAction {
    let last = this.lastAppliedId() ?? BEFORE_FIRST_EVENT_ID;
    this.fastPruneStalePendingPrefix(last);
    const q = this.pendingLiveEvents;
    for (;;) {
      const front = q[0];
      if (front === undefined) {
        this.clearMaxSeenIfCaughtUp(last);
        if (this.maxSeenLiveId !== undefined && this.maxSeenLiveId > last) {
          return { kind: "recover_from", startEventId: last + 1n };
        }
        this.recoveryInflight = false;
        return COMPLETE;
      }
      const id = front.event.eventId;
      if (id <= last) {
        q.shift();
        continue;
      }
      const expected = last + 1n;
      if (id !== expected) return { kind: "recover_from", startEventId: expected };
      q.shift();
      this.cursor = advanceTo(this.cursor, id);
      last = id;
      this.clearMaxSeenIfCaughtUp(last);
      return { kind: "apply", event: front };
    }
  }
}
