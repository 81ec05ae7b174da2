/**
 * Recovery state of one worker: its epoch and one RankState per dp rank (a port of Dynamo's
 * `WorkerState`, seed 002, plus engine-restart detection). It turns each live event into a
 * LiveEventAction for the driver; it never calls the index or the worker itself.
 */
import type { RouterEvent } from "../../core/events.ts";
import type { DpRank, EventId } from "../../core/ids.ts";
import {
  BEFORE_FIRST_EVENT_ID, INITIAL_CURSOR, RESTART_ID_MARGIN, advanceTo, applyBarrier, invalidateByBarrier, isEngineRestart, live, observe,
  type CursorState,
} from "./cursor.ts";
import { RECOVERY_PENDING_LIVE_EVENT_LIMIT, RankState, type PendingDrainAction } from "./rank-state.ts";
import { emptyRecoveryStats, type RecoveryStats } from "./types.ts";

/**
 * What a Cleared wipes. "rank": the emitting (worker, dp_rank) only (ids are dense per rank
 * publisher, spec §5.2, and the newer Cleared doc says so). "worker": every rank of the
 * worker, as the seed and the reference indexer do. See README.md.
 */
export type ClearScope = "rank" | "worker";

export interface FollowUp {
  readonly epoch: number;
  readonly startEventId: EventId;
}

export type LiveEventAction =
  /** Nothing to do: a late duplicate, or buffered behind an in-flight recovery. */
  | { readonly kind: "ignore"; readonly reason: "stale" | "buffered" }
  | { readonly kind: "apply"; readonly event: RouterEvent }
  /**
   * A Cleared barrier was applied to the state: wipe `wipeRanks` in the index. When ids past
   * the clear were seen and dropped, `followUp` asks to fetch them again.
   */
  | {
      readonly kind: "apply_clear";
      readonly event: RouterEvent;
      readonly wipeRanks: readonly DpRank[];
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

export interface ClearOutcome {
  readonly wipeRanks: readonly DpRank[];
  readonly followUp: FollowUp | undefined;
}

export interface WorkerStateOptions {
  readonly clearScope?: ClearScope;
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
  readonly clearScope: ClearScope;
  private readonly restartIdMargin: bigint;
  private readonly pendingLimit: number;
  private readonly stats: RecoveryStats;

  constructor(opts: WorkerStateOptions = {}) {
    this.clearScope = opts.clearScope ?? "rank";
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

    if (event.event.data.type === "cleared") {
      const last = rank.lastAppliedId();
      const afterRestart = last !== undefined && isEngineRestart(id, last, this.restartIdMargin);
      if (last !== undefined && id <= last && !afterRestart) return IGNORE_STALE;
      // A restarted engine's Cleared says "empty as of id": the barrier alone is exact.
      const { wipeRanks, followUp } = this.applyClearBarrier(dpRank, id);
      return { kind: "apply_clear", event, wipeRanks, followUp, afterRestart };
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
      case "fresh_after_barrier":
        rank.cursor = advanceTo(rank.cursor, id);
        rank.clearMaxSeenIfCaughtUp(id);
        return { kind: "apply", event };
    }
  }

  /**
   * A live Cleared from `clearDpRank` at `clearId` (seed `apply_worker_clear_barrier`): new
   * epoch for the ranks in scope, so their in-flight recoveries are orphaned; their buffers
   * go; ids seen past the clear are remembered. The clearing rank is then live at `clearId`.
   * If it had seen ids past the clear, a follow-up recovery fetches them (they were dropped).
   */
  applyClearBarrier(clearDpRank: DpRank, clearId: EventId): ClearOutcome {
    this.epoch += 1;
    const inScope = this.clearScope === "worker" ? [...this.ranks.keys()] : [clearDpRank];
    if (!inScope.includes(clearDpRank)) inScope.push(clearDpRank);
    for (const dp of inScope) {
      const r = this.rank(dp);
      const seen = r.maxSeenLiveId;
      r.maxSeenLiveId = seen !== undefined && seen > clearId ? seen : undefined;
      r.cursor = invalidateByBarrier(r.cursor);
      r.recoveryInflight = false;
      r.epoch = this.epoch;
      this.stats.dropped += r.clearPendingLiveEvents();
    }
    const clearing = this.rank(clearDpRank);
    clearing.cursor = applyBarrier(clearing.cursor, clearId);
    let followUp: FollowUp | undefined;
    if (clearing.maxSeenLiveId !== undefined) {
      clearing.recoveryInflight = true;
      followUp = { epoch: clearing.epoch, startEventId: clearId + 1n };
    }
    return { wipeRanks: inScope, followUp };
  }

  /**
   * A Cleared met while applying a replay for `dpRank` (which is mid-recovery). That rank
   * keeps its epoch and buffer (everything is applied in id order, so its buffered events
   * after the clear are still good); it is live at `clearId`. In worker scope the other
   * ranks get the live barrier treatment. Returns the ranks to wipe in the index.
   */
  applyReplayedClear(dpRank: DpRank, clearId: EventId): readonly DpRank[] {
    const rank = this.rank(dpRank);
    if (this.clearScope === "worker") {
      this.epoch += 1;
      for (const [dp, r] of this.ranks) {
        if (dp === dpRank) continue;
        const seen = r.maxSeenLiveId;
        r.maxSeenLiveId = seen !== undefined && seen > clearId ? seen : undefined;
        r.cursor = invalidateByBarrier(r.cursor);
        r.recoveryInflight = false;
        r.epoch = this.epoch;
        this.stats.dropped += r.clearPendingLiveEvents();
      }
    }
    rank.cursor = applyBarrier(rank.cursor, clearId);
    return this.clearScope === "worker" ? [...this.ranks.keys()] : [dpRank];
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
