/**
 * The router core and what it is handed: engine-backed sessions and the session store (memory
 * or Redis), sticky routing, the admission gate, burst claims (--burst-claims) and createRouter
 * itself, with the gate woken by the router's own books. It starts no timer and no sync (sync.ts).
 */
import type { CacheTruthParts } from "./cache-truth.ts";
import type { ClusterMetrics } from "../../edge/cluster-metrics.ts";
import type { Config } from "../../config/schema.ts";
import type { RouterId } from "../../core/ids.ts";
import type { Logger } from "../../core/logger.ts";
import { kvQueryClient } from "../../fleet/events/kv-query-client.ts";
import { engineSessions } from "../../fleet/engine-sessions.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import { AdmissionGate, createRouter, StickyRouter } from "../../router/index.ts";
import { RedisBurstClaims } from "../../sync/burst-claim-store.ts";
import { openRedisConnection } from "../../sync/redis-client.ts";
import { buildAffinityStore, type BuiltStore } from "./affinity-store.ts";
import type { RuntimeChoices } from "./choices.ts";
import { ownFetch } from "./engine-fetch.ts";
import { ENGINE_QUERY_TIMEOUT_MS, type Fleet } from "./fleet.ts";

export interface RouterParts {
  readonly router: ReturnType<typeof createRouter>;
  readonly admission: AdmissionGate;
  /** The session store, its stats and (in memory) what it holds. */
  readonly sessions: BuiltStore;
  /** The burst claims' Redis connection, closed last. */
  readonly claimsConnection?: { close(): Promise<void> };
}

export interface RouterInputs {
  readonly metrics: RouterMetrics;
  readonly now: () => number;
  readonly routerId: RouterId;
  readonly fleet: Pick<Fleet, "registry" | "toEngines" | "engineHeaders">;
  /** The cluster metrics, once bound (they count engine session calls and expiries). */
  readonly clusterMetrics: () => ClusterMetrics | undefined;
  /** Routers heard through load sync (0 until it starts). */
  readonly otherRouters: () => number;
  /** The cache check's router ports (cache-truth.ts); without them: no check. */
  readonly cacheTruth?: CacheTruthParts["routerPorts"];
}

export async function buildRouter(
  config: Config,
  choices: RuntimeChoices,
  log: Logger,
  d: RouterInputs,
): Promise<RouterParts> {
  const { metrics, now, fleet } = d;
  const { registry } = fleet;
  const engineSessionCalls = engineSessions({
    fetch: fleet.toEngines,
    urlOf: (id) => registry.get(id)?.url,
    timeoutMs: ENGINE_QUERY_TIMEOUT_MS,
    warn: (m) => log.warn(m),
    onResult: (action, ok) =>
      d.clusterMetrics()?.engineSessionCalls.inc([action, ok ? "ok" : "error"]),
  });
  const sessions = await buildAffinityStore(config, choices, log, (sessionId, binding) => {
    // Exactly one router gets here per expired engine-backed session (Redis claim).
    d.clusterMetrics()?.sessionsExpired.inc();
    log.info(`session ${sessionId} expired; closing it on worker ${binding.worker.workerId}`);
    engineSessionCalls.close(binding.worker.workerId, sessionId);
  });
  const sticky = new StickyRouter(sessions.store, {
    maxSessionIdLength: config.maxSessionIdLength,
  });
  const admission = admissionGate(config, metrics, now);
  const { claims, connection } = await burstClaims(config, choices, log);
  // The router core (src/router): index, load, scheduler, routing, recovery, bookings.
  const router = createRouter(
    {
      policy: config.policy,
      // The routing knobs come grouped under the scheduler's own names (config/schema.ts).
      scheduler: { blockSize: config.blockSize, ...config.scheduler },
      approxTtlMs: config.approxTtl * 1000,
      sessionTtlMs: config.sessionTtl * 1000,
      routerId: d.routerId,
      capacityTokens: config.workerCapacity ?? undefined,
    },
    {
      hasher: choices.hasher,
      now,
      rng: Math.random,
      workers: registry,
      sticky,
      metrics,
      query: kvQueryClient({
        urlOf: (id) => registry.get(id)?.url,
        timeoutMs: ENGINE_QUERY_TIMEOUT_MS,
        headers: fleet.engineHeaders,
        fetch: ownFetch,
      }),
      sleep: choices.sleep,
      warn: (m) => log.warn(m),
      engineSessions: engineSessionCalls,
      busyKeys: choices.busyKeys,
      engineWaiting: choices.engineWaiting,
      onDropped: (reason, n) => metrics.eventDropped(reason, n),
      admission,
      claims,
      // The load sync starts later, once the router exists; until then this router is alone.
      otherRouters: d.otherRouters,
      ...d.cacheTruth,
    },
  );
  if (config.scheduler.busyThreshold !== null) pumpOnFreedLoad(router, admission);
  return { router, admission, sessions, claimsConnection: connection };
}

/** When every candidate is busy (the engines' own load, where the runtime scrapes it), requests wait here (routing.routeOrWait). */
export function admissionGate(
  config: Config,
  metrics: RouterMetrics,
  now: () => number,
): AdmissionGate {
  const admissionWait = metrics.admissionWait.series([]);
  return new AdmissionGate({
    maxQueue: config.maxQueue,
    timeoutMs: config.queueTimeout * 1000,
    now,
    timers: {
      set: (fn, ms) => setTimeout(fn, ms),
      clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
    },
    onAdmitted: (ms) => admissionWait.observe(ms / 1000),
    onRejected: (reason) => metrics.admissionRejections.inc([reason]),
    // Tenants exist only with --api-keys; without them every request is one tenant, in arrival order.
    fair: config.apiKeys !== undefined && config.fairAdmission,
  });
}

/** With --burst-claims, routers sharing a Redis claim their kv decisions there (src/router/books/burst-claims.ts). */
async function burstClaims(config: Config, choices: Pick<RuntimeChoices, "resp">, log: Logger) {
  const connection =
    config.redis !== undefined && config.burstClaims && config.policy === "kv"
      ? await openRedisConnection(config.redis, {
          resp: choices.resp,
          token: config.redisToken,
          commandTimeoutMs: config.redisTimeout * 1000,
        })
      : undefined;
  const claims =
    connection && new RedisBurstClaims(connection, { windowMs: config.burstClaimWindow * 1000 });
  if (claims !== undefined)
    log.info("burst claims: kv decisions are claimed in Redis first", {
      window_ms: config.burstClaimWindow * 1000,
    });
  else if (config.burstClaims)
    log.warn(
      `--burst-claims has no effect ${config.redis === undefined ? "without --redis" : `with --policy ${config.policy} (kv only)`}`,
    );
  return { claims, connection };
}

/**
 * With the router's own books as the busy signal, a waiter is offered a rank as soon as its
 * load drops (a prefill done, a request freed), not at the gate's next tick: on a loaded
 * machine that timer runs late, and every millisecond of it lands on a waiter's TTFT (the
 * fairness bench: bench/README.md). Deferred, so the gate never books inside the tracker's own call.
 */
function pumpOnFreedLoad(router: ReturnType<typeof createRouter>, admission: AdmissionGate): void {
  const { tracker } = router;
  const previous = tracker.onLocalEvent;
  tracker.onLocalEvent = (ev) => {
    previous?.(ev);
    if (ev.data.type !== "add_request" && admission.size > 0)
      queueMicrotask(() => admission.pump());
  };
}
