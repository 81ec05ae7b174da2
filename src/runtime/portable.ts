/**
 * The router on a runtime that is not Bun (src/runtime/deno.ts today): the same decision room
 * (createRouter) and the same HTTP app (createApp) as src/main.ts, built only from portable
 * pieces — the portable TypeScript block hasher, the in-memory session store or, with
 * `--redis https://…`, the shared Redis store and active-load sync over Upstash's REST protocol
 * (fetch only; load sync through a polled Redis Stream), KV events over HTTP (POST
 * /v1/kv/events, recovery queries with fetch), upstream calls with fetch, and the pure-JS
 * tokenizer where the platform can read files (Deno: `readText`). What needs Bun (the native
 * hasher over bun:ffi, ZMQ, RESP Redis — `redis://` — embedded engines, the workers file watch,
 * the tokenizer worker pool, Bun's direct streams) is refused by name before anything starts
 * (`refusedFlags`, `refusedValues`). The RESP openers are never imported here: Bun's entry
 * injects them (src/sessions/redis-client.ts, src/sync/transport.ts).
 *
 * The runtime entry passes `serve` (its HTTP server) and `sleep`; everything else is here.
 */
import { createApp } from "../app/app.ts";
import { bindClusterMetrics } from "../app/cluster-metrics.ts";
import type { AppDeps } from "../app/deps.ts";
import type { Logger } from "../app/log.ts";
import { AdmissionGate } from "../app/routing/admission-gate.ts";
import { RouterTokenizers } from "../app/routing/tokenizers.ts";
import { loadEngineTokenizer } from "../tokens/load.ts";
import type { Config } from "../config/schema.ts";
import { scanFlags } from "../core/flag-scan.ts";
import { portableBatchHasher } from "../core/hashing.ts";
import { kvQueryClient } from "../events/kv-query-client.ts";
import { AdapterLoader } from "../lora/adapter-loader.ts";
import { AdapterAllowlist } from "../lora/adapter-name.ts";
import { LoraStateTracker } from "../lora/state-tracker.ts";
import { bindCollectors } from "../metrics/collectors.ts";
import { RouterMetrics } from "../metrics/names.ts";
import { createRouter } from "../router/create-router.ts";
import { MemoryAffinityStore } from "../sessions/memory-store.ts";
import { openRedisAffinityStore, type RedisStoreStats } from "../sessions/redis-store.ts";
import type { AffinityStore, OnExpire, StoreClock } from "../sessions/store.ts";
import { randomRouterId, startLoadSync, type LoadSync } from "../sync/load-sync.ts";
import { StickyRouter } from "../sessions/sticky.ts";
import { fetchEngineInfo } from "../workers/engine-info.ts";
import { engineLoraClient } from "../workers/engine-lora.ts";
import { engineSessions } from "../workers/engine-sessions.ts";
import { HealthChecker } from "../workers/health.ts";
import { WorkerMembership } from "../workers/membership.ts";
import { fetchServedModels, ModelDirectory } from "../workers/models.ts";
import { OutlierDetector } from "../workers/outlier-detector.ts";
import { WorkerRegistry } from "../workers/registry.ts";
import { WorkerUrlPolicy } from "../workers/url-policy.ts";

/** Flags (and the environment variables that set them) that need Bun; refused by name elsewhere. */
export const BUN_ONLY_FLAGS: Readonly<Record<string, string>> = {
  "--engines": "embedded simulated engines run on Bun's server",
  "--engine-speedup": "embedded simulated engines run on Bun's server",
  "--zmq-endpoint": "ZMQ event streams use libzmq over bun:ffi (send events over HTTP instead)",
  "--zmq-replay-endpoint": "ZMQ event streams use libzmq over bun:ffi",
  "--zmq-dp-ranks": "ZMQ event streams use libzmq over bun:ffi",
  "--workers-file": "the workers-file watch reads files with Bun",
  "--tokenizer-workers": "the encode pool uses Bun Workers",
  "--disagg": "disaggregated prefill/decode is wired by the Bun entry only",
  "--disagg-min-prefill-tokens": "disaggregated prefill/decode is wired by the Bun entry only",
  "--bootstrap-port": "disaggregated prefill/decode is wired by the Bun entry only",
  "--prefill-worker": "disaggregated prefill/decode is wired by the Bun entry only",
  "--decode-worker": "disaggregated prefill/decode is wired by the Bun entry only",
  "--engine-metrics-interval": "engine metrics scraping is wired by the Bun entry only",
  "--busy-waiting": "engine metrics scraping is wired by the Bun entry only",
  "--idle-timeout": "a client idle timeout is a Bun server option",
};

/** One problem per flag given on the command line that this runtime cannot honour. */
export function refusedFlags(argv: readonly string[], runtime: string, refused: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const item of scanFlags(argv, () => false)) {
    if ("flag" in item && refused[item.flag] !== undefined && !out.some((p) => p.startsWith(`${item.flag}:`))) {
      out.push(`${item.flag}: not available on ${runtime} (${refused[item.flag]})`);
    }
  }
  return out;
}

/**
 * Flag values this runtime cannot honour (a flag may be fine with one value, not another):
 * `--redis redis://…` needs RESP over TCP (Bun's RedisClient); `https://` (Upstash REST) works.
 * Checked on the parsed config, so the environment variables that set --redis count too.
 */
export function refusedValues(config: Pick<Config, "redis" | "tokenizerLibrary">, runtime: string): string[] {
  const out: string[] = [];
  const scheme = config.redis?.slice(0, config.redis.indexOf(":") + 1).toLowerCase();
  if (scheme === "redis:" || scheme === "rediss:") {
    out.push(`--redis: ${scheme}// is not available on ${runtime} (RESP needs Bun's RedisClient over TCP; use Upstash REST: --redis https://… --redis-token …)`);
  }
  if (config.tokenizerLibrary === "native") {
    out.push(`--tokenizer-library: native is not available on ${runtime} (HF's Rust addon loads on Bun/Node only; use hf or bpe)`);
  }
  return out;
}

export interface PortableServer {
  readonly port: number;
  stop(): Promise<void>;
}

export interface PortablePlatform {
  /** Listen on (host, port) and answer with `fetch`; `peer` gives a request's address when the runtime can tell. */
  serve(fetch: (req: Request) => Response | Promise<Response>, port: number, host: string): Promise<PortableServer>;
  readonly peer: (req: Request) => string | undefined;
  readonly sleep: (ms: number) => Promise<void>;
  /** Reads a text file (tokenizer directories); without it --tokenizer is refused. */
  readonly readText?: (path: string) => Promise<string>;
}

/** A start-up input the operator can fix (a tokenizer that cannot load): one line, exit 2. */
export class PortableStartupError extends Error {
  override readonly name = "PortableStartupError";
}

export interface PortableRouter {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

const LOAD_EXPIRY_EVERY_MS = 30_000;
const APPROX_EXPIRE_EVERY_MS = 1_000;
const ENGINE_QUERY_TIMEOUT_MS = 5_000;
const OUTLIER_REQUEST_VOLUME = 20;
const OUTLIER_INTERVAL_MS = 10_000;

const wallClock: StoreClock = {
  now: () => Date.now(),
  every(ms, fn) {
    const t = setInterval(fn, ms);
    return () => clearInterval(t);
  },
};

interface BuiltStore {
  readonly store: AffinityStore;
  readonly memory?: () => { held: number; evicted: number };
  readonly stats?: () => RedisStoreStats;
}

/**
 * The session store: Redis over Upstash REST with --redis (shared with every router, Bun's
 * included: the same keys and scripts), else in memory. As on Bun, Redis being down at start
 * is not an error: the store degrades and recovers. redis:// never gets here (refusedValues).
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
    commandTimeoutMs: config.redisTimeout * 1000,
    onExpire,
    reaperIntervalMs,
    logger,
  });
  log.info("sticky sessions: shared Redis store (Upstash REST)", { redis: new URL(config.redis).origin, available: store.stats().available });
  return { store, stats: () => store.stats() };
}

export async function startPortableRouter(config: Config, platform: PortablePlatform, log: Logger): Promise<PortableRouter> {
  const now = () => performance.now();
  const metrics = new RouterMetrics();
  const registry = new WorkerRegistry();
  const models = new ModelDirectory();
  const engineHeaders: Record<string, string> = config.engineToken ? { authorization: `Bearer ${config.engineToken}` } : {};
  const engineFetch = (url: string, init: RequestInit = {}) =>
    fetch(url, config.engineToken ? { ...init, headers: { ...(init.headers as Record<string, string>), ...engineHeaders } } : init);
  const sessions = engineSessions({
    fetch: engineFetch,
    urlOf: (id) => registry.get(id)?.url,
    timeoutMs: ENGINE_QUERY_TIMEOUT_MS,
    warn: (m) => log.warn(m),
  });
  const { store, stats: storeStats, memory: memorySessions } = await buildAffinityStore(config, log, (sessionId, binding) =>
    sessions.close(binding.worker.workerId, sessionId),
  );
  // With --redis, routers (on any runtime) share their active load; each needs its own id.
  const loadRouterId = config.redis !== undefined ? randomRouterId() : undefined;
  const sticky = new StickyRouter(store, { maxSessionIdLength: config.maxSessionIdLength });
  // The models' tokenizers (pure JS, src/tokens), loaded now, never per request.
  const readText = platform.readText;
  if (config.tokenizers.length > 0 && readText === undefined) throw new PortableStartupError("--tokenizer: this runtime cannot read tokenizer files");
  const tokenizers = new RouterTokenizers({
    load: (dir) => loadEngineTokenizer(dir, { readText: readText!, now: () => Date.now(), byteLevelBpe: config.tokenizerLibrary === "bpe" }),
    parentOf: (m) => models.parentOf(m),
    fetch: (u, init) => fetch(u, init),
    timeoutMs: ENGINE_QUERY_TIMEOUT_MS,
  });
  for (const t of config.tokenizers) {
    try {
      const tok = await tokenizers.add(t.model, t.path);
      log.info(`tokenizer for ${t.model ?? "every model"}: ${tok.source}`, { implementation: tok.implementation });
    } catch (e) {
      throw new PortableStartupError(`--tokenizer ${t.model !== undefined ? `${t.model}=` : ""}${t.path}: ${(e as Error).message}`);
    }
  }
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
      capacityTokens: config.workerCapacity ?? undefined,
      routerId: loadRouterId,
    },
    {
      hasher: portableBatchHasher,
      now,
      rng: Math.random,
      workers: registry,
      sticky,
      metrics,
      query: kvQueryClient({ urlOf: (id) => registry.get(id)?.url, timeoutMs: ENGINE_QUERY_TIMEOUT_MS, headers: engineHeaders }),
      sleep: platform.sleep,
      warn: (m) => log.warn(m),
      engineSessions: sessions,
      onDropped: (reason, n) => metrics.eventDropped(reason, n),
    },
  );
  const { index, tracker } = router;
  const lora = new LoraStateTracker({ logger: { warn: (m, f) => log.warn(m, f) } });
  const adapters = new AdapterLoader({
    tracker: lora,
    engine: engineLoraClient({ fetch: engineFetch }),
    workers: () => registry.list().filter((w) => w.healthy),
    loadOnDemand: config.loraLoadOnDemand,
    isBaseModel: (name) => registry.isBaseModel(name) || models.isBase(name),
    pathTemplate: config.loraPath,
    evict: config.loraEvict,
    allow: new AdapterAllowlist(config.loraAllow),
    now,
    log,
  });
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
    onChange: (id, healthy, reason) => (healthy ? log.info(`worker ${id} is healthy`) : log.warn(`worker ${id} is unhealthy`, { reason })),
    afterHealthy: async (id, url, signal) => {
      const served = await fetchServedModels(url, signal, (u, init) => fetch(u, init));
      if (registry.has(id)) models.set(id, served);
    },
  });
  const membership = new WorkerMembership({
    registry,
    blockSize: config.blockSize,
    load: router.members,
    recovery: router.members,
    lora,
    engineInfo: (url) => fetchEngineInfo(url, ENGINE_QUERY_TIMEOUT_MS, engineFetch),
    models: { directory: models, fetch: (url) => fetchServedModels(url, AbortSignal.timeout(ENGINE_QUERY_TIMEOUT_MS), (u, init) => fetch(u, init)) },
    onAdded: (w) => {
      log.info(`worker ${w.id} registered`, { url: w.url, dp_ranks: w.dpRanks, healthy: w.healthy });
      if (!w.healthy) void health.check(w.id);
      // Where the engine serves /tokenize, check that it tokenizes like our tokenizer.
      const base = models.of(w.id)?.find((m) => m.parent === null)?.id ?? w.model;
      void tokenizers.check(w.id, w.url, base).then((c) => {
        if (c?.status === "mismatch") log.warn(`worker ${w.id}: tokenizer_mismatch`, { url: w.url, detail: c.detail });
      });
    },
    onRemoved: (w) => {
      health.forget(w.id);
      tokenizers.forget(w.id);
    },
    warn: (m) => log.warn(m),
  });
  const admission = new AdmissionGate({
    maxQueue: config.maxQueue,
    timeoutMs: config.queueTimeout * 1000,
    now,
    onRejected: (reason) => metrics.admissionRejections.inc([reason]),
  });
  bindCollectors(metrics, { index, tracker, workers: () => registry.list(), now });
  let loadSync: LoadSync | undefined;
  if (config.redis !== undefined && loadRouterId !== undefined) {
    // Over REST: a Redis Stream, XADD and a polled XREAD (src/sync/stream-transport.ts).
    loadSync = await startLoadSync({
      url: config.redis,
      token: config.redisToken,
      commandTimeoutMs: config.redisTimeout * 1000,
      tracker,
      routerId: loadRouterId,
      now,
      log,
    });
    log.info("active load: shared with the other routers through Redis", { router_id: loadRouterId.toString() });
  }
  const syncStats = loadSync && (() => loadSync.stats());
  bindClusterMetrics(metrics, { store: storeStats, loadSync: syncStats, lora: () => adapters.counters, memorySessions });

  let draining = false;
  let listeningPort: number | undefined;
  // As on Bun: /health says "I am a router", and POST /v1/workers refuses this router's own
  // address (loopback names only: the portable runtimes do not list network interfaces).
  const routerIdentity = crypto.getRandomValues(new BigUint64Array(1))[0]!.toString(16);
  const workerUrlPolicy = new WorkerUrlPolicy({
    allow: config.workerAllow,
    ownPort: () => listeningPort,
    localHosts: () => ["127.0.0.1", "localhost", "::1", config.host],
    fetch: (u, init) => fetch(u, init),
  });
  const deps: AppDeps = {
    routerId: routerIdentity,
    workerUrlPolicy,
    maxBodyBytes: config.maxBodyBytes,
    maxSessionIdLength: config.maxSessionIdLength,
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
    peer: platform.peer,
    fetch: (url, init) => fetch(url, init),
    deadlines: {
      connectMs: config.connectTimeout * 1000,
      firstByteMs: config.firstByteTimeout * 1000,
      responseMs: config.responseTimeout * 1000,
      streamIdleMs: config.streamIdleTimeout * 1000,
    },
    report: (id, failure) => health.report(id, failure),
    draining: () => draining,
    admission,
    now,
    log,
  };
  const app = createApp(deps);
  const server = await platform.serve((req) => app.fetch(req), config.port, config.host);
  listeningPort = server.port;
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${server.port}`;

  await Promise.all(
    config.workers.map((u) => membership.register({ url: u }).catch((e) => log.error(`cannot register worker ${u}: ${(e as Error).message}`))),
  );
  health.start();
  const timers = [
    setInterval(() => router.expireLoad(now()), LOAD_EXPIRY_EVERY_MS),
    setInterval(() => router.expireApprox(now()), APPROX_EXPIRE_EVERY_MS),
  ];
  log.info(`switchyard listening on ${url}`, { policy: config.policy, workers: registry.size, block_size: config.blockSize });
  return {
    url,
    port: server.port,
    async stop() {
      draining = true;
      for (const t of timers) clearInterval(t);
      health.stop();
      admission.close();
      await server.stop();
      await loadSync?.stop();
      await store.close();
    },
  };
}
