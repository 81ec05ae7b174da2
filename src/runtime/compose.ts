/**
 * The one composition every runtime shares: `composeRouter(config, choices, log)` builds the
 * registry, models, tokenizers, session store and sticky routing, the router core
 * (createRouter), LoRA, passive and active health (outliers, restarts), membership, admission,
 * load sync, metrics and the edge's deps (src/edge/deps.ts, in their small groups) from
 * runtime-free parts. The runtime's entry passes
 * its choices (hasher, tokenizer loader, the RESP openers for redis://, sleep, local addresses,
 * hooks for what it wires beside) and adds its own pieces (src/runtime/bun.ts, portable.ts).
 * It serves nothing and imports no Bun code (test/architecture.test.ts: portable.ts reaches it).
 */
import { bindClusterMetrics } from "../edge/cluster-metrics.ts";
import type { PeerAddress } from "../edge/auth.ts";
import type { EdgeDeps } from "../edge/deps.ts";
import type { DisaggOptions } from "../edge/disagg/options.ts";
import type { Logger } from "../core/logger.ts";
import { fetchUpstream, type UpstreamCall } from "../edge/proxy/upstream.ts";
import type { WorkerProvisioner } from "../fleet/provisioner.ts";
import { RouterTokenizers, type RouterTokenizersDeps } from "../edge/prompt-route/tokenizers.ts";
import type { Config } from "../config/schema.ts";
import type { BatchBlockHasher } from "../core/block-hash.ts";
import { routerIdHex, type RouterId, type WorkerId, type WorkerKey } from "../core/ids.ts";
import { kvQueryClient } from "../fleet/events/kv-query-client.ts";
import { AdapterLoader } from "../fleet/lora/adapter-loader.ts";
import { AdapterAllowlist } from "../fleet/lora/adapter-name.ts";
import { LoraStateTracker } from "../fleet/lora/state-tracker.ts";
import { bindCollectors } from "../observe/collectors.ts";
import { RouterMetrics } from "../observe/names.ts";
import { DecisionLog } from "../observe/decision-log.ts";
import { RecentStats } from "../observe/recent-stats.ts";
import { RequestMetrics } from "../observe/request-metrics.ts";
import { RequestObservers } from "../observe/request-observers.ts";
import type { Tracer } from "../observe/tracing.ts";
import { bindBuildInfo, bindRecoveryMetrics, bindWorkerInfo, tokenizerMismatchGauge } from "../observe/fleet-metrics.ts";
import { bindProcessMetrics, EventLoopLag, type ProcessProbe } from "../observe/process-metrics.ts";
import { forgetWorkerSeries, zeroRouterSeries, zeroWorkerSeries } from "../observe/zero-series.ts";
import type { StatusSource } from "../observe/status-routes.ts";
import { buildInfo } from "../core/build-info.ts";
import { AdmissionGate, createRouter, StickyRouter } from "../router/index.ts";
import { openRedisConnection, type RespOpener } from "../sync/redis-client.ts";
import { RedisBurstClaims } from "../sync/burst-claim-store.ts";
import { startLoadSync, type LoadSync } from "../sync/load-sync.ts";
import type { PubSubOpener } from "../sync/transport.ts";
import { fetchEngineInfo, type EngineInfo } from "../fleet/engine-info.ts";
import { probeKvCapacity } from "../fleet/engine-capacity-probe.ts";
import { engineLoraClient } from "../fleet/engine-lora.ts";
import { engineSessions } from "../fleet/engine-sessions.ts";
import type { HealthChecker } from "../fleet/health.ts";
import { WorkerMembership } from "../fleet/membership.ts";
import { fetchServedModels, ModelDirectory } from "../fleet/models.ts";
import { WorkerRegistry } from "../fleet/registry.ts";
import { WorkerUrlPolicy } from "../fleet/url-policy.ts";
import { buildAffinityStore } from "./compose/affinity-store.ts";
import { engineFetch, ownFetch } from "./compose/engine-fetch.ts";
import { reportEncoderChoice } from "./compose/encoder-report.ts";
import { workerHealth } from "./compose/worker-health.ts";
import { StartupError } from "./compose/startup-error.ts";
import { buildTenants } from "./compose/tenants.ts";
import type { KeysFileSource } from "../protect/keys-watch.ts";
import { RetryBudget } from "../edge/proxy/retry-budget.ts";

/** How often the approximate index drops expired decisions. */
const APPROX_EXPIRE_EVERY_MS = 1_000;
/** How often stale bookings (never freed: 300 s, as Dynamo's ActiveSequences expire them) are swept. */
const LOAD_EXPIRY_EVERY_MS = 30_000;
/** Retries of engine answers always allowed per second, so a quiet router retries whatever its traffic. */
const RETRY_FLOOR_PER_SECOND = 10;
/** Registration and recovery queries must not hang on a dead engine. */
const ENGINE_QUERY_TIMEOUT_MS = 5_000;

export { StartupError };

/** What the runtime chooses; everything else is built the same way everywhere. */
export interface RuntimeChoices {
  readonly hasher: BatchBlockHasher;
  /** Loads a tokenizer directory; without it --tokenizer is refused (the runtime cannot read files). */
  readonly loadTokenizer?: RouterTokenizersDeps["load"];
  /** redis:// openers (Bun injects its RESP code); without them only https:// (Upstash REST) opens. */
  readonly resp?: RespOpener;
  readonly pubsub?: PubSubOpener;
  readonly sleep: (ms: number) => Promise<void>;
  /** This machine's addresses: POST /v1/workers refuses this router's own port on them. */
  readonly localHosts: () => readonly string[];
  /** The engines' own load (Bun's metrics scraper), read by the scheduler at each decision. */
  readonly busyKeys?: () => ReadonlySet<WorkerKey> | undefined;
  readonly engineWaiting?: () => ReadonlyMap<WorkerKey, number> | undefined;
  /** Hooks for what the runtime wires beside: an engine's info at registration (disagg roles), a removed worker. */
  readonly onEngineInfo?: (url: string, info: EngineInfo) => void;
  readonly onWorkerRemoved?: (id: WorkerId) => void;
  /** Reads (and watches) the --api-keys file; without it --api-keys is refused at start. */
  readonly keysFile?: KeysFileSource;
  /** Random bytes for this router's identity (default: the web-standard crypto.getRandomValues). */
  readonly randomValues?: (into: BigUint64Array) => BigUint64Array;
  /** Where spans go (--otlp-endpoint: Bun's OpenTelemetry exporter); without it, no spans. */
  readonly tracer?: Tracer;
  /** The process's CPU, memory and fds for /metrics (Bun: /proc); without it, no process_* series. */
  readonly processProbe?: ProcessProbe;
  /** A worker's role under --disagg (prefill | decode | both), for switchyard_worker_info. */
  readonly roleOf?: (url: string) => string;
}

/** A listen address clients on this machine can use (wildcards -> loopback). */
export function reachableHost(host: string): string {
  if (host === "0.0.0.0") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

/** What the runtime adds to the edge's deps: what only it can know or offer. */
export interface RuntimeEdge {
  /** The peer address of a request (Bun: server.requestIP). */
  readonly peer: PeerAddress;
  /** The proxy's upstream client (Bun: pooled sockets); without one, over fetch. */
  readonly upstream?: UpstreamCall;
  /** The runtime is Bun: stream response bodies through Bun's direct streams. */
  readonly directStreams?: boolean;
  /** Lift the server's idle timeout for a request whose body is read (its answer may stream long). */
  readonly keepOpen?: (request: Request) => void;
  /** --disagg vllm|sglang (wired by the Bun entry). */
  readonly disagg?: DisaggOptions;
  /** Registration with a KV event subscription (`kv_events`); without it, plain registration. */
  readonly provisioner?: WorkerProvisioner;
  /** Per-worker extras for GET /v1/workers: KV event subscriptions, engine metrics. */
  readonly workerDetails?: (id: WorkerId) => Record<string, unknown>;
}

export interface ComposedRouter {
  readonly now: () => number;
  readonly metrics: RouterMetrics;
  readonly registry: WorkerRegistry;
  readonly router: ReturnType<typeof createRouter>;
  readonly membership: WorkerMembership;
  /** Health checks, fences and holds (discovery holds a terminating pod's worker). */
  readonly health: HealthChecker;
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
export async function composeRouter(config: Config, choices: RuntimeChoices, log: Logger): Promise<ComposedRouter> {
  const now = () => performance.now();
  const metrics = new RouterMetrics();
  const registry = new WorkerRegistry();
  // Which models each worker serves (GET /v1/models at registration and every health check).
  const models = new ModelDirectory();
  // The models' tokenizers: loaded now, never per request (src/tokens/README.md). Text the
  // router cannot tokenize as the engine does is routed on its own decisions, apart.
  const load = choices.loadTokenizer;
  if (config.tokenizers.length > 0 && load === undefined) throw new StartupError("--tokenizer: this runtime cannot read tokenizer files");
  const tokenizers = new RouterTokenizers({
    load: async (dir) => reportEncoderChoice(await load!(dir), metrics, log),
    parentOf: (m) => models.parentOf(m),
    fetch: ownFetch,
    timeoutMs: ENGINE_QUERY_TIMEOUT_MS,
  });
  for (const t of config.tokenizers) {
    let tok;
    try {
      tok = await tokenizers.add(t.model, t.path);
    } catch (e) {
      throw new StartupError(`--tokenizer ${t.model !== undefined ? `${t.model}=` : ""}${t.path}: ${(e as Error).message}`);
    }
    log.info(`tokenizer for ${t.model ?? "every model"}: ${tok.source}`, { implementation: tok.implementation });
  }
  if (config.tokenizers.length === 0) log.info("no --tokenizer: token-id prompts are routed exactly, text approximately (on the router's own decisions)");
  if (config.policy === "approx") log.info("policy approx: routing on this router's own decisions; ZMQ event streams (kv_events) are not subscribed to, and events posted to /v1/kv/events are dropped (switchyard_kv_events_dropped_total{reason=\"approx_policy\"})");
  // Who this router is, drawn once: its load-sync messages, its request ids and every /health
  // answer carry it (a URL that answers with a router id is refused as a worker).
  const routerId: RouterId = (choices.randomValues ?? ((a) => crypto.getRandomValues(a)))(new BigUint64Array(1))[0]!;
  const toEngines = engineFetch(config.engineToken);
  const engineHeaders: Record<string, string> = config.engineToken ? { authorization: `Bearer ${config.engineToken}` } : {};
  const lora = new LoraStateTracker({ logger: { warn: (m, f) => log.warn(m, f) } });
  const adapters = new AdapterLoader({
    tracker: lora,
    engine: engineLoraClient({ fetch: toEngines }),
    workers: () => registry.list().filter((w) => w.healthy),
    loadOnDemand: config.loraLoadOnDemand,
    isBaseModel: (name) => registry.isBaseModel(name) || models.isBase(name),
    pathTemplate: config.loraPath,
    evict: config.loraEvict,
    allow: new AdapterAllowlist(config.loraAllow),
    now,
    log,
  });
  let clusterMetrics: ReturnType<typeof bindClusterMetrics> | undefined;
  const sessions = engineSessions({
    fetch: toEngines,
    urlOf: (id) => registry.get(id)?.url,
    timeoutMs: ENGINE_QUERY_TIMEOUT_MS,
    warn: (m) => log.warn(m),
    onResult: (action, ok) => clusterMetrics?.engineSessionCalls.inc([action, ok ? "ok" : "error"]),
  });
  const { store, stats: storeStats, memory: memorySessions } = await buildAffinityStore(config, choices, log, (sessionId, binding) => {
    // Exactly one router gets here per expired engine-backed session (Redis claim).
    clusterMetrics?.sessionsExpired.inc();
    log.info(`session ${sessionId} expired; closing it on worker ${binding.worker.workerId}`);
    sessions.close(binding.worker.workerId, sessionId);
  });
  const sticky = new StickyRouter(store, { maxSessionIdLength: config.maxSessionIdLength });
  // When every candidate is busy (the engines' own load, where the runtime scrapes it),
  // requests wait in the router's admission queue (routing.routeOrWait).
  const admissionWait = metrics.admissionWait.series([]);
  const admission = new AdmissionGate({
    maxQueue: config.maxQueue,
    timeoutMs: config.queueTimeout * 1000,
    now,
    timers: { set: (fn, ms) => setTimeout(fn, ms), clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>) },
    onAdmitted: (ms) => admissionWait.observe(ms / 1000),
    onRejected: (reason) => metrics.admissionRejections.inc([reason]),
    // Tenants exist only with --api-keys; without them every request is one tenant, in arrival order.
    fair: config.apiKeys !== undefined && config.fairAdmission,
  });
  // With --burst-claims, routers sharing a Redis claim their kv decisions there (src/router/books/burst-claims.ts).
  const claimsConnection =
    config.redis !== undefined && config.burstClaims && config.policy === "kv"
      ? await openRedisConnection(config.redis, { resp: choices.resp, token: config.redisToken, commandTimeoutMs: config.redisTimeout * 1000 })
      : undefined;
  const claims = claimsConnection && new RedisBurstClaims(claimsConnection, { windowMs: config.burstClaimWindow * 1000 });
  if (claims !== undefined) log.info("burst claims: kv decisions are claimed in Redis first", { window_ms: config.burstClaimWindow * 1000 });
  else if (config.burstClaims) log.warn(`--burst-claims has no effect ${config.redis === undefined ? "without --redis" : `with --policy ${config.policy} (kv only)`}`);
  // Shares this router's active load with the others through Redis (started below, once the router exists).
  let loadSync: LoadSync | undefined;
  // The router core (src/router): index, load, scheduler, routing, recovery, bookings.
  const router = createRouter(
    {
      policy: config.policy,
      // The routing knobs come grouped under the scheduler's own names (config/schema.ts).
      scheduler: { blockSize: config.blockSize, ...config.scheduler },
      approxTtlMs: config.approxTtl * 1000,
      sessionTtlMs: config.sessionTtl * 1000,
      routerId,
      capacityTokens: config.workerCapacity ?? undefined,
    },
    {
      hasher: choices.hasher,
      now,
      rng: Math.random,
      workers: registry,
      sticky,
      metrics,
      query: kvQueryClient({ urlOf: (id) => registry.get(id)?.url, timeoutMs: ENGINE_QUERY_TIMEOUT_MS, headers: engineHeaders, fetch: ownFetch }),
      sleep: choices.sleep,
      warn: (m) => log.warn(m),
      engineSessions: sessions,
      busyKeys: choices.busyKeys,
      engineWaiting: choices.engineWaiting,
      onDropped: (reason, n) => metrics.eventDropped(reason, n),
      admission,
      claims,
      // The load sync starts below, once the router exists; until then this router is alone.
      otherRouters: () => loadSync?.peerCount() ?? 0,
    },
  );
  const { index, approxIndex, tracker } = router;
  // With the router's own books as the busy signal, a waiter is offered a rank as soon as its
  // load drops (a prefill done, a request freed), not at the gate's next tick: on a loaded
  // machine that timer runs late, and every millisecond of it lands on a waiter's TTFT (the
  // fairness bench: bench/README.md). Deferred, so the gate never books inside the tracker's own call.
  if (config.scheduler.busyThreshold !== null) {
    const previous = tracker.onLocalEvent;
    tracker.onLocalEvent = (ev) => {
      previous?.(ev);
      if (ev.data.type !== "add_request" && admission.size > 0) queueMicrotask(() => admission.pump());
    };
  }

  const tokenizerMismatch = tokenizerMismatchGauge(metrics.registry);
  zeroRouterSeries(metrics);
  const { health, restarts, outliers } = workerHealth(config, { registry, models, members: router.members, metrics, toEngines, now, log });
  const membership = new WorkerMembership({
    registry,
    blockSize: config.blockSize,
    maxWorkers: config.maxWorkers,
    load: router.members,
    recovery: router.members,
    lora,
    engineInfo: async (url) => {
      const info = await fetchEngineInfo(url, ENGINE_QUERY_TIMEOUT_MS, toEngines);
      choices.onEngineInfo?.(url, info);
      return info;
    },
    // vLLM and SGLang say their capacity elsewhere: asked once here, so it is known without --engine-metrics-interval.
    kvCapacity: (url) => probeKvCapacity(url, { blockSize: config.blockSize, timeoutMs: ENGINE_QUERY_TIMEOUT_MS, fetch: toEngines }),
    models: { directory: models, fetch: (url) => fetchServedModels(url, AbortSignal.timeout(ENGINE_QUERY_TIMEOUT_MS), ownFetch) },
    onAdded: (w) => {
      log.info(`worker ${w.id} registered`, { url: w.url, dp_ranks: w.dpRanks, healthy: w.healthy });
      zeroWorkerSeries(metrics, w.id, tokenizerMismatch);
      void restarts.check(w.id, w.url, AbortSignal.timeout(config.healthTimeout * 1000)); // the instance to compare with
      if (!w.healthy) void health.check(w.id);
      // Where the engine serves /tokenize, check that it tokenizes like our tokenizer.
      const base = models.of(w.id)?.find((m) => m.parent === null)?.id ?? w.model;
      void tokenizers.check(w.id, w.url, base).then((c) => {
        if (c?.status === "mismatch") log.warn(`worker ${w.id}: tokenizer_mismatch`, { url: w.url, detail: c.detail });
        if (c !== undefined && registry.has(w.id)) tokenizerMismatch.set([String(w.id)], c.status === "mismatch" ? 1 : 0);
      });
    },
    onRemoved: (w) => {
      health.forget(w.id);
      restarts.forget(w.id);
      choices.onWorkerRemoved?.(w.id);
      tokenizers.forget(w.id);
      forgetWorkerSeries(metrics, w.id, tokenizerMismatch);
      log.info(`worker ${w.id} removed`, { url: w.url });
    },
    warn: (m) => log.warn(m),
  });
  metrics.admissionQueueLength.onCollect((g) => g.set([], admission.size));
  bindCollectors(metrics, { index, tracker, workers: () => registry.list(), now });
  bindWorkerInfo(metrics.registry, { workers: () => registry.list(), modelsOf: (id) => models.of(id), roleOf: choices.roleOf });
  bindBuildInfo(metrics.registry, buildInfo());
  bindRecoveryMetrics(metrics.registry, () => router.recovery.stats() as unknown as Record<string, number>);
  if (choices.processProbe !== undefined) bindProcessMetrics(metrics.registry, choices.processProbe);
  const loopLag = new EventLoopLag(now, { every: (fn, ms) => setInterval(fn, ms), stop: (h) => clearInterval(h as ReturnType<typeof setInterval>) });
  loopLag.bind(metrics.registry);
  if (config.redis !== undefined) {
    // redis:// through the runtime's pub/sub opener; https:// (Upstash REST) through a polled Redis Stream.
    loadSync = await startLoadSync({
      url: config.redis,
      token: config.redisToken,
      pubsub: choices.pubsub,
      commandTimeoutMs: config.redisTimeout * 1000,
      tracker,
      routerId,
      now,
      log,
    });
    log.info("active load: shared with the other routers through Redis", { router_id: routerIdHex(routerId) });
  }
  const syncStats = loadSync && (() => loadSync.stats());
  clusterMetrics = bindClusterMetrics(metrics, { store: storeStats, loadSync: syncStats, lora: () => adapters.counters, memorySessions });
  const tenants = await buildTenants(config, {
    keysFile: choices.keysFile,
    resp: choices.resp,
    admission,
    metrics,
    log,
    now,
    otherRouters: syncStats && (() => ({ heard: syncStats().receiving, peers: syncStats().peers })),
  });

  let draining = false;
  let unready = false;
  let listeningPort: number | undefined;
  // A URL that answers /health as a router (any router's id) is refused as a worker, as is
  // this router's own port on a local address.
  const workerUrlPolicy = new WorkerUrlPolicy({
    allow: config.workerAllow,
    ownPort: () => listeningPort,
    localHosts: () => [...choices.localHosts()],
    fetch: (u, init) => fetch(u, init),
  });
  // Sub-millisecond epoch time for access lines and spans; a runtime whose timeOrigin is not
  // the epoch (workerd's is 0, with now() already epoch time) falls back to Date.now().
  const origin = performance.timeOrigin ?? 0;
  const clock = Math.abs(origin + performance.now() - Date.now()) < 60_000 ? () => origin + performance.now() : () => Date.now();
  const decisions = new DecisionLog({
    policy: router.pipeline.name,
    costs: router.pipeline.costs,
    blockSize: config.blockSize,
    overlapWeight: router.scheduler.overlapScoreWeight,
  });
  const recent = new RecentStats(clock);
  const observe = new RequestObservers({
    log,
    accessLines: config.logLevel === "debug" || config.logLevel === "info",
    metrics: new RequestMetrics(metrics.registry),
    tracer: choices.tracer,
    sampleRatio: config.otlpSampleRatio,
    decisions,
    recent,
    clock,
    blockSize: config.blockSize,
    workerUrl: (id) => registry.get(id)?.url,
  });
  // What the status page reads beside GET /v1/workers (src/observe/status-routes.ts).
  const status: StatusSource = {
    decisions,
    recent,
    build: buildInfo(),
    policy: config.policy,
    blockSize: config.blockSize,
    workers: () => registry.list(),
    ejectedUntil: (id) => outliers.ejectedUntil(id),
    now,
    admissionQueue: () => admission.size,
    sessions: () => memorySessions?.().held,
  };
  const deadlines = {
    connectMs: config.connectTimeout * 1000,
    firstByteMs: config.firstByteTimeout * 1000,
    responseMs: config.responseTimeout * 1000,
    streamIdleMs: config.streamIdleTimeout * 1000,
  };
  const plainFetch = (url: string, init: RequestInit) => fetch(url, init);
  // Engine answers tried again elsewhere, within one fleet-wide budget (edge/proxy/retry-policy.ts)
  // that every app of this router (one per runtime entry) shares.
  const retry = { statuses: new Set(config.retryOn), budget: new RetryBudget({ percent: config.retryBudget, minPerSecond: RETRY_FLOOR_PER_SECOND, now }) };
  const edgeDeps = (rt: RuntimeEdge): EdgeDeps => ({
    access: { adminToken: config.adminToken, peer: rt.peer, routerId: routerIdHex(routerId), draining: () => draining, unready: () => unready },
    limits: { maxBodyBytes: config.maxBodyBytes, maxPromptChars: config.maxPromptChars, maxSessionIdLength: config.maxSessionIdLength },
    fleet: { registry, models, lora: adapters, tokenizers },
    router,
    upstream: {
      call: rt.upstream ?? fetchUpstream(plainFetch),
      // The router's own read of engines' model lists: no redirects, as on its other own calls.
      fetch: ownFetch,
      deadlines,
      maxRetries: config.maxRetries,
      retry,
      directStreams: rt.directStreams,
      keepOpen: rt.keepOpen,
    },
    outcomes: { fence: (id, reason) => health.fence(id, reason), report: (id, failure) => health.report(id, failure) },
    observe: { metrics, log, requests: observe, status },
    admin: { membership, provisioner: rt.provisioner, workerUrlPolicy, workerDetails: rt.workerDetails, peekSession: (id) => store.peek(id), now },
    disagg: rt.disagg,
    tenants: tenants?.guard,
  });

  const timers: ReturnType<typeof setInterval>[] = [];
  return {
    now,
    metrics,
    registry,
    router,
    membership,
    health,
    admission,
    observe,
    decisions,
    recent,
    edgeDeps,
    engineHeaders,
    listeningOn: (port) => {
      listeningPort = port;
    },
    stopReadiness() {
      unready = true;
    },
    startDraining() {
      draining = true;
      health.stop();
    },
    async registerAll(workerUrls) {
      await Promise.all(
        workerUrls.map((u) => membership.register({ url: u }).catch((e) => log.error(`cannot register worker ${u}: ${(e as Error).message}`))),
      );
    },
    startChecks() {
      health.start();
      loopLag.start();
      timers.push(setInterval(() => router.expireLoad(now()), LOAD_EXPIRY_EVERY_MS));
      if (config.policy === "approx" || approxIndex !== undefined) timers.push(setInterval(() => router.expireApprox(now()), APPROX_EXPIRE_EVERY_MS));
    },
    stopWork() {
      draining = true;
      loopLag.stop();
      for (const t of timers) clearInterval(t);
      health.stop();
      admission.close();
      tenants?.stop();
    },
    async close() {
      await tenants?.close();
      await loadSync?.stop();
      await claimsConnection?.close();
      await store.close();
    },
  };
}
