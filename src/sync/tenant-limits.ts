/**
 * Per-tenant limit counters in Redis, shared by every router (RESP, or Upstash REST on the
 * runtimes without TCP): each check is one atomic script (tenant-limit-scripts.ts), so N
 * routers enforce one limit. Every call goes through the hang guard (`--redis-timeout`): a
 * slow or hung Redis costs a request that bound once, then calls fail at once until a probe
 * answers. Failures are thrown, not hidden: the limiter (src/protect/limits/limiter.ts)
 * decides what a request gets without Redis.
 */
import type { TenantLimits } from "../protect/tenant.ts";
import {
  limitVector,
  type Ask,
  type Dimension,
  type DimensionState,
  type Verdict,
} from "../protect/limits/verdict.ts";
import { openRedisConnection, type RedisConnectionOptions } from "./redis-client.ts";
import type { RedisConnection } from "./redis-connection.ts";
import type { HangGuardConnection } from "./redis-guard.ts";
import { ACQUIRE, RELEASE } from "./tenant-limit-scripts.ts";

/** Default key prefix; the {hash tag} keeps every key in one cluster slot. */
export const LIMITS_KEY_PREFIX = "switchyard:{limits}:";
/**
 * A running request's concurrency slot lapses after this long unless released: a router that
 * dies mid-request must not hold a tenant's slot for ever, and an answer rarely streams longer.
 */
export const CONCURRENCY_LEASE_MS = 15 * 60_000;

const REFUSED: readonly (Dimension | undefined)[] = [
  undefined,
  "requests",
  "prompt_tokens",
  "output_tokens",
  "concurrent",
];

export interface RedisLimitCountersOptions {
  readonly connection: RedisConnection;
  readonly keyPrefix?: string;
  readonly leaseMs?: number;
  /** The scripts' clock (ms); default Redis TIME, so every router shares one. Tests pass a fake. */
  readonly now?: () => number;
}

export class RedisLimitCounters {
  readonly #conn: RedisConnection;
  readonly #prefix: string;
  readonly #leaseMs: number;
  readonly #now: (() => number) | undefined;

  constructor(o: RedisLimitCountersOptions) {
    this.#conn = o.connection;
    this.#prefix = o.keyPrefix ?? LIMITS_KEY_PREFIX;
    this.#leaseMs = o.leaseMs ?? CONCURRENCY_LEASE_MS;
    this.#now = o.now;
  }

  /** Whether Redis answers (false while the hang guard holds it down). */
  get up(): boolean {
    return (this.#conn as Partial<HangGuardConnection>).up ?? true;
  }

  /** Check `ask` and take it when every limited dimension has room. Throws when Redis does not answer. */
  async acquire(
    tenant: string,
    limits: TenantLimits,
    ask: Ask,
    id: string,
  ): Promise<Verdict & { readonly bookedOutput: number }> {
    const lim = limitVector(limits);
    const reply = await ACQUIRE.run(this.#conn, this.#keys(tenant), [
      this.#nowArg(),
      String(lim.requests),
      String(lim.prompt_tokens),
      String(lim.output_tokens),
      String(lim.concurrent),
      String(Math.max(0, Math.floor(ask.promptTokens))),
      String(Math.max(0, Math.floor(ask.outputTokens))),
      id,
      String(this.#leaseMs),
    ]);
    if (!Array.isArray(reply) || reply.length < 12)
      throw new Error(
        `tenant limits: unexpected reply from Redis (${JSON.stringify(reply)?.slice(0, 80)})`,
      );
    const n = reply.map(Number);
    const states: Partial<Record<Dimension, DimensionState>> = {};
    (["requests", "prompt_tokens", "output_tokens"] as const).forEach((d, i) => {
      if (lim[d] > 0)
        states[d] = { limit: lim[d], remaining: n[4 + 2 * i]!, resetMs: n[5 + 2 * i]! };
    });
    if (lim.concurrent > 0)
      states.concurrent = { limit: lim.concurrent, remaining: Math.max(0, n[10]!), resetMs: 0 };
    const allowed = n[0] === 1;
    return {
      allowed,
      refused: REFUSED[n[1]!],
      tooLarge: n[2] === 1 || undefined,
      retryAfterMs: allowed ? 0 : n[3]!,
      states,
      bookedOutput: n[11]!,
    };
  }

  /**
   * The request `id` ended: free its slot, charge the output difference, and settle the prompt
   * charge to what the engine reported (`prompt`, when it did). Throws when Redis does not answer.
   */
  async release(
    tenant: string,
    limits: TenantLimits,
    id: string,
    bookedOutput: number,
    outputTokens: number,
    prompt?: { readonly charged: number; readonly used: number },
  ): Promise<void> {
    const lim = limitVector(limits);
    const promptDelta = prompt === undefined ? 0 : Math.round(prompt.used - prompt.charged);
    await RELEASE.run(this.#conn, this.#keys(tenant), [
      this.#nowArg(),
      String(lim.output_tokens),
      String(Math.round(outputTokens - bookedOutput)),
      id,
      String(lim.prompt_tokens),
      String(promptDelta),
    ]);
  }

  close(): Promise<void> {
    return this.#conn.close();
  }

  #keys(tenant: string): string[] {
    return [`${this.#prefix}t:${tenant}`, `${this.#prefix}c:${tenant}`];
  }

  #nowArg(): string {
    return this.#now ? String(Math.floor(this.#now())) : "";
  }
}

export interface OpenRedisLimitCountersOptions
  extends Omit<RedisLimitCountersOptions, "connection">,
    RedisConnectionOptions {
  /** redis://, rediss:// (RESP) or https:// (Upstash REST, with `token`). */
  readonly url: string;
}

/** Connect (by URL scheme, behind the hang guard) and build the counters. Redis being down at start is not an error. */
export async function openRedisLimitCounters(
  o: OpenRedisLimitCountersOptions,
): Promise<RedisLimitCounters> {
  const connection = await openRedisConnection(o.url, o);
  return new RedisLimitCounters({ ...o, connection });
}
