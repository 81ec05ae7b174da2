/**
 * Recovery state of one worker: its epoch and one RankState per dp rank (a port of Dynamo's
 * `WorkerState`, plus engine-restart detection). It turns each live event into a
 * LiveEventAction for the driver; it never calls the index or the worker itself.
 */
import type { RouterEvent } from "../../core/events.ts";
import type { DpRank, EventId } from "../../core/ids.ts";
import {
  BEFORE_FIRST_EVENT_ID,
  INITIAL_CURSOR,
  RESTART_ID_MARGIN,
  advanceTo,
  applyBarrier,
  isEngineRestart,
  live,
  observe,
  type CursorState,
} from "./cursor.ts";
import {
  RECOVERY_PENDING_LIVE_EVENT_LIMIT,
  RankState,
  type PendingDrainAction,
} from "./rank-state.ts";
import { emptyRecoveryStats, type RecoveryStats } from "./types.ts";

export interface FollowUp {
  readonly epoch: number;
  readonly startEventId: EventId;
}

export type LiveEventAction =
  /** Nothing to do: a late duplicate, or buffered behind an in-flight recovery. */
  | { readonly kind: "ignore"; readonly reason: "stale" | "buffered" }
  | { readonly kind: "apply"; readonly event: RouterEvent }
  /**
   * A Cleared barrier was applied to the state: apply the Cleared to the index (it empties
   * its rank). When ids past the clear were seen and dropped, `followUp` asks to fetch them again.
   */
  | {
      readonly kind: "apply_clear";
      readonly event: RouterEvent;
      readonly followUp: FollowUp | undefined;
      /** The clear's id was far below the cursor: it came from a restarted engine. */
      readonly afterRestart: boolean;
    }
  | { readonly kind: "spawn_full_restore"; readonly epoch: number }
  | { readonly kind: "spawn_incremental"; readonly epoch: number; readonly startEventId: EventId }
  /** The engine restarted: wipe the rank in the index now, then restore it in full. */
  | { readonly kind: "spawn_restart"; readonly epoch: number };

export interface DiscoveredRankAction {
  readonly resetRank: boolean;
  /** Set when a full restore must be spawned for the rank, with this epoch. */
  readonly restoreEpoch: number | undefined;
}

export interface WorkerStateOptions {
  readonly restartIdMargin?: bigint;
  readonly pendingLimit?: number;
  /** Counters shared with the driver (this class bumps `buffered` and `dropped`). */
  readonly stats?: RecoveryStats;
}

const IGNORE_STALE: LiveEventAction = Object.freeze({ kind: "ignore", reason: "stale" });
const IGNORE_BUFFERED: LiveEventAction = Object.freeze({ kind: "ignore", reason: "buffered" });

export class WorkerState {
  /** Bumped by every reset, barrier and restart; new rank incarnations take its value. */
  epoch = 0;
  readonly ranks = new Map<DpRank, RankState>();
  private readonly restartIdMargin: bigint;
  private readonly pendingLimit: number;
  private readonly stats: RecoveryStats;

  constructor(opts: WorkerStateOptions = {}) {
    this.restartIdMargin = opts.restartIdMargin ?? RESTART_ID_MARGIN;
    this.pendingLimit = opts.pendingLimit ?? RECOVERY_PENDING_LIVE_EVENT_LIMIT;
    this.stats = opts.stats ?? emptyRecoveryStats();
  }

  rank(dpRank: DpRank): RankState {
    let r = this.ranks.get(dpRank);
    if (r === undefined) {
      r = new RankState(this.epoch, this.pendingLimit);
      this.ranks.set(dpRank, r);
    }
    return r;
  }

  /** A recovery spawned for `rank` in `epoch` may still write its result. */
  isCurrent(dpRank: DpRank, rank: RankState, epoch: number): boolean {
    return this.ranks.get(dpRank) === rank && rank.epoch === epoch;
  }

  /**
   * The rank was (re)discovered. With `reset` (a new engine instance behind it) its state
   * starts over in a new epoch. A rank that has nothing applied and no recovery gets a
   * full restore.
   */
  handleDiscoveredRank(dpRank: DpRank, reset: boolean): DiscoveredRankAction {
    if (reset) this.replaceRank(dpRank);
    const r = this.rank(dpRank);
    let restoreEpoch: number | undefined;
    if (r.cursor.kind === "initial" && !r.recoveryInflight) {
      r.recoveryInflight = true;
      restoreEpoch = r.epoch;
    }
    return { resetRank: reset, restoreEpoch };
  }

  removeRank(dpRank: DpRank): boolean {
    const r = this.ranks.get(dpRank);
    if (r === undefined) return false;
    this.stats.dropped += r.pendingLiveEvents.length;
    this.ranks.delete(dpRank);
    return true;
  }

  isEmpty(): boolean {
    return this.ranks.size === 0;
  }

  rankCursor(dpRank: DpRank): CursorState | undefined {
    return this.ranks.get(dpRank)?.cursor;
  }

  observeLiveEvent(event: RouterEvent): LiveEventAction {
    const dpRank = event.event.dpRank;
    const id = event.event.eventId;
    const rank = this.rank(dpRank);

    // A Cleared of the whole rank is a barrier (the rank is empty as of its id). A Cleared of one
    // tier (a medium named) leaves the GPU as it was: an event like any other, in id order.
    if (event.event.data.type === "cleared" && event.event.medium === undefined) {
      const last = rank.lastAppliedId();
      const afterRestart = last !== undefined && isEngineRestart(id, last, this.restartIdMargin);
      if (last !== undefined && id <= last && !afterRestart) return IGNORE_STALE;
      // A restarted engine's Cleared says "empty as of id": the barrier alone is exact.
      return {
        kind: "apply_clear",
        event,
        followUp: this.applyClearBarrier(dpRank, id),
        afterRestart,
      };
    }

    const obs = observe(rank.cursor, id);
    if (obs.kind === "stale") {
      if (!isEngineRestart(id, obs.lastApplied, this.restartIdMargin)) return IGNORE_STALE;
      const fresh = this.replaceRank(dpRank);
      fresh.recoveryInflight = true;
      this.buffer(fresh, event);
      return { kind: "spawn_restart", epoch: fresh.epoch };
    }
    if (rank.recoveryInflight) {
      // The recovery's answer plus this buffer will cover it, in id order.
      this.buffer(rank, event);
      return IGNORE_BUFFERED;
    }
    switch (obs.kind) {
      case "initial":
        this.buffer(rank, event);
        rank.recoveryInflight = true;
        return { kind: "spawn_full_restore", epoch: rank.epoch };
      case "gap":
        this.buffer(rank, event);
        rank.recoveryInflight = true;
        return { kind: "spawn_incremental", epoch: rank.epoch, startEventId: obs.expected };
      case "contiguous":
        rank.cursor = advanceTo(rank.cursor, id);
        rank.clearMaxSeenIfCaughtUp(id);
        return { kind: "apply", event };
    }
  }

  /**
   * A live Cleared from `dpRank` at `clearId` (seed `apply_worker_clear_barrier`, for the
   * clearing rank only: its ids say nothing of the worker's other ranks): a new epoch, so its
   * in-flight recovery is orphaned; its buffer goes; an id seen past the clear is remembered.
   * The rank is then live at `clearId`. If it had seen ids past the clear, the returned
   * follow-up recovery fetches them (they were dropped with the buffer).
   */
  applyClearBarrier(dpRank: DpRank, clearId: EventId): FollowUp | undefined {
    this.epoch += 1;
    const r = this.rank(dpRank);
    const seen = r.maxSeenLiveId;
    r.maxSeenLiveId = seen !== undefined && seen > clearId ? seen : undefined;
    r.recoveryInflight = false;
    r.epoch = this.epoch;
    this.stats.dropped += r.clearPendingLiveEvents();
    r.cursor = applyBarrier(r.cursor, clearId);
    if (r.maxSeenLiveId === undefined) return undefined;
    r.recoveryInflight = true;
    return { epoch: r.epoch, startEventId: clearId + 1n };
  }

  /**
   * A Cleared met while applying a replay for `dpRank` (which is mid-recovery). That rank
   * keeps its epoch and buffer (everything is applied in id order, so its buffered events
   * after the clear are still good); it is live at `clearId`.
   */
  applyReplayedClear(dpRank: DpRank, clearId: EventId): void {
    const rank = this.rank(dpRank);
    rank.cursor = applyBarrier(rank.cursor, clearId);
  }

  /** A recovery answered; its cursor is set and the buffer will be drained. */
  beginSuccessfulRecoveryDrain(dpRank: DpRank, cursor: CursorState): void {
    const r = this.ranks.get(dpRank);
    if (r === undefined) throw new Error(`rank ${dpRank} vanished while finishing a recovery`);
    r.cursor = cursor;
    r.recoveryInflight = true;
  }

  nextPendingDrainAction(dpRank: DpRank): PendingDrainAction {
    const r = this.ranks.get(dpRank);
    if (r === undefined) return { kind: "complete" };
    return r.nextPendingDrainAction();
  }

  /** The recovery gave up: the cursor stays where it was; the next live event decides again. */
  finishFailedRecovery(dpRank: DpRank): void {
    const r = this.ranks.get(dpRank);
    if (r === undefined) return;
    r.recoveryInflight = false;
    this.stats.dropped += r.clearPendingLiveEvents();
  }

  /**
   * The recovery gave up (the worker no longer holds the range, or did not answer): the
   * events it was fetching may be lost for good, Removed ones among them, so what the index
   * holds for the rank may claim blocks the engine dropped. The caller wipes the rank; here
   * the cursor goes back to "initial", so the next live event asks for a full restore (the
   * whole truth, when the worker can give it) instead of the same range again. Until then
   * the rank is cold, which is honest; stale hits are not.
   */
  abandonRecovery(dpRank: DpRank): void {
    const r = this.ranks.get(dpRank);
    if (r === undefined) return;
    r.cursor = INITIAL_CURSOR;
    r.maxSeenLiveId = undefined;
    this.finishFailedRecovery(dpRank);
  }

  /** Mark a restored state: live at `lastEventId`, or before the first id when it is null. */
  static restoredCursor(lastEventId: EventId | null): CursorState {
    return live(lastEventId ?? BEFORE_FIRST_EVENT_ID);
  }

  private replaceRank(dpRank: DpRank): RankState {
    const old = this.ranks.get(dpRank);
    if (old !== undefined) this.stats.dropped += old.pendingLiveEvents.length;
    this.epoch += 1;
    const fresh = new RankState(this.epoch, this.pendingLimit);
    this.ranks.set(dpRank, fresh);
    return fresh;
  }

  private buffer(rank: RankState, event: RouterEvent): void {
    this.stats.buffered += 1;
    this.stats.dropped += rank.observeAndBufferLiveEvent(event);
  }
}
