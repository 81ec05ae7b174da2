/**
 * Who is in the fleet and how each worker is doing: health (checks, outlier ejection, restart
 * detection: worker-health.ts) and membership, which registers a worker (its engine info, KV
 * capacity and models) and, on add and removal, tells everyone who keeps per-worker state.
 * It registers no worker itself (compose-router.ts's registerAll and the admin routes do).
 */
import type { CacheTruthParts } from "./cache-truth.ts";
import type { Config } from "../../config/schema.ts";
import type { Logger } from "../../core/logger.ts";
import { probeKvCapacity } from "../../fleet/engine-capacity-probe.ts";
import { fetchEngineInfo } from "../../fleet/engine-info.ts";
import { WorkerMembership } from "../../fleet/membership.ts";
import { fetchServedModels } from "../../fleet/models.ts";
import { tokenizerMismatchGauge } from "../../observe/fleet-metrics.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import {
  forgetWorkerSeries,
  zeroRouterSeries,
  zeroWorkerSeries,
} from "../../observe/zero-series.ts";
import type { createRouter } from "../../router/index.ts";
import type { RuntimeChoices } from "./choices.ts";
import { ownFetch } from "./engine-fetch.ts";
import { ENGINE_QUERY_TIMEOUT_MS, type Fleet } from "./fleet.ts";
import type { LoopLagMeter } from "../../observe/process-metrics.ts";
import { workerHealth } from "./worker-health.ts";

export interface Members {
  readonly membership: WorkerMembership;
  readonly health: ReturnType<typeof workerHealth>["health"];
  readonly outliers: ReturnType<typeof workerHealth>["outliers"];
}

export function buildMembership(
  config: Config,
  choices: Pick<RuntimeChoices, "onEngineInfo" | "onWorkerRemoved">,
  log: Logger,
  d: {
    readonly fleet: Fleet;
    readonly router: ReturnType<typeof createRouter>;
    readonly metrics: RouterMetrics;
    readonly now: () => number;
    readonly cacheTruth?: CacheTruthParts;
    /** The event loop's lag meter, once it exists: a health check the router's own stall timed out is not the engine's failure. */
    readonly loopLag?: () => LoopLagMeter | undefined;
  },
): Members {
  const { fleet, router, metrics } = d;
  const { registry, models, tokenizers, toEngines } = fleet;
  const tokenizerMismatch = tokenizerMismatchGauge(metrics.registry);
  zeroRouterSeries(metrics, { burstClaims: config.burstClaims && config.redis !== undefined });
  const { health, restarts, outliers } = workerHealth(config, {
    registry,
    models,
    members: router.members,
    metrics,
    toEngines,
    now: d.now,
    log,
    loopLag: d.loopLag,
  });
  const membership = new WorkerMembership({
    registry,
    blockSize: config.blockSize,
    maxWorkers: config.maxWorkers,
    load: router.members,
    recovery: router.members,
    lora: fleet.lora,
    engineInfo: async (url) => {
      const info = await fetchEngineInfo(url, ENGINE_QUERY_TIMEOUT_MS, toEngines);
      choices.onEngineInfo?.(url, info);
      return info;
    },
    // vLLM and SGLang say their capacity elsewhere: asked once here, so it is known without --engine-metrics-interval.
    kvCapacity: (url) =>
      probeKvCapacity(url, {
        blockSize: config.blockSize,
        timeoutMs: ENGINE_QUERY_TIMEOUT_MS,
        fetch: toEngines,
      }),
    models: {
      directory: models,
      fetch: (url) =>
        fetchServedModels(url, AbortSignal.timeout(ENGINE_QUERY_TIMEOUT_MS), ownFetch),
    },
    onAdded: (w) => {
      log.info(`worker ${w.id} registered`, {
        url: w.url,
        dp_ranks: w.dpRanks,
        healthy: w.healthy,
      });
      zeroWorkerSeries(metrics, w.id, tokenizerMismatch);
      void restarts.check(w.id, w.url, AbortSignal.timeout(config.healthTimeout * 1000)); // the instance to compare with
      if (!w.healthy) void health.check(w.id);
      if (d.cacheTruth?.autoCanary === true) void d.cacheTruth.canary?.(w.id); // the engine's hashes, block size and events, checked at once
      // Where the engine serves /tokenize, check that it tokenizes like our tokenizer.
      const base = models.of(w.id)?.find((m) => m.parent === null)?.id ?? w.model;
      void tokenizers.check(w.id, w.url, base).then((c) => {
        if (c?.status === "mismatch")
          log.warn(`worker ${w.id}: tokenizer_mismatch`, { url: w.url, detail: c.detail });
        if (c !== undefined && registry.has(w.id))
          tokenizerMismatch.set([String(w.id)], c.status === "mismatch" ? 1 : 0);
      });
    },
    onRemoved: (w) => {
      health.forget(w.id);
      restarts.forget(w.id);
      choices.onWorkerRemoved?.(w.id);
      tokenizers.forget(w.id);
      d.cacheTruth?.truth.forget(w.id);
      forgetWorkerSeries(metrics, w.id, tokenizerMismatch);
      log.info(`worker ${w.id} removed`, { url: w.url });
    },
    warn: (m) => log.warn(m),
  });
  return { membership, health, outliers };
}
