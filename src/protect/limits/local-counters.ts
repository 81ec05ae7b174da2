/**
 * Per-tenant limits kept in this router's memory: without --redis they are the limits, and
 * with it they are the fallback while Redis is slow or down (each router then keeps its share
 * of the limit, limiter.ts). One token bucket per limited per-minute dimension and a set of
 * the requests running, checked and taken together: a request passes only when every limited
 * dimension has room, and then takes from all of them. Pure: time is passed in.
 */
import type { TenantLimits } from "../tenant.ts";
import { fullBucket, msUntil, refill, type Bucket } from "./token-bucket.ts";
import {
  limitVector,
  type Ask,
  type Dimension,
  type DimensionState,
  type Verdict,
} from "./verdict.ts";

/** A refused concurrency slot frees when some request ends, which nobody can predict: come back in a second. */
export const CONCURRENCY_RETRY_MS = 1_000;

interface TenantCounters {
  readonly buckets: Partial<Record<Exclude<Dimension, "concurrent">, Bucket>>;
  /** Requests admitted and not yet released: id -> output tokens booked. */
  readonly running: Map<string, number>;
}

/**
 * What a request takes from each per-minute dimension: the whole ask. The engine is told to
 * generate no more than the output booked (src/protect/output-cap.ts), so an ask larger than
 * a minute's worth can never be covered and is refused as too large, like such a prompt.
 */
function costs(ask: Ask): Record<Exclude<Dimension, "concurrent">, number> {
  return { requests: 1, prompt_tokens: ask.promptTokens, output_tokens: ask.outputTokens };
}

/** Charge `delta` more to a bucket (a refund when negative), never above its limit. */
function settle(b: Bucket | undefined, lim: number, delta: number, now: number): void {
  if (lim === 0 || b === undefined || delta === 0) return;
  refill(b, lim, now);
  b.level = Math.min(lim, b.level - delta);
}

export class LocalLimitCounters {
  readonly #tenants = new Map<string, TenantCounters>();

  /** Check `ask` against `limits` and take it when every limited dimension has room. */
  acquire(tenant: string, limits: TenantLimits, ask: Ask, id: string, now: number): Verdict {
    const lim = limitVector(limits);
    const c = this.#counters(tenant);
    const cost = costs(ask);
    let refused: Dimension | undefined;
    let tooLarge = false;
    let retryAfterMs = 0;
    for (const d of ["requests", "prompt_tokens", "output_tokens"] as const) {
      if (lim[d] === 0) continue;
      const b = (c.buckets[d] ??= fullBucket(lim[d], now));
      refill(b, lim[d], now);
      if (d !== "requests" && cost[d] > lim[d]) {
        tooLarge = true;
        refused ??= d;
        continue;
      }
      const wait = msUntil(b, lim[d], cost[d]);
      if (wait > 0) {
        refused ??= d;
        retryAfterMs = Math.max(retryAfterMs, wait);
      }
    }
    if (lim.concurrent > 0 && c.running.size >= lim.concurrent) {
      refused ??= "concurrent";
      retryAfterMs = Math.max(retryAfterMs, CONCURRENCY_RETRY_MS);
    }
    const allowed = refused === undefined;
    if (allowed) {
      for (const d of ["requests", "prompt_tokens", "output_tokens"] as const)
        if (lim[d] > 0) c.buckets[d]!.level -= cost[d];
      c.running.set(id, cost.output_tokens);
    }
    return {
      allowed,
      refused,
      tooLarge: tooLarge || undefined,
      retryAfterMs: allowed ? 0 : retryAfterMs,
      states: this.#states(c, lim),
    };
  }

  /**
   * The request `id` ended with `outputTokens` generated: its concurrency slot frees and the
   * output bucket is charged the difference from what was booked (a refund when it was less);
   * with `prompt`, the prompt bucket is settled the same way to what the engine reported.
   */
  release(
    tenant: string,
    limits: TenantLimits,
    id: string,
    outputTokens: number,
    now: number,
    prompt?: { readonly charged: number; readonly used: number },
  ): void {
    const c = this.#tenants.get(tenant);
    const booked = c?.running.get(id);
    if (c === undefined || booked === undefined) return;
    c.running.delete(id);
    const lim = limitVector(limits);
    settle(c.buckets.output_tokens, lim.output_tokens, outputTokens - booked, now);
    if (prompt !== undefined)
      settle(c.buckets.prompt_tokens, lim.prompt_tokens, prompt.used - prompt.charged, now);
  }

  /** The tenant's state now, without taking anything (headers on answers that took nothing). */
  peek(tenant: string, limits: TenantLimits, now: number): Verdict["states"] {
    const lim = limitVector(limits);
    const c = this.#counters(tenant);
    for (const d of ["requests", "prompt_tokens", "output_tokens"] as const) {
      if (lim[d] > 0) refill((c.buckets[d] ??= fullBucket(lim[d], now)), lim[d], now);
    }
    return this.#states(c, lim);
  }

  /**
   * Start this router's share of a tenant's limits from what the shared counters said last
   * (`states`, at `at`): each bucket holds its share (1/`routers`) of what was left then and
   * refills from there. A fallback that started full would let every router admit a whole
   * share again right after the fleet used up the limit.
   */
  seed(
    tenant: string,
    limits: TenantLimits,
    states: Verdict["states"],
    routers: number,
    at: number,
  ): void {
    const lim = limitVector(limits);
    const c = this.#counters(tenant);
    for (const d of ["requests", "prompt_tokens", "output_tokens"] as const) {
      const s = states[d];
      if (lim[d] === 0 || s === undefined) continue;
      c.buckets[d] = { level: Math.min(lim[d], s.remaining / Math.max(1, routers)), at };
    }
  }

  /** Drop the counters of tenants no longer configured. */
  retain(tenants: ReadonlySet<string>): void {
    for (const t of this.#tenants.keys()) if (!tenants.has(t)) this.#tenants.delete(t);
  }

  #counters(tenant: string): TenantCounters {
    let c = this.#tenants.get(tenant);
    if (c === undefined) this.#tenants.set(tenant, (c = { buckets: {}, running: new Map() }));
    return c;
  }

  #states(c: TenantCounters, lim: Record<Dimension, number>): Verdict["states"] {
    const out: Partial<Record<Dimension, DimensionState>> = {};
    for (const d of ["requests", "prompt_tokens", "output_tokens"] as const) {
      const b = c.buckets[d];
      if (lim[d] === 0 || b === undefined) continue;
      out[d] = {
        limit: lim[d],
        remaining: Math.floor(b.level),
        resetMs: msUntil(b, lim[d], lim[d]),
      };
    }
    if (lim.concurrent > 0)
      out.concurrent = {
        limit: lim.concurrent,
        remaining: Math.max(0, lim.concurrent - c.running.size),
        resetMs: 0,
      };
    return out;
  }
}
