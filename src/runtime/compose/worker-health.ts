/**
 * Passive and active health, built the same way on every runtime: outlier ejection from the
 * answers (src/fleet/outlier-detector.ts), periodic health checks that re-read each worker's
 * models, and engine-restart detection (an idle restarted engine sends no event: its instance id
 * changing tells us), which wipes and restores the worker's ranks before it is healthy
 * again. It registers no worker (membership does).
 */
import type { Logger } from "../../core/logger.ts";
import type { Config } from "../../config/schema.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import type { createRouter } from "../../router/index.ts";
import { fetchEngineInfo } from "../../fleet/engine-info.ts";
import { ownFetch } from "./engine-fetch.ts";
import { HealthChecker } from "../../fleet/health.ts";
import type { LoopLagMeter } from "../../observe/process-metrics.ts";
import { fetchServedModels, type ModelDirectory } from "../../fleet/models.ts";
import { OutlierDetector } from "../../fleet/outlier-detector.ts";
import type { WorkerRegistry } from "../../fleet/registry.ts";
import { RestartDetector } from "../../fleet/restart-detector.ts";

/** Outlier ejection: answers a worker needs in an interval before its failure share counts, and the interval. */
const OUTLIER_REQUEST_VOLUME = 20;
const OUTLIER_INTERVAL_MS = 10_000;

export function workerHealth(
  config: Config,
  d: {
    registry: WorkerRegistry;
    models: ModelDirectory;
    members: ReturnType<typeof createRouter>["members"];
    metrics: RouterMetrics;
    toEngines: (url: string, init?: RequestInit) => Promise<Response>;
    now: () => number;
    log: Logger;
    loopLag?: () => LoopLagMeter | undefined;
  },
): { health: HealthChecker; restarts: RestartDetector; outliers: OutlierDetector } {
  const { registry, models, metrics, now, log } = d;
  // Passive health: workers whose answers keep failing are ejected (workers/outlier-detector.ts).
  const outliers = new OutlierDetector(
    {
      consecutiveFailures: config.outlier.consecutiveFailures,
      failurePercent: config.outlier.failurePercent,
      requestVolume: OUTLIER_REQUEST_VOLUME,
      intervalMs: OUTLIER_INTERVAL_MS,
      baseEjectionMs: config.outlier.baseEjectionTime * 1000,
      maxEjectionMs: config.outlier.maxEjectionTime * 1000,
      maxEjectionPercent: config.outlier.maxEjectionPercent,
    },
    () => registry.size,
  );
  const health = new HealthChecker({
    registry,
    intervalMs: config.healthInterval * 1000,
    timeoutMs: config.healthTimeout * 1000,
    outliers,
    now,
    loopLag: d.loopLag,
    maxFencedPercent: config.maxFencedPercent < 100 ? config.maxFencedPercent : undefined,
    onFenceRefused: (id, reason, out, registered) => {
      metrics.fencesRefused.inc([String(id)]);
      log.warn(
        `worker ${id} not fenced: ${out} of ${registered} workers are out of rotation already (--max-fenced-percent ${config.maxFencedPercent}); its health checks decide`,
        { reason },
      );
    },
    onEject: (e) => {
      metrics.workerEjections.inc([String(e.workerId)]);
      log.warn(`worker ${e.workerId} ejected for ${(e.untilMs - now()) / 1000} s`, {
        reason: e.reason,
        ejection: e.multiplier,
      });
    },
    onChange: (id, healthy, reason) =>
      healthy
        ? log.info(`worker ${id} is healthy`)
        : log.warn(`worker ${id} is unhealthy`, { reason }),
    afterHealthy: async (id, url, signal) => {
      const readModels = async () => {
        const served = await fetchServedModels(url, signal, ownFetch);
        if (registry.has(id) && models.set(id, served))
          log.info(`worker ${id} serves ${served.map((m) => m.id).join(", ")}`);
      };
      // Before the worker is marked healthy: a restarted engine's old blocks leave the index first.
      await Promise.all([readModels(), restarts.check(id, url, signal)]);
    },
  });
  // An engine restarted while idle sends no event: its instance id changing tells us.
  const restarts = new RestartDetector({
    probe: async (url) =>
      (await fetchEngineInfo(url, config.healthTimeout * 1000, d.toEngines)).instanceId,
    onRestart: (id, previous, current) => {
      const w = registry.get(id);
      if (w === undefined) return;
      log.warn(
        `worker ${id} restarted (engine instance ${previous} -> ${current}); its blocks leave the index until restored`,
      );
      for (let r = 0; r < w.dpRanks; r++) d.members.addRank(id, r, true);
    },
  });
  return { health, restarts, outliers };
}
