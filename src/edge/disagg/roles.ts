/**
 * Which role each worker plays in a disaggregated deployment: `prefill`, `decode` or `both`
 * (the default: an ordinary engine). A role given by the operator (--prefill-worker /
 * --decode-worker, or `"role"` at registration) wins over what the engine says about itself
 * in GET /v1/engine/info (`role`, and for SGLang `bootstrap_port`). Keyed by normalized URL,
 * so it is known before the worker's id. It routes nothing.
 */
import type { WorkerId } from "../../core/ids.ts";
import { normalizeWorkerUrl } from "../../core/worker-id.ts";
import type { WorkerRegistry } from "../../fleet/registry.ts";

export type WorkerRole = "prefill" | "decode" | "both";

/** The healthy workers that can take each half of a request. */
export interface RolePools {
  /** role prefill. */
  readonly prefill: ReadonlySet<WorkerId>;
  /** role decode or both: they decode, and prefill locally when a request is not disaggregated. */
  readonly decode: ReadonlySet<WorkerId>;
}

function key(url: string): string {
  try {
    return normalizeWorkerUrl(url);
  } catch {
    return url;
  }
}

export class WorkerRoles {
  readonly #explicit = new Map<string, WorkerRole>();
  readonly #reported = new Map<string, WorkerRole>();
  readonly #bootstrapPorts = new Map<string, number>();
  #pools: RolePools | undefined;
  #poolsFor: ReadonlySet<WorkerId> | undefined;

  /** The operator's word (flag or registration body). */
  set(url: string, role: WorkerRole): void {
    this.#explicit.set(key(url), role);
    this.#pools = undefined;
  }

  /** What the engine said in /v1/engine/info; ignored where the operator set a role. */
  learn(url: string, info: { readonly role?: WorkerRole; readonly bootstrapPort?: number }): void {
    const k = key(url);
    if (info.role !== undefined) this.#reported.set(k, info.role);
    if (info.bootstrapPort !== undefined) this.#bootstrapPorts.set(k, info.bootstrapPort);
    this.#pools = undefined;
  }

  roleOf(url: string): WorkerRole {
    const k = key(url);
    return this.#explicit.get(k) ?? this.#reported.get(k) ?? "both";
  }

  bootstrapPortOf(url: string): number | undefined {
    return this.#bootstrapPorts.get(key(url));
  }

  /** Healthy workers by role; rebuilt when health, membership or a role changed. */
  pools(registry: WorkerRegistry): RolePools {
    const healthy = registry.healthyIds();
    if (this.#pools !== undefined && this.#poolsFor === healthy) return this.#pools;
    const prefill = new Set<WorkerId>();
    const decode = new Set<WorkerId>();
    for (const id of healthy) {
      const rec = registry.get(id);
      if (rec === undefined) continue;
      (this.roleOf(rec.url) === "prefill" ? prefill : decode).add(id);
    }
    this.#pools = { prefill, decode };
    this.#poolsFor = healthy;
    return this.#pools;
  }
}
