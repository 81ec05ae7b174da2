/**
 * The engines' own load, read from their Prometheus `/metrics`: running and
 * waiting requests and KV-cache usage per data-parallel rank, and the busy test on them.
 * Pure: text in, numbers out; scraping is engine-metrics-scraper.ts.
 *
 * Names, as the engines define them:
 * - vLLM V1 (vllm/v1/metrics/loggers.py, `PrometheusStatLogger`, v0.10–0.11):
 *   `vllm:num_requests_running`, `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`
 *   (a fraction, "1 means 100 percent usage"; before v0.10 `vllm:gpu_cache_usage_perc`,
 *   read when the new one is absent). Labels `model_name` and `engine` — the DP engine
 *   index, i.e. the rank, one series per rank when the API server fronts several.
 * - SGLang (python/sglang/srt/metrics/collector.py, `SchedulerMetricsCollector`, v0.4–0.5):
 *   `sglang:num_running_reqs`, `sglang:num_queue_reqs`, `sglang:token_usage` (fraction of
 *   the KV pool in use). Per-rank series carry `dp_rank` when the engine labels them.
 * - vLLM V1's prefill speed (vllm/v1/metrics/loggers.py, recent versions): the sums of two
 *   histograms observed together when each request finishes (vllm/v1/metrics/stats.py,
 *   update_from_finished_request), `vllm:request_prefill_time_seconds` (from its first
 *   scheduling to its first token) and `vllm:request_prefill_kv_computed_tokens` (the tokens
 *   it prefilled, cached ones left out). Only their `_sum` series are read: cumulative, so two
 *   scrapes give the seconds per computed token in between (prefill-speed.ts). SGLang exports
 *   no prefill time of its own (its TTFT histogram includes the queue), so it has none here.
 * A series without a rank label counts for every rank of the engine. Several series of one
 * rank (e.g. two `model_name`s) add up; usage takes the highest.
 */
import { keyOf, type DpRank, type WorkerId, type WorkerKey } from "../core/ids.ts";
import {
  VLLM_CACHE_CONFIG_INFO,
  vllmKvCapacity,
  type KvCapacityReading,
} from "./engine-capacity.ts";
import { readSamples, type Sample } from "./prometheus-text.ts";

export type EngineKind = "vllm" | "sglang";

export interface EngineRankLoad {
  readonly dpRank: DpRank;
  /** Requests being executed. */
  readonly running?: number;
  /** Requests queued in the engine, not yet running. */
  readonly waiting?: number;
  /** KV cache in use, 0..1. */
  readonly kvUsage?: number;
  /** Seconds its finished requests spent in prefill, since the engine started (vLLM only). */
  readonly prefillSeconds?: number;
  /** Tokens those requests prefilled, cached ones left out, since the engine started (vLLM only). */
  readonly prefillTokens?: number;
}

export interface EngineLoad {
  /** Which engine's names were found; undefined when none were. */
  readonly engine: EngineKind | undefined;
  readonly ranks: readonly EngineRankLoad[];
  /** Lines of those metrics that could not be read. */
  readonly errors: readonly string[];
  /** Its KV capacity (vLLM's `vllm:cache_config_info`), when a block size was given and the page has it. */
  readonly kvCapacity?: KvCapacityReading;
}

type Field = "running" | "waiting" | "kvUsage" | "prefillSeconds" | "prefillTokens";

const NAMES: Readonly<Record<string, { engine: EngineKind; field: Field; legacy?: boolean }>> = {
  "vllm:num_requests_running": { engine: "vllm", field: "running" },
  "vllm:num_requests_waiting": { engine: "vllm", field: "waiting" },
  "vllm:kv_cache_usage_perc": { engine: "vllm", field: "kvUsage" },
  "vllm:gpu_cache_usage_perc": { engine: "vllm", field: "kvUsage", legacy: true },
  "vllm:request_prefill_time_seconds_sum": { engine: "vllm", field: "prefillSeconds" },
  "vllm:request_prefill_kv_computed_tokens_sum": { engine: "vllm", field: "prefillTokens" },
  "sglang:num_running_reqs": { engine: "sglang", field: "running" },
  "sglang:num_queue_reqs": { engine: "sglang", field: "waiting" },
  "sglang:token_usage": { engine: "sglang", field: "kvUsage" },
};
const WANTED: ReadonlySet<string> = new Set(Object.keys(NAMES));
const WANTED_WITH_CAPACITY: ReadonlySet<string> = new Set([...WANTED, VLLM_CACHE_CONFIG_INFO]);
/** Labels that name the data-parallel rank of a series (vLLM: engine; SGLang: dp_rank). */
const RANK_LABELS = ["engine", "dp_rank"] as const;

/**
 * Read one engine's exposition for its `dpRanks` ranks (ranks outside 0..dpRanks-1 are ignored);
 * with `blockSize` (the router's), its KV capacity too, in one pass over the page.
 */
export function readEngineLoad(text: string, dpRanks: number, blockSize?: number): EngineLoad {
  const read = readSamples(text, blockSize === undefined ? WANTED : WANTED_WITH_CAPACITY);
  const capacitySamples = read.samples.filter((s) => s.name === VLLM_CACHE_CONFIG_INFO);
  const samples =
    capacitySamples.length === 0
      ? read.samples
      : read.samples.filter((s) => s.name !== VLLM_CACHE_CONFIG_INFO);
  const capacityErrors = read.errors.filter((e) => e.includes(VLLM_CACHE_CONFIG_INFO));
  const errors =
    capacityErrors.length === 0
      ? read.errors
      : read.errors.filter((e) => !e.includes(VLLM_CACHE_CONFIG_INFO));
  const kvCapacity =
    blockSize === undefined
      ? undefined
      : vllmKvCapacity(capacitySamples, capacityErrors, blockSize);
  let engine: EngineKind | undefined;
  // vLLM's current usage name wins over the legacy one when an engine exports both.
  const hasCurrentUsage = samples.some((s) => s.name === "vllm:kv_cache_usage_perc");
  const acc: { -readonly [F in Field]?: number }[] = Array.from({ length: dpRanks }, () => ({}));
  for (const s of samples) {
    const n = NAMES[s.name]!;
    if (n.legacy && hasCurrentUsage) continue;
    if (!Number.isFinite(s.value) || s.value < 0) continue;
    engine ??= n.engine;
    const rank = rankOf(s);
    if (rank === "bad") continue;
    for (let r = rank ?? 0; r < (rank === undefined ? dpRanks : rank + 1); r++) {
      if (r >= dpRanks) break;
      const a = acc[r]!;
      if (n.field === "kvUsage") a.kvUsage = Math.max(a.kvUsage ?? 0, s.value);
      else a[n.field] = (a[n.field] ?? 0) + s.value;
    }
  }
  return {
    engine,
    ranks: acc.map((a, dpRank) => ({ dpRank, ...a })),
    errors,
    ...(kvCapacity ? { kvCapacity } : {}),
  };
}

function rankOf(s: Sample): number | undefined | "bad" {
  for (const l of RANK_LABELS) {
    const v = s.labels[l];
    if (v === undefined) continue;
    return /^\d+$/.test(v) ? Number(v) : "bad";
  }
  return undefined;
}

/**
 * When the engines' own numbers make a rank busy, which decides whether a request waits in the
 * admission queue (docs/fleet.md, "Busy engines and admission"). Either limit may be off.
 */
export interface EngineBusyLimits {
  /** Busy when KV usage is above this fraction (--busy-threshold); undefined = not checked. */
  readonly kvUsage?: number;
  /** Busy when more than this many requests wait in the engine (--busy-waiting); undefined = not checked. */
  readonly waiting?: number;
}

export function isEngineBusy(load: EngineRankLoad, limits: EngineBusyLimits): boolean {
  if (limits.kvUsage !== undefined && load.kvUsage !== undefined && load.kvUsage > limits.kvUsage)
    return true;
  if (limits.waiting !== undefined && load.waiting !== undefined && load.waiting > limits.waiting)
    return true;
  return false;
}

/** The busy (worker, rank) keys of every engine's last report. */
export function busyEngineRanks(
  reports: Iterable<readonly [WorkerId, EngineLoad]>,
  limits: EngineBusyLimits,
): Set<WorkerKey> {
  const out = new Set<WorkerKey>();
  if (limits.kvUsage === undefined && limits.waiting === undefined) return out;
  for (const [workerId, load] of reports) {
    for (const r of load.ranks)
      if (isEngineBusy(r, limits)) out.add(keyOf({ workerId, dpRank: r.dpRank }));
  }
  return out;
}

/** Requests waiting in each (worker, rank)'s engine, for the engine-waiting cost. */
export function waitingByRank(
  reports: Iterable<readonly [WorkerId, EngineLoad]>,
): Map<WorkerKey, number> {
  const out = new Map<WorkerKey, number>();
  for (const [workerId, load] of reports) {
    for (const r of load.ranks)
      if (r.waiting !== undefined && r.waiting > 0)
        out.set(keyOf({ workerId, dpRank: r.dpRank }), r.waiting);
  }
  return out;
}
