/**
 * Protecting the fleet: client API keys, per-tenant limits, and what fair admission needs to
 * know of a request. The public face for the rest of the router: the edge (src/edge/tenants)
 * checks keys and limits with these, observability reads `tenantOf(request)`.
 */
export { tenantOf, requestTenant } from "./request-tenant.ts";
export type { Tenant, TenantLimits } from "./tenant.ts";
export { KeySet, bearerKey, sha256Hex } from "./key-set.ts";
export { KeysWatch, type KeysFileSource } from "./keys-watch.ts";
export { KeysFileError, parseKeysDocument } from "./keys-document.ts";
export {
  TenantLimiter,
  LIMITS_FALLBACKS,
  type LimitsFallback,
  type SharedLimitCounters,
} from "./limits/limiter.ts";
