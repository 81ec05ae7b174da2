/**
 * What the edge needs to protect the fleet with client keys (--api-keys): the keys in force,
 * the tenants' limits, fair admission's correction, and what engines get as `Authorization`.
 * Built by src/runtime/compose/tenants.ts; absent without --api-keys, and then every route
 * is open and nothing here runs. Types only.
 */
import type { KeySet } from "../../protect/key-set.ts";
import type { TenantLimiter } from "../../protect/limits/limiter.ts";
import type { TenantShare } from "../../router/index.ts";

export interface TenantGuard {
  /** The keys in force now (re-read when the file changes). */
  readonly keys: () => KeySet;
  readonly limiter: TenantLimiter;
  /** Fair admission is on: requests carry their tenant's share into the admission queue. */
  readonly fair: boolean;
  /** Corrects a tenant's fair-admission charge once its answer's output is known (the admission gate's settle). */
  readonly settle?: (share: TenantShare, outputTokens: number) => void;
  /**
   * What engines get as `Authorization` in place of the client's key to this router:
   * `Bearer <--engine-token>`, or null (dropped). A client key never reaches an engine.
   */
  readonly engineAuthorization: string | null;
  /** A request refused for its key (missing: no bearer key; unknown: not a configured key). */
  readonly onAuthFailure?: (reason: "missing" | "unknown") => void;
}
