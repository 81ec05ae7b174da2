/**
 * The session store every runtime builds the same way: Redis with --redis (redis:// only
 * through a RESP opener the runtime injects; https:// is Upstash REST over fetch), else in
 * memory. It does not bind sessions (src/router/sessions/sticky.ts does).
 */
import type { Logger } from "../../core/logger.ts";
import type { Config } from "../../config/schema.ts";
import type { RespOpener } from "../../sync/redis-client.ts";
import { openRedisAffinityStore, type RedisStoreStats } from "../../sync/redis-store.ts";
import {
  MemoryAffinityStore,
  type AffinityStore,
  type OnExpire,
  type StoreClock,
} from "../../router/index.ts";

/** The in-memory session store's clock: wall time, so /debug/sessions shows real expiries. */
const wallClock: StoreClock = {
  now: () => Date.now(),
  every(ms, fn) {
    const t = setInterval(fn, ms);
    return () => clearInterval(t);
  },
};

export interface BuiltStore {
  readonly store: AffinityStore;
  /** In memory only: bindings held and dropped for --max-sessions, for /metrics. */
  readonly memory?: () => { readonly held: number; readonly evicted: number };
  /** Redis only: availability and failed calls, for /metrics. */
  readonly stats?: () => RedisStoreStats;
}

/**
 * THE seam for the session store: Redis (shared by every router, on any runtime; an expired
 * engine-backed session is claimed by exactly one of them) with --redis, else in-memory (this
 * router only). Redis being down at start is not an error: the store degrades and recovers.
 */
export async function buildAffinityStore(
  config: Config,
  choices: { readonly resp?: RespOpener },
  log: Logger,
  onExpire: OnExpire,
): Promise<BuiltStore> {
  const logger = { warn: (m: string, f?: Record<string, unknown>) => log.warn(m, f) };
  const reaperIntervalMs = config.sessionReaperInterval * 1000;
  if (config.redis === undefined) {
    const store = new MemoryAffinityStore({
      clock: wallClock,
      onExpire,
      reaperIntervalMs,
      logger,
      maxSessions: config.maxSessions,
    });
    return { store, memory: () => ({ held: store.size, evicted: store.evicted }) };
  }
  const store = await openRedisAffinityStore({
    url: config.redis,
    token: config.redisToken,
    resp: choices.resp,
    commandTimeoutMs: config.redisTimeout * 1000,
    onExpire,
    reaperIntervalMs,
    logger,
  });
  log.info("sticky sessions: shared Redis store", {
    redis: redactUrl(config.redis),
    available: store.stats().available,
  });
  return { store, stats: () => store.stats() };
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
