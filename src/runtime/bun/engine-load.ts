/**
 * The engines' own load on Bun: their /metrics scraped every
 * --engine-metrics-interval make a rank busy past --busy-threshold (KV usage) or --busy-waiting
 * (queued requests), feed --engine-load-weight, pump the admission queue, and show in /metrics
 * (switchyard_engine_load) and GET /v1/workers, and give the TTFT predictor vLLM's own prefill
 * speed. Off (no scraping) with --engine-metrics-interval 0.
 */
import type { AdmissionGate } from "../../router/index.ts";
import type { Logger } from "../../core/logger.ts";
import type { Config } from "../../config/schema.ts";
import type { WorkerId, WorkerKey, WorkerWithDpRank } from "../../core/ids.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import { busyEngineRanks, waitingByRank } from "../../fleet/engine-metrics.ts";
import { EngineMetricsScraper, type ScrapedWorker } from "../../fleet/engine-metrics-scraper.ts";

export class EngineLoad {
  /** Ranks past the busy limits at the last scrape; read by the scheduler at each decision. */
  busy: ReadonlySet<WorkerKey> | undefined;
  /** Queued requests per rank at the last scrape (only with --engine-load-weight > 0). */
  waiting: ReadonlyMap<WorkerKey, number> | undefined;
  #scraper: EngineMetricsScraper | undefined;

  /** Starts nothing yet: `start()` does. */
  wire(
    config: Config,
    deps: {
      workers: () => readonly ScrapedWorker[];
      engineHeaders: Record<string, string>;
      admission: AdmissionGate;
      metrics: RouterMetrics;
      now: () => number;
      log: Logger;
      /** The load books' port for an engine's KV capacity (vLLM's vllm:cache_config_info on the scraped page). */
      kvCapacity?: (worker: WorkerWithDpRank, blocks: number | undefined) => void;
      /** The TTFT predictor's port for a rank's prefill speed as its engine measures it (vLLM's prefill counters). */
      prefillSpeed?: (worker: WorkerWithDpRank, msPerToken: number) => void;
    },
  ): void {
    if (config.engineMetricsInterval <= 0) return;
    const limits = {
      kvUsage: config.scheduler.busyThreshold ?? undefined,
      waiting: config.busyWaiting ?? undefined,
    };
    const scraper = new EngineMetricsScraper({
      workers: deps.workers,
      intervalMs: config.engineMetricsInterval * 1000,
      fetch: (u, init) => fetch(u, { ...init, headers: deps.engineHeaders, redirect: "manual" }),
      now: deps.now,
      warn: (m) => deps.log.warn(m),
      blockSize: config.blockSize,
      onKvCapacity: deps.kvCapacity,
      onPrefillSpeed: deps.prefillSpeed,
      onRound: () => {
        this.busy = busyEngineRanks(scraper.freshLoads(), limits);
        if (config.scheduler.engineWaitingWeight > 0)
          this.waiting = waitingByRank(scraper.freshLoads());
        deps.admission.pump();
      },
    });
    this.#scraper = scraper;
    // switchyard_engine_load{worker,dp_rank,metric}: the last scraped load of every worker.
    deps.metrics.engineMetric.onCollect((g) => {
      g.reset();
      for (const w of deps.workers()) {
        for (const r of scraper.report(w.id)?.load?.ranks ?? []) {
          const labels = (m: string) => [String(w.id), String(r.dpRank), m];
          if (r.running !== undefined) g.set(labels("running"), r.running);
          if (r.waiting !== undefined) g.set(labels("waiting"), r.waiting);
          if (r.kvUsage !== undefined) g.set(labels("kv_usage"), r.kvUsage);
        }
      }
    });
  }

  start(): void {
    this.#scraper?.start();
  }

  stop(): void {
    this.#scraper?.stop();
  }

  /** GET /v1/workers extra: the worker's engine load at the last scrape. */
  describe(id: WorkerId): Record<string, unknown> | undefined {
    const r = this.#scraper?.report(id);
    if (!r) return undefined;
    return {
      engine: r.load?.engine ?? null,
      ...(r.at !== undefined ? { age_ms: Math.round(performance.now() - r.at) } : {}),
      ...(r.error !== undefined ? { error: r.error } : {}),
      ranks: (r.load?.ranks ?? []).map((x) => ({
        dp_rank: x.dpRank,
        running: x.running ?? null,
        waiting: x.waiting ?? null,
        kv_usage: x.kvUsage ?? null,
        busy: this.busy?.has(`${id}:${x.dpRank}`) ?? false,
      })),
    };
  }
}
