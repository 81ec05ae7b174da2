/**
 * AffinityStore in Redis, shared by every router, so a session bound by one router is found
 * by all (docs/several-routers.md). Every operation is one Lua script
 * (redis-scripts.ts), so get-and-refresh, compare-and-delete on expiry and the reaper's claim
 * are atomic across routers: each expired engine-backed session is reported to `onExpire` by
 * exactly one router.
 *
 * Redis being away never fails a request: get/peek answer undefined, put/remove do
 * nothing, the reaper skips a sweep; the first failure of an outage is logged once, every
 * failure is counted (`stats()`), and the store resumes by itself when Redis answers again.
 */
import type { Logger } from "../core/logger.ts";
import type { WorkerWithDpRank } from "../core/ids.ts";
import { openRedisConnection, type RedisConnectionOptions } from "./redis-client.ts";
import type { RedisConnection } from "./redis-connection.ts";
import { CLAIM_EXPIRED, LOOKUP, PUT, REMOVE } from "./redis-scripts.ts";
import {
  REAPER_INTERVAL_MS,
  type AffinityKind,
  type AffinityStore,
  type Binding,
  type OnExpire,
  type StoreClock,
} from "../router/index.ts";

/** Default key prefix; the {hash tag} keeps all keys of the store in one cluster slot. */
export const DEFAULT_KEY_PREFIX = "switchyard:{sticky}:";
/** A router-only key outlives its expiry by this much, so clock skew never drops it early. */
const NATIVE_EXPIRY_SLACK_MS = 5_000;
/** An engine-backed key waits this long for a reaper before Redis drops it unannounced. */
const ENGINE_GRACE_MS = 3_600_000;
/** Expired sessions claimed per script call; a sweep loops until fewer come back. */
const REAP_BATCH = 256;

export interface RedisAffinityStoreOptions {
  readonly connection: RedisConnection;
  readonly keyPrefix?: string;
  readonly onExpire?: OnExpire;
  /** Sweep period; 0 turns the reaper off. */
  readonly reaperIntervalMs?: number;
  /**
   * The store's clock (ms). Default: Redis TIME, read inside each script, so every router
   * shares one clock. Tests pass a fake clock.
   */
  readonly now?: () => number;
  /** The reaper's timer. Default: setInterval. */
  readonly every?: StoreClock["every"];
  readonly logger?: Pick<Logger, "warn">;
}

export interface RedisStoreStats {
  /** Whether the last Redis call succeeded. */
  readonly available: boolean;
  /** Redis calls that failed (each answered as if Redis held nothing). */
  readonly errors: number;
  /** Expired engine-backed sessions this store claimed and reported to onExpire. */
  readonly expiredClaimed: number;
}

const realEvery: StoreClock["every"] = (ms, fn) => {
  const handle = setInterval(fn, ms);
  return () => clearInterval(handle);
};

const consoleLogger: Pick<Logger, "warn"> = {
  warn: (message, fields) => console.warn(message, fields ?? ""),
};

export class RedisAffinityStore implements AffinityStore {
  readonly #conn: RedisConnection;
  readonly #prefix: string;
  readonly #expiryKey: string;
  readonly #onExpire: OnExpire | undefined;
  readonly #now: (() => number) | undefined;
  readonly #logger: Pick<Logger, "warn">;
  #stopReaper: (() => void) | undefined;
  #sweeping: Promise<number> | undefined;
  #sweepAgain: Promise<number> | undefined;
  #available = true;
  #errors = 0;
  #expiredClaimed = 0;

  constructor(opts: RedisAffinityStoreOptions) {
    this.#conn = opts.connection;
    this.#prefix = opts.keyPrefix ?? DEFAULT_KEY_PREFIX;
    this.#expiryKey = `${this.#prefix}expiry`;
    this.#onExpire = opts.onExpire;
    this.#now = opts.now;
    this.#logger = opts.logger ?? consoleLogger;
    const interval = opts.reaperIntervalMs ?? REAPER_INTERVAL_MS;
    if (interval > 0) {
      this.#stopReaper = (opts.every ?? realEvery)(interval, () => void this.reapExpired());
    }
  }

  get(sessionId: string): Promise<Binding | undefined> {
    return this.#lookup(sessionId, true);
  }

  peek(sessionId: string): Promise<Binding | undefined> {
    return this.#lookup(sessionId, false);
  }

  async put(
    sessionId: string,
    worker: WorkerWithDpRank,
    ttlMs: number,
    kind: AffinityKind,
  ): Promise<void> {
    const args = [
      this.#nowArg(),
      sessionId,
      BigInt.asUintN(64, worker.workerId).toString(),
      String(worker.dpRank >>> 0),
      String(Math.max(1, Math.round(ttlMs))),
      kind === "engine-backed" ? "e" : "r",
      String(NATIVE_EXPIRY_SLACK_MS),
      String(ENGINE_GRACE_MS),
    ];
    await this.#call(() =>
      PUT.run(this.#conn, [this.#bindingKey(sessionId), this.#expiryKey], args),
    );
  }

  async remove(sessionId: string): Promise<Binding | undefined> {
    const reply = await this.#call(() =>
      REMOVE.run(this.#conn, [this.#bindingKey(sessionId), this.#expiryKey], [sessionId]),
    );
    return Array.isArray(reply) && Number(reply[0]) === 1 ? decodeBinding(reply[1]) : undefined;
  }

  async close(): Promise<void> {
    this.#stopReaper?.();
    this.#stopReaper = undefined;
    await this.#sweepAgain;
    await this.#sweeping;
    await this.#conn.close();
  }

  /**
   * One reaper sweep: claim every expired engine-backed session (atomically, so another
   * router's sweep can never claim the same one) and report each to onExpire. Resolves to
   * the number claimed. Sweeps never overlap: asked during one, the store runs one more
   * right after it (however often it was asked), so no tick's "now" is skipped.
   */
  reapExpired(): Promise<number> {
    if (!this.#sweeping) {
      const run: Promise<number> = this.#sweep().finally(() => {
        if (this.#sweeping === run) this.#sweeping = undefined;
      });
      this.#sweeping = run;
      return run;
    }
    this.#sweepAgain ??= this.#sweeping.then(() => {
      this.#sweepAgain = undefined;
      return this.reapExpired();
    });
    return this.#sweepAgain;
  }

  stats(): RedisStoreStats {
    return {
      available: this.#available,
      errors: this.#errors,
      expiredClaimed: this.#expiredClaimed,
    };
  }

  async #sweep(): Promise<number> {
    let claimed = 0;
    for (;;) {
      const args = [this.#nowArg(), String(REAP_BATCH), `${this.#prefix}s:`];
      const reply = await this.#call(() => CLAIM_EXPIRED.run(this.#conn, [this.#expiryKey], args));
      if (!Array.isArray(reply)) return claimed;
      const pairs = Array.isArray(reply[1]) ? (reply[1] as unknown[]) : [];
      for (let i = 0; i + 1 < pairs.length; i += 2) {
        const binding = decodeBinding(pairs[i + 1]);
        if (binding) {
          claimed++;
          this.#expired(String(pairs[i]), binding);
        }
      }
      if (Number(reply[0]) < REAP_BATCH) return claimed;
    }
  }

  async #lookup(sessionId: string, refresh: boolean): Promise<Binding | undefined> {
    const args = [
      this.#nowArg(),
      sessionId,
      refresh ? "1" : "0",
      String(NATIVE_EXPIRY_SLACK_MS),
      String(ENGINE_GRACE_MS),
    ];
    const reply = await this.#call(() =>
      LOOKUP.run(this.#conn, [this.#bindingKey(sessionId), this.#expiryKey], args),
    );
    if (!Array.isArray(reply)) return undefined;
    const status = Number(reply[0]);
    if (status === 1) return decodeBinding(reply[1]);
    if (status === 2) {
      const binding = decodeBinding(reply[1]);
      if (binding) this.#expired(sessionId, binding);
    }
    return undefined;
  }

  #expired(sessionId: string, binding: Binding): void {
    this.#expiredClaimed++;
    if (!this.#onExpire) return;
    try {
      this.#onExpire(sessionId, binding);
    } catch (error) {
      this.#logger.warn("session on-expire callback threw", { sessionId, error: String(error) });
    }
  }

  /** Run one Redis call; on failure count it, log the first of an outage, answer undefined. */
  async #call(op: () => Promise<unknown>): Promise<unknown> {
    try {
      const reply = await op();
      if (!this.#available) {
        this.#available = true;
        this.#logger.warn("sticky-session store: Redis is reachable again", {
          errors: this.#errors,
        });
      }
      return reply;
    } catch (error) {
      this.#errors++;
      if (this.#available) {
        this.#available = false;
        this.#logger.warn(
          "sticky-session store: Redis unavailable; sessions are not sticky until it returns",
          {
            error: String((error as Error)?.message ?? error),
          },
        );
      }
      return undefined;
    }
  }

  #nowArg(): string {
    return this.#now ? String(Math.floor(this.#now())) : "";
  }

  #bindingKey(sessionId: string): string {
    return `${this.#prefix}s:${sessionId}`;
  }
}

/** Parse "workerId|dpRank|ttlMs|kind|expiresAt" as written by the scripts. */
export function decodeBinding(raw: unknown): Binding | undefined {
  if (typeof raw !== "string") return undefined;
  const parts = raw.split("|");
  if (parts.length !== 5) return undefined;
  const [w, r, ttl, k, exp] = parts as [string, string, string, string, string];
  if (!/^\d+$/.test(w) || (k !== "e" && k !== "r")) return undefined;
  return {
    worker: { workerId: BigInt(w), dpRank: Number(r) },
    ttlMs: Number(ttl),
    kind: k === "e" ? "engine-backed" : "router-only",
    expiresAt: Number(exp),
  };
}

export interface OpenRedisAffinityStoreOptions
  extends Omit<RedisAffinityStoreOptions, "connection">,
    RedisConnectionOptions {
  /** redis://, rediss:// (RESP) or https:// (Upstash REST, with `token`). */
  readonly url: string;
}

/** Connect (by URL scheme) and build the store. Redis being down at start is not an error. */
export async function openRedisAffinityStore(
  opts: OpenRedisAffinityStoreOptions,
): Promise<RedisAffinityStore> {
  const connection = await openRedisConnection(opts.url, opts);
  return new RedisAffinityStore({ ...opts, connection });
}
