/**
 * `createRouter(config, ports)`: the router (index, books, scheduler, routing, recovery) built in one place, so the
 * composition root (src/runtime/compose/, for every runtime), the edge's test harness and
 * the benches wire it the same way. Runtime-free and without I/O of its own: the hasher, clock, rng, worker
 * registry, session store, metrics and the engines' recovery query are ports.
 *
 * It builds the precise (or approximate) index, the approximate index for inexact prompts,
 * the load tracker, the scheduler pipeline, the routing service, the recovery driver and the
 * bookings of POST /v1/route, and exposes what every edge needs:
 *   - `routing.prepare` / `routing.route` -> decision + lease (the lease frees exactly once);
 *   - `ingest(events, source)`: KV events of registered (worker, dp rank)s into the recovery
 *     driver ("engine": ordered by ids, gaps recovered; "admin": applied as they say).
 *   - `ingestLossy(events)`: a stream that cannot be replayed (vLLM over ZMQ: vLLM serves no
 *     /kv/query), applied in order; an id gap (batches lost for good) wipes the rank first
 *     (recovery/lossy-stream.ts).
 *   Both hand a Cleared to the index's applyEvent like any event, and the index gives it its
 *   one meaning: the (worker, dp rank) that sent it is emptied, the worker's other ranks stay.
 *   - `expireLoad(now)` / `expireApprox(now)`: the periodic work the runtime's timers call
 *     (load expiry + lease sweep; approximate-index TTLs).
 * Worker registration stays in src/fleet (membership talks HTTP to engines); it is handed
 * `recovery` and `tracker` from here.
 */
import type { RouterEvent } from "../core/events.ts";
import type { BatchBlockHasher } from "../core/block-hash.ts";
import type { DpRank, RouterId, WorkerId, WorkerKey, WorkerWithDpRank } from "../core/ids.ts";
import { createIndexer } from "./kv-index/indexer.ts";
import type { KvIndex } from "./kv-index/types.ts";
import { RecoveryDriver } from "./recovery/driver.ts";
import { LossyStreamGuard } from "./recovery/lossy-stream.ts";
import type { EventSource, WorkerQuery } from "./recovery/types.ts";
import { schedulerConfig, type SchedulerConfig } from "./choose/config.ts";
import { LoadTracker } from "./books/load-tracker.ts";
import { TtftPredictor } from "./books/ttft-predictor.ts";
import { KvPlanner } from "./kv-plan/plan.ts";
import { TransferRates } from "./kv-plan/transfer-rates.ts";
import { createPipeline, type PolicyName } from "./choose/registry.ts";
import type { Rng } from "../core/rng.ts";
import type { Pipeline } from "./choose/types.ts";
import type { StickyRouter } from "./sessions/sticky.ts";
import { ExternalLeases } from "./books/external-leases.ts";
import type { RoutableWorkers, RoutingObserver } from "./ports.ts";
import { RoutingService } from "./routing-service.ts";
import type { EngineSessionOps } from "./sessions/session-control.ts";
import type { AdmissionGate } from "./admission/admission-gate.ts";
import type { BurstClaims } from "./books/burst-claims.ts";

export interface RouterConfig {
  readonly policy: PolicyName;
  /** Scheduler knobs; `blockSize` is required, the rest default (choose/config.ts). */
  readonly scheduler: Partial<SchedulerConfig> & { readonly blockSize: number };
  /** Approximate index TTL (ms) for approx mode and inexact prompts. */
  readonly approxTtlMs?: number;
  /** Router-only session bindings live this long (ms). */
  readonly sessionTtlMs: number;
  /** This router's identity (core/ids.ts RouterId): its load-sync messages and its request ids carry it. Default 0. */
  readonly routerId?: RouterId;
  /** --worker-capacity: booked prefill tokens a rank may hold before it counts busy. */
  readonly capacityTokens?: number;
  /**
   * A separate approximate index for prompts the router cannot tokenize as the engine does
   * (default true; irrelevant under policy approx, where the main index is approximate).
   */
  readonly inexactIndex?: boolean;
}

export interface RouterPorts {
  readonly hasher: BatchBlockHasher;
  /** Milliseconds (load decay, TTLs, phase timings). */
  readonly now: () => number;
  readonly rng: Rng;
  /** The worker registry: who is routable, and how many dp ranks a worker has. */
  readonly workers: RoutableWorkers & {
    get(id: WorkerId): { readonly dpRanks: number } | undefined;
  };
  readonly sticky: StickyRouter;
  readonly metrics: RoutingObserver;
  /** The engines' KV recovery query (events/kv-query-client.ts over HTTP). */
  readonly query: WorkerQuery;
  /** Backoff between recovery queries. */
  readonly sleep: (ms: number) => Promise<void>;
  readonly warn?: (message: string) => void;
  readonly engineSessions?: EngineSessionOps;
  readonly busyKeys?: () => ReadonlySet<WorkerKey> | undefined;
  readonly engineWaiting?: () => ReadonlyMap<WorkerKey, number> | undefined;
  /** Events dropped because their (worker, dp rank) is not registered. */
  readonly onDropped?: (reason: "unknown_worker" | "approx_policy", count: number) => void;
  /** Where routing.routeOrWait waits while every worker is busy (built with the runtime's timer); without it: all_workers_busy at once. */
  readonly admission?: AdmissionGate;
  /** Where routers in front of the same engines claim their decisions (RoutingDeps.claims); without it: none. */
  readonly claims?: BurstClaims;
  /** Other live routers booking on the same engines (RoutingDeps.otherRouters); without it: none. */
  readonly otherRouters?: () => number;
  /** The ranks the cache check distrusts (RoutingDeps.distrusted); without it: no check. */
  readonly distrusted?: () => ReadonlySet<WorkerKey>;
  /** Live events an engine sent (not dumps or replays), before they are applied: the cache check hears who talks. */
  readonly onLiveEvents?: (events: readonly RouterEvent[]) => void;
  /** A rank's events showed its engine restarted (ids went back). */
  readonly onRestart?: (workerId: WorkerId, dpRank: DpRank) => void;
  /** A stored event named a parent block the index never got (parent_block_not_found): the cache check hears of lost events. */
  readonly onOrphanEvent?: (workerId: WorkerId, dpRank: DpRank) => void;
}

export interface IngestResult {
  readonly accepted: number;
  readonly dropped: number;
}

export interface Router {
  readonly index: KvIndex;
  readonly approxIndex: KvIndex | undefined;
  readonly tracker: LoadTracker;
  /** Each engine's learned prefill speed and the TTFT it predicts (the kv policy's cost). */
  readonly ttft: TtftPredictor;
  readonly scheduler: SchedulerConfig;
  readonly pipeline: Pipeline;
  readonly routing: RoutingService;
  readonly recovery: RecoveryDriver;
  readonly leases: ExternalLeases;
  /**
   * Worker registration's hooks into the router (src/fleet/membership.ts takes this object as
   * its `load` and `recovery`): load slots for every registered rank, a full KV restore for a
   * new rank (`reset`: start it over, e.g. the engine restarted), and a removed worker's blocks
   * gone from both indexes.
   */
  readonly members: {
    updateWorkers(targets: Iterable<WorkerWithDpRank>): void;
    /** One worker's ranks in or out of the load books, without touching the others (registration stays O(ranks)). */
    addWorkers(targets: Iterable<WorkerWithDpRank>): void;
    removeLoad(workerId: WorkerId): void;
    /** A rank's KV capacity in blocks as its engine reports it; undefined: unknown (LoadTracker.setKvCapacity). */
    setKvCapacity(worker: WorkerWithDpRank, blocks: number | undefined): void;
    addRank(workerId: WorkerId, dpRank: DpRank, reset?: boolean): void;
    removeWorker(workerId: WorkerId): void;
  };
  /** KV events in, from any source; unregistered (worker, dp rank)s are dropped and counted. */
  ingest(events: readonly RouterEvent[], source: EventSource): IngestResult;
  /** Events of an unreplayable stream (vLLM ZMQ); events of unregistered workers are dropped and counted. */
  ingestLossy(events: readonly RouterEvent[]): IngestResult;
  /** Periodic upkeep (a runtime timer, every few seconds): bookings past the 300 s expiry, leases whose booking is gone. */
  expireLoad(now: number): void;
  /** Periodic upkeep: approximate-index entries past their TTL. */
  expireApprox(now: number): void;
}

/** The router's API, what the HTTP edge needs from it (EdgeDeps.router): decisions, bookings, books, events in, the learned speeds (GET /v1/workers). */
export type RouterApi = Pick<
  Router,
  "routing" | "leases" | "tracker" | "index" | "ingest" | "ttft"
>;

export function createRouter(config: RouterConfig, ports: RouterPorts): Router {
  const approxMode = config.policy === "approx";
  const prune = config.approxTtlMs === undefined ? undefined : { ttlMs: config.approxTtlMs };
  const index = createIndexer(approxMode ? "approximate" : "precise", { prune });
  const approxIndex =
    approxMode || config.inexactIndex === false
      ? undefined
      : createIndexer("approximate", { prune });
  // The router's own decisions on the ranks the cache check distrusts (src/fleet/cache-truth).
  const fallbackIndex =
    approxMode || ports.distrusted === undefined
      ? undefined
      : createIndexer("approximate", { prune });
  const routerId = config.routerId ?? 0n;
  const tracker = new LoadTracker({ blockSize: config.scheduler.blockSize, routerId });
  const scheduler = schedulerConfig(config.scheduler);
  const pipeline = createPipeline(config.policy, scheduler);
  const ttft = new TtftPredictor({ blockSize: config.scheduler.blockSize });
  // An engine that reports a lower tier runs a KV connector: it can pull a peer's blocks and serve its own.
  const hasTier = (w: WorkerWithDpRank) =>
    (index.mediumSize?.(w, "cpu") ?? 0) > 0 || (index.mediumSize?.(w, "disk") ?? 0) > 0;
  const kvPlanner = approxMode
    ? undefined
    : new KvPlanner(new TransferRates(), hasTier, () => index.hasTiers?.() ?? false);
  const routing = new RoutingService({
    routerId,
    registry: ports.workers,
    index,
    tracker,
    pipeline,
    scheduler,
    hasher: ports.hasher,
    sticky: ports.sticky,
    metrics: ports.metrics,
    now: ports.now,
    rng: ports.rng,
    recordDecisions: approxMode,
    approxIndex,
    distrusted: approxMode ? undefined : ports.distrusted,
    fallbackIndex,
    sessionTtlMs: config.sessionTtlMs,
    engineSessions: ports.engineSessions,
    busyKeys: ports.busyKeys,
    engineWaiting: ports.engineWaiting,
    capacityTokens: config.capacityTokens,
    admission: ports.admission,
    ttft,
    claims: ports.claims,
    otherRouters: ports.otherRouters,
    kvPlanner,
  });
  const onOrphan = ports.onOrphanEvent;
  const recovery = new RecoveryDriver({
    sink:
      onOrphan === undefined
        ? index
        : {
            applyEvent: (e: RouterEvent) => {
              const status = index.applyEvent(e);
              if (status === "parent_block_not_found") onOrphan(e.workerId, e.event.dpRank);
              return status;
            },
            removeWorkerDpRank: (w: WorkerId, r: DpRank) => index.removeWorkerDpRank(w, r),
            removeWorker: (w: WorkerId) => index.removeWorker(w),
          },
    query: ports.query,
    sleep: ports.sleep,
    onWarning: ports.warn,
    onRestart: ports.onRestart,
  });
  const leases = new ExternalLeases(tracker);
  const isKnown = (w: WorkerId, r: DpRank) => (ports.workers.get(w)?.dpRanks ?? 0) > r;
  const gaps = new LossyStreamGuard();
  /**
   * Approximate mode is the router without KV events (Dynamo's approximate mode): its index is its own
   * decisions. Events that arrive anyway (an engine configured to publish) are dropped and
   * counted, not mixed in: "approx" must mean the same thing whoever sends what.
   */
  const ignoredInApprox = (n: number): IngestResult => {
    if (n > 0) ports.onDropped?.("approx_policy", n);
    return { accepted: 0, dropped: n };
  };
  return {
    index,
    approxIndex,
    tracker,
    ttft,
    scheduler,
    pipeline,
    routing,
    recovery,
    leases,
    members: {
      updateWorkers: (targets) => tracker.updateWorkers(targets),
      addWorkers: (targets) => tracker.addWorkers(targets),
      removeLoad: (workerId) => tracker.removeWorker(workerId),
      setKvCapacity: (worker, blocks) => tracker.setKvCapacity(worker, blocks),
      // approx restores nothing from an engine: its index is its own decisions.
      addRank: (workerId, dpRank, reset) =>
        approxMode ? undefined : recovery.addRank(workerId, dpRank, reset),
      removeWorker: (workerId) => {
        recovery.removeWorker(workerId);
        ttft.forgetWorker(workerId);
        kvPlanner?.rates.forgetWorker(workerId);
        approxIndex?.removeWorker(workerId);
        fallbackIndex?.removeWorker(workerId);
        gaps.forget(workerId); // its ZMQ ids, so a worker that comes and goes leaves nothing behind
      },
    },
    ingest(events, source) {
      if (approxMode) return ignoredInApprox(events.length);
      if (source === "engine") ports.onLiveEvents?.(events);
      let accepted = 0;
      let dropped = 0;
      for (const ev of events) {
        if (!isKnown(ev.workerId, ev.event.dpRank)) {
          dropped++;
          continue;
        }
        recovery.ingest(ev, source);
        accepted++;
      }
      if (dropped > 0) ports.onDropped?.("unknown_worker", dropped);
      return { accepted, dropped };
    },
    ingestLossy(events) {
      if (approxMode) return ignoredInApprox(events.length);
      ports.onLiveEvents?.(events);
      let accepted = 0;
      let dropped = 0;
      for (const ev of events) {
        // A worker removed through DELETE /v1/workers while its subscriber still runs.
        if (ports.workers.get(ev.workerId) === undefined) {
          dropped++;
          gaps.forget(ev.workerId);
          continue;
        }
        if (gaps.observe(ev)) index.removeWorkerDpRank(ev.workerId, ev.event.dpRank);
        index.applyEvent(ev);
        accepted++;
      }
      if (dropped > 0) ports.onDropped?.("unknown_worker", dropped);
      return { accepted, dropped };
    },
    expireLoad(now) {
      tracker.forceExpiry(now);
      leases.sweep();
    },
    expireApprox(now) {
      if (approxMode) index.expire(now);
      approxIndex?.expire(now);
      fallbackIndex?.expire(now);
    },
  };
}
