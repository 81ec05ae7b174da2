/**
 * The cache check's parts for one router (src/fleet/cache-truth): the tracker, and what it hands
 * the router (the distrusted ranks, the live events), the proxy (each answer's usage) and the
 * admin views (/v1/workers). Off under --policy approx, which uses no engine events to check.
 */
import type { RouterEvent } from "../../core/events.ts";
import type { DpRank, WorkerId, WorkerKey } from "../../core/ids.ts";
import type { Logger } from "../../core/logger.ts";
import { CacheTruth } from "../../fleet/cache-truth/tracker.ts";
import type { CacheCheck } from "../../edge/proxy/cache-check.ts";
import type { MetricsRegistry } from "../../observe/registry.ts";
import { METRIC_PREFIX } from "../../observe/names.ts";

export interface CacheTruthParts {
  readonly truth: CacheTruth;
  readonly routerPorts: { readonly distrusted: () => ReadonlySet<WorkerKey>; readonly onLiveEvents: (events: readonly RouterEvent[]) => void };
  readonly cacheCheck: CacheCheck;
}

export function cacheTruthParts(o: { policy: string; blockSize: number; now: () => number; log: Logger; registry: MetricsRegistry }): CacheTruthParts | undefined {
  if (o.policy === "approx") return undefined;
  const truth = new CacheTruth({ now: o.now, log: o.log });
  truth.bindMetrics(o.registry, METRIC_PREFIX);
  return {
    truth,
    routerPorts: { distrusted: () => truth.distrusted, onLiveEvents: (events) => truth.eventsApplied(events) },
    cacheCheck: { blockSize: o.blockSize, answer: (w: WorkerId, r: DpRank, f) => truth.answer(w, r, f) },
  };
}

/** /v1/workers' extra fields with each worker's cache truth per dp rank (`cache_truth`). */
export function withCacheTruth(
  details: ((id: WorkerId) => Record<string, unknown>) | undefined,
  truth: CacheTruth | undefined,
): ((id: WorkerId) => Record<string, unknown>) | undefined {
  if (truth === undefined) return details;
  return (id) => ({ ...details?.(id), cache_truth: truth.view(id) });
}
