/**
 * The tenant a request was authenticated as travels with the request: set once by the edge's
 * key check, read by the limits, the access log, metrics and tracing through `tenantOf`. A
 * WeakMap keyed by the request itself, so nothing is added to the request and nothing
 * outlives it. The key is never kept, only the tenant it speaks for.
 */
import type { Tenant } from "./tenant.ts";

const tenants = new WeakMap<Request, Tenant>();

/** Record that `request` was authenticated as `tenant`. */
export function setRequestTenant(request: Request, tenant: Tenant): void {
  tenants.set(request, tenant);
}

/** The tenant `request` was authenticated as; undefined without --api-keys (or before the check). */
export function requestTenant(request: Request): Tenant | undefined {
  return tenants.get(request);
}

/**
 * The tenant's name, for access logs, metrics labels and trace attributes: bounded (only
 * tenants the keys file names; letters, digits, `.`, `_`, `-`) and never the key.
 */
export function tenantOf(request: Request): string | undefined {
  return tenants.get(request)?.name;
}
