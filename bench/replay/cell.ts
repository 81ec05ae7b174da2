/**
 * One replay "cell": one trace, one cluster shape, a list of policies (each on a fresh cluster),
 * the offline bounds beside them. run.ts (one cell from flags) and suite.ts (many) call it.
 * A policy entry may carry router flags: `kv+overlap-credit=8+prefill-wait-factor=2` runs
 * `--policy kv --overlap-credit=8 --prefill-wait-factor=2` under that name (what --sweep uses).
 */
import { loadavg } from "node:os";
import { restartEngine, startCluster, type EngineTiming } from "./cluster.ts";
import { processCpuMs, readEngineCounters, summarizeWork, tierHits } from "./engine-counters.ts";
import { placementTtfts } from "./placement.ts";
import { idealHitRate, simulateOffline } from "./oracle.ts";
import { histogramSince, readHistogram, type HistogramBuckets } from "./prometheus.ts";
import { replay, type PromptFormat, type RequestOutcome } from "./replay.ts";
import type { PolicyResult, ReplayReport } from "./report.ts";
import { histogramQuantile, summarize } from "./stats.ts";
import { fullBlockIds, TRACE_BLOCK_TOKENS, uniqueFullBlocks, type TraceRequest } from "./trace.ts";
import { DEFAULT_WARMUP_PER_ROUTER, warmUp } from "./warmup.ts";

export interface CellOptions {
  trace: readonly TraceRequest[];
  traceName: string;
  engines: number;
  /** Per-engine KV blocks (engine block size). */
  kvBlocks?: number;
  /** Else: this fraction of the replay's unique full trace blocks, split over the engines. */
  kvFraction: number;
  blockSize: number;
  speedup: number;
  timing: EngineTiming;
  policies: readonly string[];
  seed: number;
  maxOutputTokens: number;
  routers: number;
  engineRestarts: number;
  arrivalScale: number;
  promptFormat: PromptFormat;
  /** Router flags for every policy (e.g. issue 13's admission flags, --router-arg). */
  routerArgs: readonly string[];
  /** Extra arguments for every simulated engine (e.g. --request-log FILE). */
  engineArgs?: readonly string[];
  /** Requests whose TTFT is also reported alone (`subset_ttft_ms`), e.g. the fan-out's branches. */
  measured?: (r: TraceRequest) => boolean;
  /** A host (CPU) tier on every engine of this many times its GPU blocks (--kv-host-blocks); absent: none. */
  hostTierFactor?: number;
  /**
   * Drive an already running router instead (its engines' URLs for their counters; its process
   * ids, if given, for its CPU time; sessionHeader: send X-Session-ID, as for prodstack-session).
   */
  externalRouter?: {
    routerUrls: string[];
    engineUrls: string[];
    routerPids?: number[];
    sessionHeader?: boolean;
  };
  ttftSloMs: number;
  /** Warm-up requests per router before each policy's replay (warmup.ts); default DEFAULT_WARMUP_PER_ROUTER, 0: none. */
  warmupPerRouter?: number;
  verbose: boolean;
  onProgress?: (policy: string, done: number, total: number, errors: number) => void;
  onError?: (policy: string, message: string) => void;
}

/** `kv+overlap-credit=8` → policy kv, router args ["--overlap-credit=8"]. */
export function parsePolicyEntry(entry: string): { policy: string; args: string[] } {
  const [policy, ...flags] = entry.split("+");
  return { policy: policy!, args: flags.map((f) => `--${f}`) };
}

/** prodstack-session is given the trace's conversations as session ids, as its users would. */
export function wantsSessionHeader(policy: string): boolean {
  return policy === "prodstack-session";
}

export async function runCell(o: CellOptions): Promise<ReplayReport> {
  const trace = o.trace;
  const unique = uniqueFullBlocks(trace);
  const kvBlocks =
    o.kvBlocks ??
    Math.max(
      1,
      Math.ceil((unique * o.kvFraction * (TRACE_BLOCK_TOKENS / o.blockSize)) / o.engines),
    );
  const ideal = idealHitRate(trace);
  const traceBlocksPerEngine = Math.floor((kvBlocks * o.blockSize) / TRACE_BLOCK_TOKENS);
  const offline: ReplayReport["offline"] = {};
  for (const p of ["oracle", "round-robin", "random"] as const) {
    const r = simulateOffline(trace, p, o.engines, traceBlocksPerEngine, { seed: o.seed });
    offline[p] = {
      hit_rate: r.hitRate,
      hit_rate_vs_ideal: ideal ? r.hitRate / ideal : 0,
      load_max_over_mean: r.loadMaxOverMean,
    };
  }
  const report: ReplayReport = {
    trace: o.traceName,
    requests: trace.length,
    engines: o.engines,
    kv_blocks_per_engine: kvBlocks,
    block_size: o.blockSize,
    speedup: o.speedup,
    unique_blocks: unique,
    ideal_hit_rate: ideal,
    offline,
    policies: {},
    routers: o.routers,
    engine_restarts: o.engineRestarts,
    arrival_scale: o.arrivalScale,
    prompt_format: o.promptFormat,
  };
  for (const entry of o.policies) {
    const { policy, args } = parsePolicyEntry(entry);
    const start = () =>
      startCluster({
        engines: o.engines,
        kvBlocks,
        blockSize: o.blockSize,
        speedup: o.speedup,
        policy,
        timing: o.timing,
        routerArgs: [...o.routerArgs, ...args],
        engineArgs: [
          ...(o.hostTierFactor === undefined
            ? []
            : ["--kv-host-blocks", String(Math.ceil(kvBlocks * o.hostTierFactor))]),
          ...(o.engineArgs ?? []),
        ],
        routers: o.routers,
        quiet: !o.verbose,
      });
    let cluster;
    try {
      cluster = o.externalRouter
        ? {
            routerUrl: o.externalRouter.routerUrls[0]!,
            routerUrls: o.externalRouter.routerUrls,
            routerPids: o.externalRouter.routerPids ?? [],
            engineUrls: o.externalRouter.engineUrls,
            stop: async () => {},
          }
        : await start().catch(async (e) => {
            // One more try: a process that exits at start (a port taken meanwhile, a checkout
            // caught mid-edit) should cost one policy's row, not a suite of many minutes.
            o.onError?.(entry, `cluster did not start (${(e as Error).message}); trying once more`);
            await Bun.sleep(2000);
            return start();
          });
    } catch (e) {
      o.onError?.(entry, `cluster did not start: ${(e as Error).message}; row left out`);
      continue;
    }
    try {
      try {
        await warmUp(trace, {
          routerUrls: cluster.routerUrls,
          perRouter: o.warmupPerRouter ?? DEFAULT_WARMUP_PER_ROUTER,
          promptFormat: o.promptFormat,
          seed: o.seed,
        });
      } catch (e) {
        // Said, not fatal: the replay still measures what it can (its errors show in the row).
        o.onError?.(entry, `warm-up: ${(e as Error).message}`);
      }
      // The routers' histograms as the warm-up left them: the replay's figures are what it adds.
      const metricsBefore = await routerMetrics(cluster.routerUrls);
      const before = await Promise.all(cluster.engineUrls.map(readEngineCounters));
      const cpuBefore = cluster.routerPids.map(processCpuMs);
      const actions = Array.from({ length: o.engineRestarts }, (_, k) => ({
        atFraction: (k + 1) / (o.engineRestarts + 1),
        action: () => restartEngine(cluster.engineUrls[k % cluster.engineUrls.length]!),
      }));
      const { outcomes, wallMs } = await replay(trace, {
        routerUrls: cluster.routerUrls,
        speedup: o.speedup,
        maxOutputTokens: o.maxOutputTokens,
        arrivalScale: o.arrivalScale,
        promptFormat: o.promptFormat,
        sessionHeader: wantsSessionHeader(policy) || (o.externalRouter?.sessionHeader ?? false),
        actions: cluster.engineUrls.length ? actions : [],
        onProgress: (d, t, e) => o.onProgress?.(entry, d, t, e),
      });
      const after = await Promise.all(cluster.engineUrls.map(readEngineCounters));
      const cpuMs = cluster.routerPids.reduce(
        (s, pid, i) => s + processCpuMs(pid) - cpuBefore[i]!,
        0,
      );
      const metricsAfter = await routerMetrics(cluster.routerUrls);
      const overhead = sinceWarmUp(
        metricsAfter.slice(0, 1),
        metricsBefore.slice(0, 1),
        "switchyard_routing_overhead_seconds",
        { phase: "total" },
      );
      const result = resultOf(o, outcomes, wallMs, overhead, ideal);
      result.ttft_prediction_error = predictionError(metricsAfter, metricsBefore);
      if (cluster.engineUrls.length > 0) {
        const w = summarizeWork(before, after);
        if (o.hostTierFactor !== undefined) result.tier_hits = tierHits(before, after, o.blockSize);
        result.work_max_over_mean = w.workMaxOverMean;
        result.engine_request_max_over_mean = w.requestMaxOverMean;
        result.idle_engines = w.idleEngines;
        // Prefill busy time ÷ (engines × replay time), both in trace time.
        result.utilisation =
          (w.computedTokens * o.timing.prefillUsPerToken) / 1000 / o.speedup / (o.engines * wallMs);
      }
      result.router_cpu_us_per_request = cluster.routerPids.length
        ? (cpuMs * 1000) / outcomes.length
        : NaN;
      result.load_avg = loadavg()[0];
      report.policies[entry] = result;
      const firstError = outcomes.find((x) => !x.ok);
      if (firstError) o.onError?.(entry, firstError.error ?? "error");
    } finally {
      await cluster.stop();
    }
  }
  return report;
}

/** Each router's /metrics text ("" where it did not answer). */
function routerMetrics(routerUrls: readonly string[]): Promise<string[]> {
  return Promise.all(
    routerUrls.map((u) =>
      fetch(`${u}/metrics`)
        .then((r) => r.text())
        .catch(() => ""),
    ),
  );
}

/** Histogram `name` summed over the routers, counting only what each gained between its two readings; undefined when none has it. */
function sinceWarmUp(
  after: readonly string[],
  before: readonly string[],
  name: string,
  labels: Record<string, string> = {},
): HistogramBuckets | undefined {
  const byLe = new Map<number, number>();
  let sum = 0;
  let count = 0;
  let seen = false;
  after.forEach((text, i) => {
    const a = readHistogram(text, name, labels);
    if (a === undefined) return;
    seen = true;
    const since = histogramSince(a, readHistogram(before[i] ?? "", name, labels));
    for (const b of since.buckets) byLe.set(b.le, (byLe.get(b.le) ?? 0) + b.count);
    sum += since.sum;
    count += since.count;
  });
  if (!seen) return undefined;
  return {
    buckets: [...byLe].map(([le, c]) => ({ le, count: c })).sort((x, y) => x.le - y.le),
    sum,
    count,
  };
}

/**
 * The routers' TTFT predictor error, p50 and p90, from their switchyard_ttft_prediction_error_ratio
 * histograms summed over every router (each predicts its own requests), the warm-up's first tokens
 * left out. Undefined when no router has the histogram or none predicted anything.
 */
function predictionError(
  after: readonly string[],
  before: readonly string[],
): { p50: number; p90: number } | undefined {
  const h = sinceWarmUp(after, before, "switchyard_ttft_prediction_error_ratio");
  if (h === undefined || h.buckets.every((b) => b.count === 0)) return undefined;
  return { p50: histogramQuantile(h.buckets, 0.5), p90: histogramQuantile(h.buckets, 0.9) };
}

function resultOf(
  o: CellOptions,
  outcomes: RequestOutcome[],
  wallMs: number,
  overhead: HistogramBuckets | undefined,
  ideal: number,
): PolicyResult {
  const ok = outcomes.filter((x) => x.ok);
  // Hit rate in full trace blocks, as the offline bounds count them.
  let cachedBlocks = 0;
  let promptBlocks = 0;
  for (const x of outcomes) {
    promptBlocks += fullBlockIds(o.trace[x.index]!).length;
    cachedBlocks += Math.floor(x.cachedTokens / TRACE_BLOCK_TOKENS);
  }
  const hit = promptBlocks ? cachedBlocks / promptBlocks : 0;
  const share = new Map<string, number>();
  for (const x of ok) if (x.worker) share.set(x.worker, (share.get(x.worker) ?? 0) + 1);
  const counts = [...share.values()];
  while (counts.length < o.engines) counts.push(0);
  const mean = ok.length / o.engines;
  const ttfts = ok.map((x) => x.ttftMs).filter((x) => Number.isFinite(x));
  const t = summarize(ttfts);
  const measured = o.measured;
  const subset =
    measured === undefined
      ? undefined
      : summarize(
          ok
            .filter((x) => measured(o.trace[x.index]!))
            .map((x) => x.ttftMs)
            .filter((x) => Number.isFinite(x)),
        );
  const e = summarize(ok.map((x) => x.e2eMs));
  const placed = summarize(
    placementTtfts(o.trace, outcomes, {
      prefillUsPerToken: o.timing.prefillUsPerToken,
      speedup: o.speedup,
      arrivalScale: o.arrivalScale,
    }),
  );
  return {
    hit_rate: hit,
    hit_rate_vs_ideal: ideal ? hit / ideal : 0,
    ttft_ms: { p50: t.p50, p90: t.p90, p99: t.p99 },
    ...(subset === undefined
      ? {}
      : { subset_ttft_ms: { p50: subset.p50, p90: subset.p90, p99: subset.p99 } }),
    ttft_placement_ms: { p50: placed.p50, p90: placed.p90, p99: placed.p99 },
    e2e_ms: { p50: e.p50, p90: e.p90, p99: e.p99 },
    output_tokens_per_s: ok.reduce((s, x) => s + x.outputTokens, 0) / (wallMs / 1000),
    load_max_over_mean: mean && share.size ? Math.max(...counts) / mean : NaN,
    router_overhead_us: overhead
      ? {
          p50: histogramQuantile(overhead.buckets, 0.5) * 1e6,
          p99: histogramQuantile(overhead.buckets, 0.99) * 1e6,
        }
      : { p50: NaN, p99: NaN },
    requests: outcomes.length,
    errors: outcomes.length - ok.length,
    rejected_429: outcomes.filter((x) => x.error?.startsWith("HTTP 429")).length,
    goodput_rps: ttfts.filter((x) => x <= o.ttftSloMs).length / (wallMs / 1000),
    ttfts,
  };
}
