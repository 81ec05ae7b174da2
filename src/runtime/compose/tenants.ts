/**
 * --api-keys, built the same way on every runtime: the keys file read and watched (the
 * runtime gives the reader: Bun reads and watches files, Deno reads JSON, workerd gets the
 * file's content from its launcher), the tenant limits (shared through Redis with --redis,
 * by RESP or Upstash REST; local otherwise, and as the fallback), fair admission's
 * correction, and their metrics. Without --api-keys: nothing, and every route stays open.
 */
import type { Config } from "../../config/schema.ts";
import type { AdmissionGate } from "../../router/index.ts";
import type { Logger } from "../../core/logger.ts";
import type { TenantGuard } from "../../edge/tenants/guard.ts";
import { bindTenantMetrics } from "../../edge/tenants/metrics.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import { KeysFileError } from "../../protect/keys-document.ts";
import { KeysWatch, type KeysFileSource } from "../../protect/keys-watch.ts";
import { TenantLimiter } from "../../protect/limits/limiter.ts";
import type { RespOpener } from "../../sync/redis-client.ts";
import { openRedisLimitCounters, type RedisLimitCounters } from "../../sync/tenant-limits.ts";
import { StartupError } from "./startup-error.ts";

/** How often the keys file is looked at besides change notifications (a lost notification costs at most this). */
const KEYS_POLL_MS = 1_000;
/** How often the routers sharing the limits are counted, and how long the highest count is kept. */
const ROUTER_COUNT_EVERY_MS = 1_000;
const ROUTER_COUNT_WINDOW_MS = 60_000;

/**
 * How many routers share the limits, for the local fallback's share: the most heard through
 * Redis in the last minute, counted only while the limits' Redis answers. When Redis hangs the
 * other routers fall silent (load sync forgets them after seconds), which is exactly when the
 * fallback needs their number, so the count is frozen then and lowered only slowly otherwise.
 */
export class RouterCount {
  #samples: { at: number; n: number }[] = [];

  constructor(private readonly window = ROUTER_COUNT_WINDOW_MS) {}

  /** Record `n` routers (this one included) heard at `at`. */
  sample(n: number, at: number): void {
    this.#samples = this.#samples.filter((s) => at - s.at < this.window);
    this.#samples.push({ at, n: Math.max(1, n) });
  }

  get value(): number {
    let best = 1;
    for (const s of this.#samples) best = Math.max(best, s.n);
    return best;
  }
}

export interface TenantsDeps {
  /** The runtime's reader of the keys file; without one, --api-keys is refused at start. */
  readonly keysFile?: KeysFileSource;
  readonly resp?: RespOpener;
  readonly admission: AdmissionGate;
  readonly metrics: RouterMetrics;
  readonly log: Logger;
  readonly now: () => number;
  /** The other routers heard through Redis (load sync), for the local fallback's share; absent without Redis. */
  readonly otherRouters?: () => { readonly heard: boolean; readonly peers: number };
}

export interface BuiltTenants {
  readonly guard: TenantGuard;
  stop(): void;
  close(): Promise<void>;
}

export async function buildTenants(
  config: Config,
  d: TenantsDeps,
): Promise<BuiltTenants | undefined> {
  const path = config.apiKeys;
  if (path === undefined) {
    // --admin-token makes the router listen on every interface by default: say that the client routes stay open.
    if (config.host === "0.0.0.0" || config.host === "::")
      d.log.warn(
        `listening on ${config.host} without --api-keys: every OpenAI and engine-native route answers anyone who reaches the port`,
      );
    return undefined;
  }
  if (d.keysFile === undefined)
    throw new StartupError("--api-keys: this runtime cannot read the keys file");
  const fair = config.fairAdmission;
  // The watch is started before the limiter exists; a change then reaches it once it does.
  const holder: { limiter?: TenantLimiter } = {};
  const watch = await startKeysWatch(path, d.keysFile, d.log, (names) =>
    holder.limiter?.retain(names),
  );
  const shared = await openSharedCounters(config, d);
  const routers = countRouters(config, d, shared);
  const m = bindTenantMetrics(d.metrics, {
    tenants: () => watch.keys!.tenants.map((t) => t.name),
    sharedUp: shared && (() => shared.up),
    routers: shared && routers.value,
    serviceOf: fair ? (t) => d.admission.serviceOf(t) : undefined,
  });
  const limiter = (holder.limiter = buildLimiter(config, d, shared, routers.value, m));
  d.log.info("client API keys required on every client route", {
    limits: shared ? "shared through Redis" : "this router only",
    fallback: shared ? config.limitsFallback : "none",
    fair_admission: fair,
  });
  const guard: TenantGuard = {
    keys: () => watch.keys!,
    limiter,
    fair,
    settle: (share, out) => d.admission.settle(share, out),
    engineAuthorization: config.engineToken !== undefined ? `Bearer ${config.engineToken}` : null,
    onAuthFailure: (reason) => m.authFailure(reason),
  };
  return {
    guard,
    stop: () => {
      watch.stop();
      routers.stop();
    },
    close: async () => {
      await shared?.close();
    },
  };
}

/** The keys file read once (a bad one stops the start, naming what is wrong) and watched; `onTenants` hears each change's tenant names. */
async function startKeysWatch(
  path: string,
  source: KeysFileSource,
  log: Logger,
  onTenants: (names: Set<string>) => void,
): Promise<KeysWatch> {
  const watch = new KeysWatch({
    path,
    source,
    pollMs: KEYS_POLL_MS,
    every: (ms, fn) => {
      const t = setInterval(fn, ms);
      return () => clearInterval(t);
    },
    log,
    onChange: (keys) => onTenants(new Set(keys.tenants.map((t) => t.name))),
  });
  try {
    await watch.start();
  } catch (e) {
    if (e instanceof KeysFileError) throw new StartupError(e.message);
    throw e;
  }
  return watch;
}

/** With --redis: the limits' counters shared by every router, saying once when Redis answers again after an outage. */
async function openSharedCounters(
  config: Config,
  d: TenantsDeps,
): Promise<RedisLimitCounters | undefined> {
  if (config.redis === undefined) return undefined;
  let outage = false;
  return openRedisLimitCounters({
    url: config.redis,
    token: config.redisToken,
    resp: d.resp,
    commandTimeoutMs: config.redisTimeout * 1000,
    onAvailabilityChange: (up) => {
      if (up && outage)
        d.log.warn("tenant limits: Redis answers again; limits are shared by every router again");
      outage = !up;
    },
  });
}

/**
 * How many routers share the limits (--limits-routers, else counted through Redis every
 * second while it answers: RouterCount); `stop` ends the counting.
 */
function countRouters(
  config: Config,
  d: TenantsDeps,
  shared: RedisLimitCounters | undefined,
): { value: () => number; stop: () => void } {
  const count = new RouterCount();
  const others = d.otherRouters;
  let counting: ReturnType<typeof setInterval> | undefined;
  if (others !== undefined && config.limitsRouters === undefined) {
    const look = () => {
      const o = others();
      if (o.heard && shared?.up !== false) count.sample(o.peers + 1, d.now());
    };
    counting = setInterval(look, ROUTER_COUNT_EVERY_MS);
    look();
  }
  return { value: () => config.limitsRouters ?? count.value, stop: () => clearInterval(counting) };
}

/** The tenant limits, counted in the metrics; a Redis failure is logged once per outage (until a check reaches Redis again). */
function buildLimiter(
  config: Config,
  d: TenantsDeps,
  shared: RedisLimitCounters | undefined,
  routers: () => number,
  m: ReturnType<typeof bindTenantMetrics>,
): TenantLimiter {
  let warned = false;
  return new TenantLimiter({
    shared,
    fallback: config.limitsFallback,
    routers,
    now: d.now,
    onCheck: (backend) => {
      m.check(backend);
      if (backend === "redis") warned = false;
    },
    onRefused: (tenant, limit) => m.refused(tenant, limit),
    onSharedError: (e) => {
      if (warned) return;
      warned = true;
      d.log.warn(
        `tenant limits: Redis does not answer (${(e as Error).message}); --limits-fallback ${config.limitsFallback} until it does`,
      );
    },
  });
}
