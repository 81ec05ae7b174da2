/**
 * /metrics for client keys, tenant limits and fair admission. The tenant label takes only
 * the names the keys file configures (bounded; never a key): refusals per tenant and limit,
 * each tenant's fair-admission service. Which counters answered each check (`backend`) and
 * whether the shared counters answer now make a Redis outage visible: checks move from
 * `redis` to `fallback_local` (or `fallback_open` / `fallback_closed`).
 */
import type { LimitBackend } from "../../protect/limits/limiter.ts";
import { METRIC_PREFIX, type RouterMetrics } from "../../observe/names.ts";

export interface TenantMetricSources {
  /** Configured tenants now (the keys in force). */
  readonly tenants: () => readonly string[];
  /** Whether the shared counters answer (absent without --redis). */
  readonly sharedUp?: () => boolean;
  /** How many routers the limits are shared among (the local fallback keeps limit / this); absent without --redis. */
  readonly routers?: () => number;
  /** A tenant's fair-admission service so far (absent with fair admission off). */
  readonly serviceOf?: (tenant: string) => number;
}

export interface TenantMetrics {
  authFailure(reason: "missing" | "unknown"): void;
  check(backend: LimitBackend): void;
  refused(tenant: string, limit: string): void;
}

export function bindTenantMetrics(m: RouterMetrics, s: TenantMetricSources): TenantMetrics {
  const r = m.registry;
  const auth = r.counter(
    `${METRIC_PREFIX}api_key_failures_total`,
    "Requests refused for their API key (missing: no bearer key; unknown: not a configured key)",
    ["reason"],
  );
  const checks = r.counter(
    `${METRIC_PREFIX}tenant_limit_checks_total`,
    "Tenant limit checks by the counters that answered (redis, local, or a fallback while Redis does not answer)",
    ["backend"],
  );
  const refusals = r.counter(
    `${METRIC_PREFIX}tenant_limit_rejections_total`,
    "Requests answered 429 by their tenant's limits, by tenant and limit",
    ["tenant", "limit"],
  );
  const sharedUp = s.sharedUp;
  if (sharedUp) {
    r.gauge(
      `${METRIC_PREFIX}tenant_limits_shared`,
      "1 while the tenant limits are checked in Redis (shared by every router), 0 while this router falls back",
    ).onCollect((g) => g.set([], sharedUp() ? 1 : 0));
  }
  const routers = s.routers;
  if (routers) {
    r.gauge(
      `${METRIC_PREFIX}tenant_limits_routers`,
      "Routers sharing the tenant limits: while Redis does not answer, each keeps limit / this",
    ).onCollect((g) => g.set([], routers()));
  }
  const serviceOf = s.serviceOf;
  if (serviceOf) {
    r.gauge(
      `${METRIC_PREFIX}tenant_service_tokens`,
      "Fair admission: each tenant's service so far (prompt + 2 x output tokens, over its weight)",
      ["tenant"],
    ).onCollect((g) => {
      for (const t of s.tenants()) g.set([t], serviceOf(t));
    });
  }
  return {
    authFailure: (reason) => auth.inc([reason]),
    check: (backend) => checks.inc([backend]),
    refused: (tenant, limit) => refusals.inc([tenant, limit]),
  };
}
