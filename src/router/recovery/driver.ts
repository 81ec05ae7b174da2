/**
 * The recovery driver: owns one WorkerState per worker, feeds live events through them,
 * applies what they decide to an index sink, and runs the recoveries they ask for (query
 * the worker, apply the replay or dump, then drain the buffered live events in id order).
 * PURE: the query, the sleep used for backoff and the sink are injected; no timers, no I/O.
 */
import type { RouterEvent } from "../../core/events.ts";
import type { DpRank, EventId, WorkerId } from "../../core/ids.ts";
import { advanceTo, live, type CursorState } from "./cursor.ts";
import type { RankState } from "./rank-state.ts";
import { Semaphore } from "./semaphore.ts";
import {
  emptyRecoveryStats,
  type EventSource,
  type IndexSink,
  type RecoveryStats,
  type WorkerKvQueryResponse,
  type WorkerQuery,
} from "./types.ts";
import { WorkerState, type LiveEventAction } from "./worker-state.ts";

/** Query attempts after the first before a recovery gives up (Dynamo's WorkerQueryClient). */
export const RECOVERY_MAX_RETRIES = 8;
/** Backoff before retry n (from 0) is this times 2^n ms (Dynamo's WorkerQueryClient). */
export const RECOVERY_INITIAL_BACKOFF_MS = 200;
/** Queries in flight at once across all workers; a mass reconnect must not stampede engines. */
export const RECOVERY_CONCURRENCY_LIMIT = 16;

export interface RecoveryDriverOptions {
  readonly sink: IndexSink;
  readonly query: WorkerQuery;
  /** Wait `ms` milliseconds (backoff between query attempts). Tests pass an instant one. */
  readonly sleep: (ms: number) => Promise<void>;
  readonly maxRetries?: number;
  readonly initialBackoffMs?: number;
  readonly maxConcurrentQueries?: number;
  /** Live events buffered per rank during a recovery (default 1024). */
  readonly pendingLimit?: number;
  /** See cursor.ts RESTART_ID_MARGIN. */
  readonly restartIdMargin?: bigint;
  /** Told about failed queries and dropped recoveries (for logs). */
  readonly onWarning?: (message: string) => void;
  /** Told when a rank's events show its engine restarted (the cache check sends a canary). */
  readonly onRestart?: (workerId: WorkerId, dpRank: DpRank) => void;
}

export class RecoveryDriver {
  private readonly workers = new Map<WorkerId, WorkerState>();
  private readonly counters: RecoveryStats = emptyRecoveryStats();
  private readonly permits: Semaphore;
  private readonly sink: IndexSink;
  private readonly query: WorkerQuery;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly maxRetries: number;
  private readonly initialBackoffMs: number;
  private readonly warn: (message: string) => void;
  private inflight = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly opts: RecoveryDriverOptions) {
    this.sink = opts.sink;
    this.query = opts.query;
    this.sleep = opts.sleep;
    this.maxRetries = opts.maxRetries ?? RECOVERY_MAX_RETRIES;
    this.initialBackoffMs = opts.initialBackoffMs ?? RECOVERY_INITIAL_BACKOFF_MS;
    this.permits = new Semaphore(opts.maxConcurrentQueries ?? RECOVERY_CONCURRENCY_LIMIT);
    this.warn = opts.onWarning ?? (() => {});
  }

  /** Feed one event from `source` (see EventSource). */
  ingest(event: RouterEvent, source: EventSource): void {
    if (source === "admin") this.onAdminEvent(event);
    else this.onLiveEvent(event);
  }

  /**
   * An event posted by someone other than the engine: applied to the index as it says (a
   * Cleared wipes its rank), outside the engine's id order. The cursor does not move, so
   * the engine's own event with the same id still applies; a later restore may undo it.
   */
  onAdminEvent(event: RouterEvent): void {
    this.counters.admin += 1;
    this.sink.applyEvent(event);
  }

  /** Feed one live event of the engine's own stream. Synchronous; may start recoveries that finish later. */
  onLiveEvent(event: RouterEvent): void {
    const ws = this.worker(event.workerId);
    this.perform(event.workerId, event.event.dpRank, ws, ws.observeLiveEvent(event));
  }

  /** A (worker, dp_rank) was discovered. First sight starts a full restore; `reset` starts it over. */
  addRank(workerId: WorkerId, dpRank: DpRank, reset = false): void {
    const ws = this.worker(workerId);
    const action = ws.handleDiscoveredRank(dpRank, reset);
    if (action.resetRank) this.sink.removeWorkerDpRank(workerId, dpRank);
    if (action.restoreEpoch !== undefined)
      this.spawn(workerId, dpRank, ws, action.restoreEpoch, undefined);
  }

  /** A (worker, dp_rank) went away: its blocks go; the worker goes with its last rank. */
  removeRank(workerId: WorkerId, dpRank: DpRank): void {
    const ws = this.workers.get(workerId);
    ws?.removeRank(dpRank);
    this.sink.removeWorkerDpRank(workerId, dpRank);
    if (ws !== undefined && ws.isEmpty()) {
      this.workers.delete(workerId);
      this.sink.removeWorker(workerId);
    }
  }

  removeWorker(workerId: WorkerId): void {
    const ws = this.workers.get(workerId);
    if (ws !== undefined) for (const r of [...ws.ranks.keys()]) ws.removeRank(r);
    this.workers.delete(workerId);
    this.sink.removeWorker(workerId);
  }

  /** Resolves once no recovery is in flight (for tests and shutdown). */
  idle(): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Recoveries running now. */
  get recovering(): number {
    return this.inflight;
  }

  stats(): RecoveryStats {
    return { ...this.counters };
  }

  cursor(workerId: WorkerId, dpRank: DpRank): CursorState | undefined {
    return this.workers.get(workerId)?.rankCursor(dpRank);
  }

  isRecovering(workerId: WorkerId, dpRank: DpRank): boolean {
    return this.workers.get(workerId)?.ranks.get(dpRank)?.recoveryInflight ?? false;
  }

  // ------------------------------------------------------------------ live path

  private worker(workerId: WorkerId): WorkerState {
    let ws = this.workers.get(workerId);
    if (ws === undefined) {
      ws = new WorkerState({
        restartIdMargin: this.opts.restartIdMargin,
        pendingLimit: this.opts.pendingLimit,
        stats: this.counters,
      });
      this.workers.set(workerId, ws);
    }
    return ws;
  }

  private perform(w: WorkerId, r: DpRank, ws: WorkerState, action: LiveEventAction): void {
    const c = this.counters;
    switch (action.kind) {
      case "ignore":
        if (action.reason === "stale") c.stale += 1;
        return;
      case "apply":
        this.sink.applyEvent(action.event);
        c.applied += 1;
        return;
      case "apply_clear":
        c.clears += 1;
        if (action.afterRestart) {
          c.restarts += 1;
          this.opts.onRestart?.(w, r);
        }
        this.sink.applyEvent(action.event);
        if (action.followUp !== undefined) {
          c.gaps += 1;
          this.spawn(w, r, ws, action.followUp.epoch, action.followUp.startEventId);
        }
        return;
      case "spawn_full_restore":
        this.spawn(w, r, ws, action.epoch, undefined);
        return;
      case "spawn_incremental":
        c.gaps += 1;
        this.spawn(w, r, ws, action.epoch, action.startEventId);
        return;
      case "spawn_restart":
        // The engine's cache is gone: stop routing to its old blocks before the dump lands.
        c.restarts += 1;
        this.sink.removeWorkerDpRank(w, r);
        this.spawn(w, r, ws, action.epoch, undefined);
        this.opts.onRestart?.(w, r);
        return;
    }
  }

  // ------------------------------------------------------------------ recovery tasks

  private spawn(
    w: WorkerId,
    r: DpRank,
    ws: WorkerState,
    epoch: number,
    start: EventId | undefined,
  ): void {
    const rank = ws.ranks.get(r);
    if (rank === undefined) return;
    this.counters.recoveries += 1;
    this.inflight += 1;
    this.recover(w, r, ws, rank, epoch, start)
      .catch((e: unknown) => {
        this.warn(`recovery of ${w}:${r} crashed: ${String(e)}`);
        if (this.isCurrent(w, r, ws, rank, epoch)) {
          this.counters.failed += 1;
          ws.finishFailedRecovery(r);
        }
      })
      .finally(() => {
        this.inflight -= 1;
        if (this.inflight === 0) {
          const waiters = this.idleWaiters;
          this.idleWaiters = [];
          for (const wake of waiters) wake();
        }
      });
  }

  private isCurrent(
    w: WorkerId,
    r: DpRank,
    ws: WorkerState,
    rank: RankState,
    epoch: number,
  ): boolean {
    return this.workers.get(w) === ws && ws.isCurrent(r, rank, epoch);
  }

  /** Query, apply, drain; repeat from the first missing id while the drain finds holes. */
  private async recover(
    w: WorkerId,
    r: DpRank,
    ws: WorkerState,
    rank: RankState,
    epoch: number,
    start: EventId | undefined,
  ): Promise<void> {
    let startId = start;
    let stalls = 0;
    for (;;) {
      const resp = await this.queryWithRetry(w, r, ws, rank, epoch, startId);
      if (!this.isCurrent(w, r, ws, rank, epoch)) {
        this.counters.discarded += 1;
        return;
      }
      if (resp === undefined) return this.giveUp(w, r, ws, startId !== undefined);
      this.applyResponse(w, r, ws, rank, resp);
      const next = this.drain(r, ws);
      if (next === undefined) return;
      if (startId !== undefined && next <= startId) {
        // The answer did not reach the id we asked for (a worker answering from a stale
        // state): back off like a failed query instead of asking again at once, forever.
        this.warn(`replay from ${startId} of ${w}:${r} made no progress (attempt ${stalls + 1})`);
        if (stalls >= this.maxRetries) return this.giveUp(w, r, ws, true);
        this.counters.retries += 1;
        await this.sleep(this.initialBackoffMs * 2 ** stalls);
        stalls += 1;
        if (!this.isCurrent(w, r, ws, rank, epoch)) {
          this.counters.discarded += 1;
          return;
        }
      } else {
        stalls = 0;
        this.counters.gaps += 1;
      }
      startId = next;
    }
  }

  /**
   * No answer filled the gap (the worker no longer holds the range, is ahead of or behind
   * us for good, or did not answer): wipe the rank, since a cold rank is honest and hits
   * claimed from blocks whose Removed events were lost are not. A failed replay is followed
   * at once by one full restore (the whole truth, when the worker can give it); a failed
   * full restore waits for the next live event, so a dead worker is not queried forever.
   */
  private giveUp(w: WorkerId, r: DpRank, ws: WorkerState, wasReplay: boolean): void {
    this.counters.failed += 1;
    this.warn(
      `KV events of ${w}:${r} could not be recovered; its blocks were dropped from the index until a restore or new events`,
    );
    this.sink.removeWorkerDpRank(w, r);
    ws.abandonRecovery(r);
    if (!wasReplay) return;
    const { restoreEpoch } = ws.handleDiscoveredRank(r, false);
    if (restoreEpoch !== undefined) this.spawn(w, r, ws, restoreEpoch, undefined);
  }

  /** A usable answer (events or dump), or undefined when the rank went stale or we gave up. */
  private async queryWithRetry(
    w: WorkerId,
    r: DpRank,
    ws: WorkerState,
    rank: RankState,
    epoch: number,
    start: EventId | undefined,
  ): Promise<Extract<WorkerKvQueryResponse, { kind: "events" | "tree_dump" }> | undefined> {
    for (let attempt = 0; ; attempt++) {
      await this.permits.acquire();
      let resp: WorkerKvQueryResponse;
      try {
        if (!this.isCurrent(w, r, ws, rank, epoch)) return undefined;
        resp = await this.query(w, r, start);
      } catch (e) {
        resp = { kind: "error", message: String(e) };
      } finally {
        this.permits.release();
      }
      if (resp.kind === "events" || resp.kind === "tree_dump") return resp;
      if (!this.isCurrent(w, r, ws, rank, epoch)) return undefined;
      const what = start === undefined ? "full restore" : `replay from ${start}`;
      this.warn(`${what} of ${w}:${r} got ${describeFailure(resp)} (attempt ${attempt + 1})`);
      if (resp.kind === "invalid_range" || attempt >= this.maxRetries) return undefined;
      this.counters.retries += 1;
      await this.sleep(this.initialBackoffMs * 2 ** attempt);
      if (!this.isCurrent(w, r, ws, rank, epoch)) return undefined;
    }
  }

  private applyResponse(
    w: WorkerId,
    r: DpRank,
    ws: WorkerState,
    rank: RankState,
    resp: Extract<WorkerKvQueryResponse, { kind: "events" | "tree_dump" }>,
  ): void {
    const c = this.counters;
    if (resp.kind === "tree_dump") {
      // The dump is the whole truth as of lastEventId: replace, do not merge.
      this.sink.removeWorkerDpRank(w, r);
      for (const ev of resp.events) this.sink.applyEvent(ev);
      c.dumped += resp.events.length;
      c.restores += 1;
      ws.beginSuccessfulRecoveryDrain(r, WorkerState.restoredCursor(resp.lastEventId));
      return;
    }
    for (const ev of resp.events) {
      const id = ev.event.eventId;
      const last = rank.lastAppliedId();
      if (last !== undefined && id <= last) continue;
      if (ev.event.data.type === "cleared" && ev.event.medium === undefined) {
        c.clears += 1;
        ws.applyReplayedClear(r, id);
        this.sink.applyEvent(ev);
      } else {
        this.sink.applyEvent(ev);
        c.replayed += 1;
        rank.cursor = advanceTo(rank.cursor, id);
      }
    }
    const last = rank.lastAppliedId();
    const lastEventId = resp.lastEventId;
    const cursor =
      lastEventId !== null && (last === undefined || lastEventId > last)
        ? live(lastEventId)
        : rank.cursor;
    ws.beginSuccessfulRecoveryDrain(r, cursor);
  }

  /** Apply buffered events that continue the cursor; the id to fetch from if a hole remains. */
  private drain(r: DpRank, ws: WorkerState): EventId | undefined {
    for (;;) {
      const a = ws.nextPendingDrainAction(r);
      switch (a.kind) {
        case "apply":
          this.sink.applyEvent(a.event);
          this.counters.applied += 1;
          continue;
        case "recover_from":
          return a.startEventId;
        case "complete":
          return undefined;
      }
    }
  }
}

function describeFailure(
  resp: Exclude<WorkerKvQueryResponse, { kind: "events" | "tree_dump" }>,
): string {
  switch (resp.kind) {
    case "too_new":
      return `too_new (asked ${resp.requestedStart}..${resp.requestedEnd}, newest ${resp.newestAvailable})`;
    case "invalid_range":
      return `invalid_range (${resp.startId}..${resp.endId})`;
    case "error":
      return `error: ${resp.message}`;
  }
}
