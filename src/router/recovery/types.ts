/**
 * Shapes shared by the recovery core: the worker query response (Dynamo's worker KV query), the query
 * function the driver is given, the index sink it feeds, and its counters.
 */
import type { RouterEvent } from "../../core/events.ts";
import type { DpRank, EventId, WorkerId } from "../../core/ids.ts";

/** The query answer is part of the engine <-> router protocol (src/protocol/kv-query.ts). */
export type { WorkerKvQueryResponse } from "../../protocol/kv-query.ts";
import type { WorkerKvQueryResponse } from "../../protocol/kv-query.ts";

/**
 * Ask one (worker, dp_rank) for events; `startId` undefined asks for a full tree dump.
 * Both ids are inclusive. A rejected promise counts like an `error` response.
 */
export type WorkerQuery = (
  workerId: WorkerId,
  dpRank: DpRank,
  startId?: EventId,
  endId?: EventId,
) => Promise<WorkerKvQueryResponse>;

/**
 * Where an event came from. "engine": the engine's own stream (HTTP pushes marked as such,
 * ZMQ): ordered by its ids through the cursor. "admin": posted through the admin API by
 * anyone else: applied as it says, never moving the cursor, so it cannot push the engine's
 * stream off its ids.
 */
export type EventSource = "engine" | "admin";

/** What the driver needs from an index. `KvIndex` (src/router/kv-index/types.ts) satisfies it. */
export interface IndexSink {
  applyEvent(event: RouterEvent): unknown;
  removeWorkerDpRank(workerId: WorkerId, dpRank: DpRank): void;
  removeWorker(workerId: WorkerId): void;
}

/** Counters of the recovery core (monotonic; for metrics and tests). */
export interface RecoveryStats {
  /** Live events applied to the index, directly or drained from the buffer after a recovery. */
  applied: number;
  /** Events applied from `events` (replay) responses. */
  replayed: number;
  /** Events applied from tree dumps. */
  dumped: number;
  /** Live events ignored as already applied (late duplicates). */
  stale: number;
  /** Gaps found: incremental recoveries started, from a live event or while draining. */
  gaps: number;
  /** Tree dumps applied (full restores completed). */
  restores: number;
  /** Engine restarts detected (ids went back towards 0). */
  restarts: number;
  /** Cleared barriers applied (live or replayed). */
  clears: number;
  /** Live events buffered while a recovery was in flight. */
  buffered: number;
  /** Buffered live events thrown away: over the limit, or by a barrier, reset, restart or failure. */
  dropped: number;
  /** Recovery tasks started. */
  recoveries: number;
  /** Query attempts repeated after an error / too_new / rejection. */
  retries: number;
  /** Recoveries given up after the last retry (or an invalid_range); each wipes its rank, which goes on cold. */
  failed: number;
  /** Events from the admin API (not an engine's own stream), applied as they say, outside the id order. */
  admin: number;
  /** Recovery results thrown away because the rank was reset, cleared or removed meanwhile. */
  discarded: number;
}

export function emptyRecoveryStats(): RecoveryStats {
  return {
    applied: 0,
    replayed: 0,
    dumped: 0,
    stale: 0,
    gaps: 0,
    restores: 0,
    restarts: 0,
    clears: 0,
    buffered: 0,
    dropped: 0,
    recoveries: 0,
    retries: 0,
    failed: 0,
    admin: 0,
    discarded: 0,
  };
}
