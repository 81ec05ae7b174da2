/**
 * The router on Bun: `serve(config, log)` builds everything with Bun's implementations (the
 * native hasher over bun:ffi when the library loads, ZMQ event streams, RESP or REST Redis,
 * embedded simulated engines, the workers-file watch, tokenizer files and worker pools, pooled
 * upstream sockets) around the decision room (src/router createRouter) and the HTTP app
 * (src/app createApp), and serves it with Bun.serve (hot completion routes natively). The
 * command line that calls it is src/main.ts; Deno's and workerd's entries are beside this file.
 */
import { createApp, createFastRoutes } from "../app/app.ts";
import { bindClusterMetrics } from "../app/cluster-metrics.ts";
import { hostname, networkInterfaces } from "node:os";
import { WorkerUrlPolicy } from "../workers/url-policy.ts";
import type { AppDeps } from "../app/deps.ts";
import type { Logger } from "../app/log.ts";
import { fetchUpstream } from "../app/proxy/upstream.ts";
import { EVENT_BATCH_MIN_LIMIT_BYTES } from "../app/routes/admin.ts";
import { createRouter } from "../router/create-router.ts";
import type { Config } from "../config/schema.ts";
import { portableBatchHasher, type BatchBlockHasher } from "../core/hashing.ts";
import { kvQueryClient } from "../events/kv-query-client.ts";
import { ZmqEventSources } from "../events/zmq/sources.ts";
import { AdmissionGate } from "../app/routing/admission-gate.ts";
import type { WorkerId, WorkerKey } from "../core/ids.ts";
import { busyEngineRanks, waitingByRank } from "../workers/engine-metrics.ts";
import { EngineMetricsScraper } from "../workers/engine-metrics-scraper.ts";
import { WorkerProvisioner } from "../workers/provisioner.ts";
import { WorkersFileWatch } from "../workers/workers-file-watch.ts";
import { watch } from "node:fs";
import { AdapterLoader } from "../lora/adapter-loader.ts";
import { AdapterAllowlist } from "../lora/adapter-name.ts";
import { LoraStateTracker } from "../lora/state-tracker.ts";
import { bindCollectors } from "../metrics/collectors.ts";
import { RouterMetrics } from "../metrics/names.ts";
import { startMocker, type MockerHandle } from "../mocker/index.ts";
import { createNativeBlockHasher } from "../native/hasher.ts";
import { loadNativeLibrary } from "../native/library.ts";
import { MemoryAffinityStore } from "../sessions/memory-store.ts";
import { openRedisAffinityStore, type RedisStoreStats } from "../sessions/redis-store.ts";
import { openRespConnection } from "../sessions/resp-client.ts";
import type { AffinityStore, OnExpire, StoreClock } from "../sessions/store.ts";
import { StickyRouter } from "../sessions/sticky.ts";
import { randomRouterId, startLoadSync, type LoadSync } from "../sync/load-sync.ts";
import { openPubSubTransport } from "../sync/pubsub-transport.ts";
import { fetchEngineInfo } from "../workers/engine-info.ts";
import { WorkerRoles } from "../app/disagg/roles.ts";
import { engineLoraClient } from "../workers/engine-lora.ts";
import { engineSessions } from "../workers/engine-sessions.ts";
import { SocketHttpClient } from "../upstream/socket-client.ts";
import { HealthChecker } from "../workers/health.ts";
import { RestartDetector } from "../workers/restart-detector.ts";
import { OutlierDetector } from "../workers/outlier-detector.ts";
import { WorkerMembership } from "../workers/membership.ts";
import { WorkerRegistry } from "../workers/registry.ts";
import { fetchServedModels, ModelDirectory } from "../workers/models.ts";
import { RouterTokenizers } from "../app/routing/tokenizers.ts";
import { loadEngineTokenizerOnBun } from "../tokens/bun.ts";
import { defaultEncodeWorkers } from "../tokens/encode-pool.ts";

/** How often the approximate index drops expired decisions. */
const APPROX_EXPIRE_EVERY_MS = 1_000;
/** How often stale bookings (never freed, spec §4.5: 300 s) are swept. */
const LOAD_EXPIRY_EVERY_MS = 30_000;
/** How often a drain looks whether requests are still in flight. */
const DRAIN_POLL_MS = 25;
/** Outlier ejection: answers a worker needs in an interval before its failure share counts, and the interval. */
const OUTLIER_REQUEST_VOLUME = 20;
const OUTLIER_INTERVAL_MS = 10_000;
/** Registration and recovery queries must not hang on a dead engine. */
const ENGINE_QUERY_TIMEOUT_MS = 5_000;

/** The in-memory session store's clock: wall time, so /debug/sessions shows real expiries. */
const wallClock: StoreClock = {
  now: () => Date.now(),
  every(ms, fn) {
    const t = setInterval(fn, ms);
    return () => clearInterval(t);
  },
};

/** The hasher for request block hashes: the C library's when it loads, else TypeScript. */
function chooseHasher(log: Logger): BatchBlockHasher {
  const lib = loadNativeLibrary();
  if (lib.ok) {
    log.info("block hasher: native", { library: lib.library.path });
    return createNativeBlockHasher(lib.library);
  }
  log.info(`block hasher: portable TypeScript (native library ${lib.reason})`, { detail: lib.message });
  return portableBatchHasher;
}

interface BuiltStore {
  readonly store: AffinityStore;
  /** In memory only: bindings held and dropped for --max-sessions, for /metrics. */
  readonly memory?: () => { readonly held: number; readonly evicted: number };
  /** Redis only: availability and failed calls, for /metrics. */
  readonly stats?: () => RedisStoreStats;
}

/**
 * THE seam for the session store: Redis (shared by every router; an expired engine-backed
 * session is claimed by exactly one of them) with --redis, else in-memory (this router
 * only). Redis being down at start is not an error: the store degrades and recovers.
 */
async function buildAffinityStore(config: Config, log: Logger, onExpire: OnExpire): Promise<BuiltStore> {
  const logger = { warn: (m: string, f?: Record<string, unknown>) => log.warn(m, f) };
  const reaperIntervalMs = config.sessionReaperInterval * 1000;
  if (config.redis === undefined) {
    const store = new MemoryAffinityStore({ clock: wallClock, onExpire, reaperIntervalMs, logger, maxSessions: config.maxSessions });
    return { store, memory: () => ({ held: store.size, evicted: store.evicted }) };
  }
  const store = await openRedisAffinityStore({
    url: config.redis,
    token: config.redisToken,
    resp: openRespConnection, // redis:// is Bun's RedisClient; the portable runtimes pass none
    commandTimeoutMs: config.redisTimeout * 1000,
    onExpire,
    reaperIntervalMs,
    logger,
  });
  log.info("sticky sessions: shared Redis store", { redis: redactUrl(config.redis), available: store.stats().available });
  return { store, stats: () => store.stats() };
}

/**
 * fetch for the router's own calls to engines (engine info, /kv/query, LoRA load/unload,
 * engine sessions): with `--engine-token`, it sends that token; never the admin token.
 */
function engineFetch(token: string | undefined): (url: string, init?: RequestInit) => Promise<Response> {
  if (token === undefined) return (url, init) => fetch(url, init);
  return (url, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${token}`);
    return fetch(url, { ...init, headers });
  };
}

/** A URL fit for logs: no password. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparseable URL)";
  }
}


/** GET /v1/workers extras: the worker's ZMQ event subscription and its engine's own load. */
function workerDetails(
  id: WorkerId,
  zmq: ZmqEventSources,
  scraper: EngineMetricsScraper | undefined,
  busy: ReadonlySet<WorkerKey> | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const kv = zmq.describe(id);
  if (kv) out.kv_events = kv;
  const r = scraper?.report(id);
  if (r) {
    out.engine_metrics = {
      engine: r.load?.engine ?? null,
      ...(r.at !== undefined ? { age_ms: Math.round(performance.now() - r.at) } : {}),
      ...(r.error !== undefined ? { error: r.error } : {}),
      ranks: (r.load?.ranks ?? []).map((x) => ({
        dp_rank: x.dpRank,
        running: x.running ?? null,
        waiting: x.waiting ?? null,
        kv_usage: x.kvUsage ?? null,
        busy: busy?.has(`${id}:${x.dpRank}`) ?? false,
      })),
    };
  }
  return out;
}

/** switchyard_engine_load{worker,dp_rank,metric}: the last scraped load of every worker. */
function bindEngineLoadMetrics(metrics: RouterMetrics, scraper: EngineMetricsScraper, workers: () => readonly { id: WorkerId }[]): void {
  metrics.engineMetric.onCollect((g) => {
    g.reset();
    for (const w of workers()) {
      for (const r of scraper.report(w.id)?.load?.ranks ?? []) {
        const labels = (m: string) => [String(w.id), String(r.dpRank), m];
        if (r.running !== undefined) g.set(labels("running"), r.running);
        if (r.waiting !== undefined) g.set(labels("waiting"), r.waiting);
        if (r.kvUsage !== undefined) g.set(labels("kv_usage"), r.kvUsage);
      }
    }
  });
}

/** An address clients on this machine can use for a listen address (wildcards -> loopback). */
function reachableHost(host: string): string {
  if (host === "0.0.0.0") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

/** Start-up refused for a reason the operator can fix (printed as one line, no stack). */
export class StartupError extends Error {
  override readonly name = "StartupError";
}

export interface RunningRouter {
  readonly url: string;
  readonly port: number;
  /**
   * Graceful shutdown: new requests are refused (503 `draining`, retryable), /health answers
   * 503 "draining", in-flight requests (streams included) get up to `timeoutMs` to finish;
   * then stop(). Resolves whether all finished.
   */
  drain(timeoutMs: number): Promise<boolean>;
  stop(): Promise<void>;
}

/** Build everything and serve; resolves once the server listens and start-up workers are registered. */
export async function serve(config: Config, log: Logger): Promise<RunningRouter> {
  const now = () => performance.now();
  const metrics = new RouterMetrics();
  const hasher = chooseHasher(log);
  const registry = new WorkerRegistry();
  // Which models each worker serves (GET /v1/models at registration and every health check).
  const models = new ModelDirectory();
  // Text the router cannot tokenize as the engine does is routed on its own decisions, apart.
  // The models' tokenizers: loaded now, never per request (the pure encoder, src/tokens/README.md).
  const tokenizers = new RouterTokenizers({
    // Prompts of 32k+ characters encode in a pool of Workers (src/tokens/encode-pool.ts) unless --tokenizer-workers 0.
    load: (dir) =>
      loadEngineTokenizerOnBun(dir, {
        impl: config.tokenizerLibrary === "native" ? "native" : "pure",
        byteLevelBpe: config.tokenizerLibrary === "bpe",
        encodePool: config.tokenizerWorkers === 0 ? undefined : { workers: config.tokenizerWorkers ?? defaultEncodeWorkers() },
      }),
    parentOf: (m) => models.parentOf(m),
    fetch: (u, init) => fetch(u, init),
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
  // With Redis, routers share their active load; each needs its own id in those messages.
  const routerId = config.redis !== undefined ? randomRouterId() : undefined;
  const lora = new LoraStateTracker({ logger: { warn: (m, f) => log.warn(m, f) } });
  const adapters = new AdapterLoader({
    tracker: lora,
    engine: engineLoraClient({ fetch: engineFetch(config.engineToken) }),
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
    fetch: engineFetch(config.engineToken),
    urlOf: (id) => registry.get(id)?.url,
    timeoutMs: ENGINE_QUERY_TIMEOUT_MS,
    warn: (m) => log.warn(m),
    onResult: (action, ok) => clusterMetrics?.engineSessionCalls.inc([action, ok ? "ok" : "error"]),
  });
  const { store, stats: storeStats, memory: memorySessions } = await buildAffinityStore(config, log, (sessionId, binding) => {
    // Exactly one router gets here per expired engine-backed session (Redis claim).
    clusterMetrics?.sessionsExpired.inc();
    log.info(`session ${sessionId} expired; closing it on worker ${binding.worker.workerId}`);
    sessions.close(binding.worker.workerId, sessionId);
  });
  const sticky = new StickyRouter(store, { maxSessionIdLength: config.maxSessionIdLength });
  // The router's own calls to engines carry --engine-token, never the admin token: every
  // registered worker would learn it otherwise (issue 12).
  const engineHeaders: Record<string, string> = config.engineToken ? { authorization: `Bearer ${config.engineToken}` } : {};
  let engineBusy: ReadonlySet<WorkerKey> | undefined;
  let engineWaiting: ReadonlyMap<WorkerKey, number> | undefined;
  // The decision room (src/router): index, load, scheduler, routing, recovery, bookings.
  const router = createRouter(
    {
      policy: config.policy,
      scheduler: {
        blockSize: config.blockSize,
        overlapScoreWeight: config.overlapWeight,
        temperature: config.temperature,
        loadGuardFactor: config.loadGuard,
        loadGuardMetric: config.loadGuardMetric,
        activeRequestWeight: config.activeRequestWeight,
        busyThreshold: config.busyThreshold,
        inflightOverlap: config.inflightOverlap,
        overlapCredit: config.overlapCredit,
        prefillWaitFactor: config.prefillWaitFactor,
        prefillWaitQueueShare: config.prefillWaitSlack,
        engineWaitingWeight: config.engineLoadWeight,
      },
      approxTtlMs: config.approxTtl * 1000,
      sessionTtlMs: config.sessionTtl * 1000,
      routerId,
      capacityTokens: config.workerCapacity ?? undefined,
    },
    {
      hasher,
      now,
      rng: Math.random,
      workers: registry,
      sticky,
      metrics,
      query: kvQueryClient({ urlOf: (id) => registry.get(id)?.url, timeoutMs: ENGINE_QUERY_TIMEOUT_MS, headers: engineHeaders }),
      sleep: (ms) => Bun.sleep(ms),
      warn: (m) => log.warn(m),
      engineSessions: sessions,
      busyKeys: () => engineBusy,
      engineWaiting: () => engineWaiting,
      onDropped: (reason, n) => metrics.eventDropped(reason, n),
    },
  );
  const { index, approxIndex, tracker } = router;

  // Passive health: workers whose answers keep failing are ejected (workers/outlier-detector.ts).
  const outliers = new OutlierDetector(
    {
      consecutiveFailures: config.outlier.consecutiveFailures,
      failurePercent: config.outlier.failurePercent,
      requestVolume: OUTLIER_REQUEST_VOLUME,
      intervalMs: OUTLIER_INTERVAL_MS,
      baseEjectionMs: config.outlier.baseEjectionTime * 1000,
      maxEjectionMs: config.outlier.maxEjectionTime * 1000,
      maxEjectionPercent: config.outlier.maxEjectionPercent,
    },
    () => registry.size,
  );
  const health = new HealthChecker({
    registry,
    intervalMs: config.healthInterval * 1000,
    timeoutMs: config.healthTimeout * 1000,
    outliers,
    now,
    onEject: (e) => {
      metrics.workerEjections.inc([String(e.workerId)]);
      log.warn(`worker ${e.workerId} ejected for ${(e.untilMs - now()) / 1000} s`, { reason: e.reason, ejection: e.multiplier });
    },
    onChange: (id, healthy, reason) =>
      healthy ? log.info(`worker ${id} is healthy`) : log.warn(`worker ${id} is unhealthy`, { reason }),
    afterHealthy: async (id, url, signal) => {
      const readModels = async () => {
        const served = await fetchServedModels(url, signal, (u, init) => fetch(u, init));
        if (registry.has(id) && models.set(id, served)) log.info(`worker ${id} serves ${served.map((m) => m.id).join(", ")}`);
      };
      // Before the worker is marked healthy: a restarted engine's old blocks leave the index first.
      await Promise.all([readModels(), restarts.check(id, url, signal)]);
    },
  });
  // An engine restarted while idle sends no event: its instance id changing tells us (issue 12).
  const restarts = new RestartDetector({
    probe: async (url) => (await fetchEngineInfo(url, config.healthTimeout * 1000, engineFetch(config.engineToken))).instanceId,
    onRestart: (id, previous, current) => {
      const w = registry.get(id);
      if (w === undefined) return;
      log.warn(`worker ${id} restarted (engine instance ${previous} -> ${current}); its blocks leave the index until restored`);
      for (let r = 0; r < w.dpRanks; r++) router.members.addRank(id, r, true);
    },
  });
  // Disaggregated prefill/decode (src/app/disagg): roles from flags first, engine info after.
  const roles = new WorkerRoles();
  for (const u of config.prefillWorkers) roles.set(u, "prefill");
  for (const u of config.decodeWorkers) roles.set(u, "decode");
  const membership = new WorkerMembership({
    registry,
    blockSize: config.blockSize,
    load: router.members,
    recovery: router.members,
    lora,
    engineInfo: async (url) => {
      const info = await fetchEngineInfo(url, ENGINE_QUERY_TIMEOUT_MS, engineFetch(config.engineToken));
      roles.learn(url, info); // a role the engine reports (--disagg); flags win
      return info;
    },
    models: { directory: models, fetch: (url) => fetchServedModels(url, AbortSignal.timeout(ENGINE_QUERY_TIMEOUT_MS), (u, init) => fetch(u, init)) },
    onAdded: (w) => {
      log.info(`worker ${w.id} registered`, { url: w.url, dp_ranks: w.dpRanks, healthy: w.healthy });
      void restarts.check(w.id, w.url, AbortSignal.timeout(config.healthTimeout * 1000)); // the instance to compare with
      if (!w.healthy) void health.check(w.id);
      // Where the engine serves /tokenize, check that it tokenizes like our tokenizer.
      const base = models.of(w.id)?.find((m) => m.parent === null)?.id ?? w.model;
      void tokenizers.check(w.id, w.url, base).then((c) => {
        if (c?.status === "mismatch") log.warn(`worker ${w.id}: tokenizer_mismatch`, { url: w.url, detail: c.detail });
      });
    },
    onRemoved: (w) => {
      health.forget(w.id);
      restarts.forget(w.id);
      void zmqSources.unsubscribe(w.id); // its event stream ends with it (issue 13)
      tokenizers.forget(w.id);
      log.info(`worker ${w.id} removed`, { url: w.url });
    },
    warn: (m) => log.warn(m),
  });
  // Workers added at run time with kv_events get their ZMQ streams here (issue 13).
  const zmqSources = new ZmqEventSources({
    blockSize: config.blockSize,
    hasher,
    log,
    onEvents: (events) => void router.ingestLossy(events),
  });
  const provisioner = new WorkerProvisioner({ membership, sources: zmqSources, setRole: (url, role) => roles.set(url, role) });
  // Busy and admission (issue 13): the engines' own load, scraped from their /metrics, makes
  // a rank busy past --busy-threshold (KV usage) or --busy-waiting (queued requests); when
  // every candidate is busy, requests wait in the admission queue.
  const admissionWait = metrics.admissionWait.series([]);
  const admission = new AdmissionGate({
    maxQueue: config.maxQueue,
    timeoutMs: config.queueTimeout * 1000,
    now,
    onAdmitted: (ms) => admissionWait.observe(ms / 1000),
    onRejected: (reason) => metrics.admissionRejections.inc([reason]),
  });
  metrics.admissionQueueLength.onCollect((g) => g.set([], admission.size));
  const busyLimits = { kvUsage: config.busyThreshold ?? undefined, waiting: config.busyWaiting ?? undefined };
  const scraper =
    config.engineMetricsInterval > 0
      ? new EngineMetricsScraper({
          workers: () => registry.list(),
          intervalMs: config.engineMetricsInterval * 1000,
          fetch: (u, init) => fetch(u, { ...init, headers: engineHeaders }),
          now,
          warn: (m) => log.warn(m),
          onRound: () => {
            engineBusy = busyEngineRanks(scraper!.freshLoads(), busyLimits);
            if (config.engineLoadWeight > 0) engineWaiting = waitingByRank(scraper!.freshLoads());
            admission.pump();
          },
        })
      : undefined;
  if (scraper) bindEngineLoadMetrics(metrics, scraper, () => registry.list());
  bindCollectors(metrics, { index, tracker, workers: () => registry.list(), now });
  let loadSync: LoadSync | undefined;
  if (config.redis !== undefined && routerId !== undefined) {
    loadSync = await startLoadSync({
      url: config.redis,
      token: config.redisToken,
      pubsub: openPubSubTransport,
      commandTimeoutMs: config.redisTimeout * 1000,
      tracker,
      routerId,
      now,
      log,
    });
    log.info("active load: shared with the other routers through Redis", { router_id: routerId.toString() });
  }
  const syncStats = loadSync && (() => loadSync.stats());
  clusterMetrics = bindClusterMetrics(metrics, { store: storeStats, loadSync: syncStats, lora: () => adapters.counters, memorySessions });

  let server: ReturnType<typeof Bun.serve> | undefined;
  // Proxied requests go over pooled sockets on this thread (Bun's fetch hands each request
  // to its own client thread, which costs ~20 µs of CPU per request); https engines use fetch.
  const upstreamClient = new SocketHttpClient({
    fallback: fetchUpstream((u, init) => fetch(u, init)),
    connectTimeoutMs: config.connectTimeout * 1000,
  });
  let draining = false;
  // Who this router is, on every /health answer: a URL that answers with it (or any router's
  // id) is refused as a worker, as is this router's own port on a local address (issue 12).
  const routerIdentity = crypto.getRandomValues(new BigUint64Array(1))[0]!.toString(16);
  const workerUrlPolicy = new WorkerUrlPolicy({
    allow: config.workerAllow,
    ownPort: () => server?.port,
    localHosts: () => [hostname(), ...Object.values(networkInterfaces()).flatMap((l) => (l ?? []).map((a) => a.address))],
    fetch: (u, init) => fetch(u, init),
  });
  const deps: AppDeps = {
    maxBodyBytes: config.maxBodyBytes,
    maxSessionIdLength: config.maxSessionIdLength,
    routerId: routerIdentity,
    workerUrlPolicy,
    adminToken: config.adminToken,
    maxRetries: config.maxRetries,
    registry,
    membership,
    fence: (id, reason) => health.fence(id, reason),
    router,
    metrics,
    lora: adapters,
    models,
    tokenizers,
    peekSession: (id) => store.peek(id),
    disagg:
      config.disagg === "off"
        ? undefined
        : { protocol: config.disagg, roles, minPrefillTokens: config.disaggMinPrefillTokens, blockSize: config.blockSize, defaultBootstrapPort: config.bootstrapPort },
    peer: (req) => server?.requestIP(req)?.address,
    fetch: (url, init) => fetch(url, init),
    upstream: upstreamClient.call,
    directStreams: true,
    deadlines: {
      connectMs: config.connectTimeout * 1000,
      firstByteMs: config.firstByteTimeout * 1000,
      responseMs: config.responseTimeout * 1000,
      streamIdleMs: config.streamIdleTimeout * 1000,
    },
    report: (id, failure) => health.report(id, failure),
    keepOpen: (req) => server?.timeout(req, 0),
    draining: () => draining,
    admission,
    provisioner,
    workerDetails: (id) => workerDetails(id, zmqSources, scraper, engineBusy),
    now,
    log,
  };
  const app = createApp(deps);
  server = Bun.serve({
    port: config.port,
    hostname: config.host,
    // A client must send its request (head and body) within about this long, or it is cut:
    // slow-body clients cannot pile up. Proxied requests lift it once their body is read
    // (deps.keepOpen), as their answers stream; the upstream deadlines bound them instead.
    idleTimeout: config.idleTimeout,
    // Our own limits answer 413 in OpenAI's shape; Bun's must not trip first.
    maxRequestBodySize: Math.max(config.maxBodyBytes, EVENT_BATCH_MIN_LIMIT_BYTES) + 1024 * 1024,
    // The proxied endpoints are matched natively; everything else goes through the app.
    routes: createFastRoutes(deps),
    fetch: (req) => app.fetch(req),
  });
  const port = server.port!;
  const url = `http://${reachableHost(config.host)}:${port}`;

  const mockers: MockerHandle[] = [];
  for (let i = 0; i < config.engines; i++) {
    mockers.push(
      await startMocker({
        port: 0,
        host: "127.0.0.1",
        blockSize: config.blockSize,
        routerUrl: url,
        adminToken: config.adminToken,
        speedup: config.engineSpeedup,
        // The embedded engines tokenize with the default tokenizer, as the router does.
        tokenizer: config.tokenizers.find((t) => t.model === undefined)?.path,
        seed: i + 1,
        log: (line) => log.warn(`[engine ${i}] ${line}`),
      }),
    );
  }
  const startup = [...config.workers, ...config.prefillWorkers, ...config.decodeWorkers, ...mockers.map((m) => m.url)];
  await Promise.all(
    startup.map((u) =>
      membership.register({ url: u }).catch((e) => log.error(`cannot register worker ${u}: ${(e as Error).message}`)),
    ),
  );
  for (const z of config.zmqEndpoints) {
    try {
      // vLLM serves no /kv/query: its part of the index comes from its events only.
      await provisioner.register({
        url: z.workerUrl,
        kvEvents: { endpoint: z.endpoint, replayEndpoint: z.replayEndpoint, dpRanks: z.dpRanks, topic: "" },
      });
    } catch (e) {
      log.error(`cannot subscribe to the KV events of ${z.workerUrl} at ${z.endpoint}: ${(e as Error).message}`);
    }
  }
  const workersFile =
    config.workersFile === undefined
      ? undefined
      : new WorkersFileWatch({
          path: config.workersFile,
          readFile: (p) => Bun.file(p).text(),
          parseYaml: (t) => Bun.YAML.parse(t),
          watchDir: (dir, onChange) => {
            const w = watch(dir, () => onChange());
            return () => w.close();
          },
          register: (spec) => provisioner.register(spec),
          remove: (id) => provisioner.remove(id),
          isRegistered: (id) => registry.has(id),
          now,
          log,
        });
  await workersFile?.start();
  health.start();
  scraper?.start();

  const timers = [
    setInterval(() => router.expireLoad(now()), LOAD_EXPIRY_EVERY_MS),
  ];
  if (config.policy === "approx" || approxIndex !== undefined) timers.push(setInterval(() => router.expireApprox(now()), APPROX_EXPIRE_EVERY_MS));

  log.info(`switchyard listening on ${url}`, { policy: config.policy, workers: registry.size, block_size: config.blockSize });
  const running: RunningRouter = {
    url,
    port,
    async drain(timeoutMs) {
      draining = true;
      health.stop();
      // Still listening: probes see 503 "draining", new requests a retryable 503 (app.ts).
      // Bun's stop(false) would close the listener and idle connections at once.
      const end = performance.now() + timeoutMs;
      while (server!.pendingRequests > 0 && performance.now() < end) await Bun.sleep(DRAIN_POLL_MS);
      const finished = server!.pendingRequests === 0;
      log.info(finished ? "drained: every in-flight request finished" : `drain timeout (${timeoutMs / 1000} s): cutting what is left`);
      await running.stop();
      return finished;
    },
    async stop() {
      for (const t of timers) clearInterval(t);
      health.stop();
      workersFile?.stop();
      scraper?.stop();
      admission.close();
      server?.stop(true);
      upstreamClient.closeIdle();
      await zmqSources.stopAll();
      await loadSync?.stop();
      await Promise.all(mockers.map((m) => m.stop()));
      await store.close();
    },
  };
  return running;
}
