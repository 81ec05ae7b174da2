/**
 * Where a tenant's limits are checked: in Redis when the routers share it (one limit for all
 * of them), else in this router's memory. While Redis is slow or down (the hang guard bounds
 * each request's wait by --redis-timeout, then answers at once), `--limits-fallback` decides:
 *   local   (default) this router keeps its share of each limit, limit ÷ N for N routers, so
 *           the fleet stays near the limit without any of them talking to the others;
 *   open    requests pass unlimited (availability over the limit);
 *   closed  keyed requests get 503 until Redis answers (the limit over availability).
 * Each check says which backend answered (`onCheck`, a metric), so an outage is visible.
 * A fallback share starts from what Redis said was left (each router its part of it), not
 * full, so an outage right after the fleet used up a limit does not hand it out again.
 * A ticket remembers where it was taken, so its release goes back to the same place.
 */
import { RouterError } from "../../core/errors.ts";
import type { Tenant, TenantLimits } from "../tenant.ts";
import { LocalLimitCounters } from "./local-counters.ts";
import { hasLimits, shareOf, type Ask, type Verdict } from "./verdict.ts";

export const LIMITS_FALLBACKS = ["local", "open", "closed"] as const;
export type LimitsFallback = (typeof LIMITS_FALLBACKS)[number];

/** Which counters answered a check. */
export type LimitBackend =
  | "redis"
  | "local"
  | "fallback_local"
  | "fallback_open"
  | "fallback_closed";

/** The shared counters (src/sync/tenant-limits.ts); every call may throw when Redis does not answer. */
export interface SharedLimitCounters {
  acquire(
    tenant: string,
    limits: TenantLimits,
    ask: Ask,
    id: string,
  ): Promise<Verdict & { readonly bookedOutput: number }>;
  /** `prompt`: the prompt charged and the prompt the engine reported, when it did (the difference is settled). */
  release(
    tenant: string,
    limits: TenantLimits,
    id: string,
    bookedOutput: number,
    outputTokens: number,
    prompt?: { readonly charged: number; readonly used: number },
  ): Promise<void>;
}

export interface LimiterOptions {
  /** With --redis: the counters every router shares. */
  readonly shared?: SharedLimitCounters;
  readonly fallback: LimitsFallback;
  /** How many routers share the limits (the local fallback keeps limit ÷ this). */
  readonly routers: () => number;
  /** Milliseconds, monotonic. */
  readonly now: () => number;
  readonly onCheck?: (backend: LimitBackend) => void;
  readonly onRefused?: (tenant: string, dimension: string) => void;
  /** A shared call failed (logged once per outage by the caller's logger). */
  readonly onSharedError?: (e: unknown) => void;
}

/** An admitted request's hold on its tenant's limits; release it exactly once. */
export interface LimitTicket {
  readonly tenant: Tenant;
  readonly id: string;
  /** Where it was taken; "none": nothing to give back. */
  readonly backend: "redis" | "local" | "none";
  /** The limits it was taken against (the fallback's share, when local during an outage). */
  readonly limits: TenantLimits;
  readonly bookedOutput: number;
  /** The prompt tokens charged at admission. */
  readonly chargedPrompt: number;
  readonly verdict: Verdict;
}

export type LimitResult =
  | { readonly allowed: true; readonly ticket: LimitTicket }
  | { readonly allowed: false; readonly verdict: Verdict };

const UNLIMITED: Verdict = { allowed: true, retryAfterMs: 0, states: {} };

export class TenantLimiter {
  readonly #local = new LocalLimitCounters();
  /** The last states each tenant's checks returned (the headers of answers that took nothing), when, and from where. */
  readonly #last = new Map<
    string,
    { readonly states: Verdict["states"]; readonly at: number; readonly shared: boolean }
  >();

  constructor(private readonly o: LimiterOptions) {}

  /** Check `ask` for `tenant` and take it when there is room. Throws RouterError("unavailable") when fail-closed without Redis. */
  async acquire(tenant: Tenant, ask: Ask, id: string): Promise<LimitResult> {
    if (!hasLimits(tenant.limits))
      return {
        allowed: true,
        ticket: {
          tenant,
          id,
          backend: "none",
          limits: tenant.limits,
          bookedOutput: ask.outputTokens,
          chargedPrompt: ask.promptTokens,
          verdict: UNLIMITED,
        },
      };
    const shared = this.o.shared;
    if (shared === undefined) {
      this.o.onCheck?.("local");
      return this.#result(
        tenant,
        id,
        "local",
        tenant.limits,
        this.#local.acquire(tenant.name, tenant.limits, ask, id, this.o.now()),
        ask.outputTokens,
        ask.promptTokens,
      );
    }
    try {
      const v = await shared.acquire(tenant.name, tenant.limits, ask, id);
      this.o.onCheck?.("redis");
      return this.#result(tenant, id, "redis", tenant.limits, v, v.bookedOutput, ask.promptTokens);
    } catch (e) {
      this.o.onSharedError?.(e);
    }
    switch (this.o.fallback) {
      case "open":
        this.o.onCheck?.("fallback_open");
        return {
          allowed: true,
          ticket: {
            tenant,
            id,
            backend: "none",
            limits: tenant.limits,
            bookedOutput: ask.outputTokens,
            chargedPrompt: ask.promptTokens,
            verdict: UNLIMITED,
          },
        };
      case "closed":
        this.o.onCheck?.("fallback_closed");
        throw new RouterError(
          "unavailable",
          "the shared rate limits cannot be checked right now (Redis does not answer and --limits-fallback is closed); try again shortly",
          undefined,
          1,
        );
      case "local": {
        this.o.onCheck?.("fallback_local");
        const routers = this.o.routers();
        const share = shareOf(tenant.limits, routers);
        const last = this.#last.get(tenant.name);
        if (last?.shared === true)
          this.#local.seed(tenant.name, share, last.states, routers, last.at);
        return this.#result(
          tenant,
          id,
          "local",
          share,
          this.#local.acquire(tenant.name, share, ask, id, this.o.now()),
          ask.outputTokens,
          ask.promptTokens,
        );
      }
    }
  }

  /**
   * The request's answer is over with `outputTokens` generated and, when the engine said,
   * `promptTokens` prefilled: give back its slot, charge the output difference and settle the
   * prompt charge to what the engine reported.
   */
  release(ticket: LimitTicket, outputTokens: number, promptTokens?: number): void {
    const prompt =
      promptTokens === undefined
        ? undefined
        : { charged: ticket.chargedPrompt, used: promptTokens };
    if (ticket.backend === "local") {
      this.#local.release(
        ticket.tenant.name,
        ticket.limits,
        ticket.id,
        outputTokens,
        this.o.now(),
        prompt,
      );
    } else if (ticket.backend === "redis") {
      // Off the request path; a lost release costs at most a slot until its lease lapses.
      void this.o
        .shared!.release(
          ticket.tenant.name,
          ticket.limits,
          ticket.id,
          ticket.bookedOutput,
          outputTokens,
          prompt,
        )
        .catch((e: unknown) => this.o.onSharedError?.(e));
    }
  }

  /** The tenant's limits as last seen here (for the headers of answers that took nothing). */
  states(tenant: Tenant): Verdict["states"] {
    if (!hasLimits(tenant.limits)) return {};
    return (
      this.#last.get(tenant.name)?.states ??
      this.#local.peek(tenant.name, tenant.limits, this.o.now())
    );
  }

  /** Forget tenants no longer configured (the keys file changed). */
  retain(tenants: ReadonlySet<string>): void {
    this.#local.retain(tenants);
    for (const t of this.#last.keys()) if (!tenants.has(t)) this.#last.delete(t);
  }

  #result(
    tenant: Tenant,
    id: string,
    backend: "redis" | "local",
    limits: TenantLimits,
    v: Verdict,
    bookedOutput: number,
    chargedPrompt: number,
  ): LimitResult {
    this.#last.set(tenant.name, {
      states: v.states,
      at: this.o.now(),
      shared: backend === "redis",
    });
    if (!v.allowed) {
      this.o.onRefused?.(tenant.name, v.refused ?? "unknown");
      return { allowed: false, verdict: v };
    }
    return {
      allowed: true,
      ticket: { tenant, id, backend, limits, bookedOutput, chargedPrompt, verdict: v },
    };
  }
}
