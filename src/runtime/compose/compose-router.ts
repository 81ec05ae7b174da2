/**
 * The one composition every runtime shares: `composeRouter(config, choices, log)` builds the
 * router from runtime-free parts, one builder per group, in this order: the fleet (fleet.ts:
 * registry, models, tokenizers, LoRA), the router core (router.ts: sessions, admission,
 * burst claims, createRouter), membership and health (membership.ts), the metrics
 * (observe.ts), load sync (sync.ts), tenants (tenants.ts), each request's observation
 * (observe.ts) and the edge's deps (edge-deps.ts). The runtime's entry passes its choices
 * (hasher, tokenizer loader, the RESP openers for redis://, sleep, local addresses, hooks for
 * what it wires beside) and adds its own pieces (src/runtime/bun.ts, portable.ts). It serves
 * nothing and imports no Bun code (test/architecture.test.ts: portable.ts reaches it).
 */
import { bindClusterMetrics, type ClusterMetrics } from "../../edge/cluster-metrics.ts";
import type { EdgeDeps } from "../../edge/deps.ts";
import type { Logger } from "../../core/logger.ts";
import type { Config } from "../../config/schema.ts";
import { routerIdHex, type RouterId } from "../../core/ids.ts";
import type { HealthChecker } from "../../fleet/health.ts";
import type { WorkerMembership } from "../../fleet/membership.ts";
import type { WorkerRegistry } from "../../fleet/registry.ts";
import { RouterMetrics } from "../../observe/names.ts";
import type { DecisionLog } from "../../observe/decision-log.ts";
import type { LoopLagMeter } from "../../observe/process-metrics.ts";
import type { RecentStats } from "../../observe/recent-stats.ts";
import type { RequestObservers } from "../../observe/request-observers.ts";
import type { AdmissionGate, createRouter, KvIndex } from "../../router/index.ts";
import type { LoadSync } from "../../sync/load-sync.ts";
import type { RuntimeChoices, RuntimeEdge } from "./choices.ts";
import { edgeDepsBuilder, type AccessState } from "./edge-deps.ts";
import { buildFleet } from "./fleet.ts";
import { buildMembership, type Members } from "./membership.ts";
import { bindRouterMetrics, buildObservation } from "./observe.ts";
import { buildRouter } from "./router.ts";
import { startSync } from "./sync.ts";
import { buildTenants } from "./tenants.ts";
import { cacheTruthParts, canaries } from "./cache-truth.ts";

/** How often the approximate index drops expired decisions. */
const APPROX_EXPIRE_EVERY_MS = 1_000;
/** How often stale bookings (never freed: 300 s, as Dynamo's ActiveSequences expire them) are swept. */
const LOAD_EXPIRY_EVERY_MS = 30_000;

export interface ComposedRouter {
  readonly now: () => number;
  readonly metrics: RouterMetrics;
  readonly registry: WorkerRegistry;
  readonly router: ReturnType<typeof createRouter>;
  readonly membership: WorkerMembership;
  /** Health checks, fences and holds (discovery holds a terminating pod's worker). */
  readonly health: HealthChecker;
  /** The event loop's lag (running once checks start): the upstream client's connect deadline counts only time the loop could run. */
  readonly loopLag: LoopLagMeter;
  readonly admission: AdmissionGate;
  /** Each request's access line, metrics and spans, and what the status page reads (last decisions, recent minutes). */
  readonly observe: RequestObservers;
  readonly decisions: DecisionLog;
  readonly recent: RecentStats;
  /** The edge's deps (createApp's argument): what every runtime gives the same way, plus the runtime's own. */
  edgeDeps(runtime: RuntimeEdge): EdgeDeps;
  /** The headers the router's own engine calls carry (--engine-token). */
  readonly engineHeaders: Record<string, string>;
  /** The port the server listens on, once it does (POST /v1/workers refuses it). */
  listeningOn(port: number): void;
  /**
   * /health answers 503 "draining" while requests are still served: the drain delay, in
   * which load balancers take this router out before anything is refused.
   */
  stopReadiness(): void;
  /** New requests get a retryable 503 and /health says "draining"; health checks stop. */
  startDraining(): void;
  /** Registers the start-up workers (a failure is logged, not thrown). */
  registerAll(workerUrls: readonly string[]): Promise<void>;
  /** Starts health checks and the expiry timers (once the start-up workers are in). */
  startChecks(): void;
  /** Timers, health checks and admission stop (before the server stops). */
  stopWork(): void;
  /** Load sync and the session store close (after the server stops). */
  close(): Promise<void>;
}

/** Builds everything runtime-free; serves nothing. Throws StartupError for a tokenizer that cannot load. */
export async function composeRouter(
  config: Config,
  choices: RuntimeChoices,
  log: Logger,
): Promise<ComposedRouter> {
  const now = () => performance.now();
  const metrics = new RouterMetrics();
  const fleet = await buildFleet(config, choices, log, metrics, now);
  // Who this router is, drawn once: its load-sync messages, its request ids and every /health
  // answer carry it (a URL that answers with a router id is refused as a worker).
  const routerId: RouterId = (choices.randomValues ?? ((a) => crypto.getRandomValues(a)))(
    new BigUint64Array(1),
  )[0]!;
  let clusterMetrics: ClusterMetrics | undefined;
  // Shares this router's active load with the others through Redis (started below, once the router exists).
  let loadSync: LoadSync | undefined;
  // Every answer's cached tokens checked against the index (src/fleet/cache-truth).
  let routerIndex: KvIndex | undefined;
  const cacheTruth = cacheTruthParts({
    policy: config.policy,
    cacheCheck: config.cacheCheck,
    canary: config.canary,
    blockSize: config.blockSize,
    now,
    log,
    registry: metrics.registry,
    index: () => routerIndex,
  });
  const { router, admission, sessions, claimsConnection } = await buildRouter(
    config,
    choices,
    log,
    {
      cacheTruth: cacheTruth?.routerPorts,
      metrics,
      now,
      routerId,
      fleet,
      clusterMetrics: () => clusterMetrics,
      otherRouters: () => loadSync?.peerCount() ?? 0,
    },
  );
  routerIndex = router.index;
  if (cacheTruth !== undefined)
    cacheTruth.canary = canaries({
      truth: cacheTruth.truth,
      blockSize: config.blockSize,
      router,
      fleet,
      now,
      log,
      engineDeadlinesMs: [config.firstByteTimeout * 1000, config.streamIdleTimeout * 1000],
    });
  const members = buildMembership(config, choices, log, {
    fleet,
    router,
    metrics,
    now,
    cacheTruth,
    // Made just below; health checks start after it.
    loopLag: () => loopLag,
  });
  const loopLag = bindRouterMetrics(choices, { metrics, fleet, router, admission, now });
  loadSync = await startSync(config, choices, log, { tracker: router.tracker, routerId, now });
  const syncStats = loadSync && (() => loadSync!.stats());
  clusterMetrics = bindClusterMetrics(metrics, {
    store: sessions.stats,
    loadSync: syncStats,
    lora: () => fleet.adapters.counters,
    memorySessions: sessions.memory,
  });
  const tenants = await buildTenants(config, {
    keysFile: choices.keysFile,
    resp: choices.resp,
    admission,
    metrics,
    log,
    now,
    otherRouters: syncStats && (() => ({ heard: syncStats().receiving, peers: syncStats().peers })),
  });
  const observation = buildObservation(config, choices, log, {
    metrics,
    fleet,
    router,
    admission,
    outliers: members.outliers,
    sessionsHeld: sessions.memory,
    now,
    routerId: routerIdHex(routerId),
    peers: () => loadSync?.peers().map((p) => ({ ...p, routerId: routerIdHex(p.routerId) })),
  });
  const state: AccessState = { draining: false, unready: false, listeningPort: undefined };
  const edgeDeps = edgeDepsBuilder(
    config,
    choices,
    log,
    {
      routerId,
      fleet,
      router,
      members,
      store: sessions.store,
      metrics,
      observation,
      tenants: tenants?.guard,
      cacheTruth,
      now,
    },
    state,
  );
  return {
    now,
    metrics,
    registry: fleet.registry,
    router,
    membership: members.membership,
    health: members.health,
    loopLag,
    admission,
    observe: observation.observe,
    decisions: observation.decisions,
    recent: observation.recent,
    edgeDeps,
    engineHeaders: fleet.engineHeaders,
    ...lifecycle(
      config,
      log,
      state,
      { router, members, admission, loopLag, tenants, now },
      async () => {
        await loadSync?.stop();
        await claimsConnection?.close();
        await sessions.store.close();
      },
    ),
  };
}

type Lifecycle = Pick<
  ComposedRouter,
  | "listeningOn"
  | "stopReadiness"
  | "startDraining"
  | "registerAll"
  | "startChecks"
  | "stopWork"
  | "close"
>;

/** The entry's start and stop over the composed parts; `closeShared` closes what other routers share (load sync, claims, sessions). */
function lifecycle(
  config: Config,
  log: Logger,
  state: AccessState,
  p: {
    readonly router: ReturnType<typeof createRouter>;
    readonly members: Members;
    readonly admission: AdmissionGate;
    readonly loopLag: { start(): void; stop(): void };
    readonly tenants?: { stop(): void; close(): Promise<void> };
    readonly now: () => number;
  },
  closeShared: () => Promise<void>,
): Lifecycle {
  const { router, admission, loopLag, tenants, now } = p;
  const { health, membership } = p.members;
  const timers: ReturnType<typeof setInterval>[] = [];
  return {
    listeningOn: (port) => {
      state.listeningPort = port;
    },
    stopReadiness() {
      state.unready = true;
    },
    startDraining() {
      state.draining = true;
      health.stop();
    },
    async registerAll(workerUrls) {
      await Promise.all(
        workerUrls.map((u) =>
          membership
            .register({ url: u })
            .catch((e) => log.error(`cannot register worker ${u}: ${(e as Error).message}`)),
        ),
      );
    },
    startChecks() {
      health.start();
      loopLag.start();
      timers.push(setInterval(() => router.expireLoad(now()), LOAD_EXPIRY_EVERY_MS));
      if (config.policy === "approx" || router.approxIndex !== undefined)
        timers.push(setInterval(() => router.expireApprox(now()), APPROX_EXPIRE_EVERY_MS));
    },
    stopWork() {
      state.draining = true;
      loopLag.stop();
      for (const t of timers) clearInterval(t);
      health.stop();
      admission.close();
      tenants?.stop();
    },
    async close() {
      await tenants?.close();
      await closeShared();
    },
  };
}
