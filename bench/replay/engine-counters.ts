/**
 * What the engines themselves counted, read from their /metrics before and after a replay:
 * requests, prompt tokens and cached tokens per engine, so load share and work (prefill tokens
 * actually computed = prompt − cached) do not depend on any router's response headers — a
 * peer router built from its own source is measured the same way. Also each router's CPU time
 * from /proc/PID/stat (Linux only; NaN elsewhere).
 */
import { readFileSync } from "node:fs";

export interface EngineCounters {
  readonly requests: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  /** Blocks loaded from the engine's host / disk tier, and pulled from peers (the simulated engine's; 0 elsewhere). */
  readonly cpuLoadedBlocks?: number;
  readonly diskLoadedBlocks?: number;
  readonly pulledBlocks?: number;
}

/** Σ of every sample of a counter family (all label sets); NaN when the engine has none. */
function total(text: string, name: string): number {
  const re = new RegExp(`^${name.replace(/[.:]/g, "\\$&")}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, "gm");
  let sum = NaN;
  for (const m of text.matchAll(re)) sum = (Number.isNaN(sum) ? 0 : sum) + Number(m[1]);
  return sum;
}

const zeroIfNaN = (x: number) => (Number.isNaN(x) ? 0 : x);

/**
 * Where the replay's prompt tokens came from, as shares of them (engines' own counters): the GPU
 * cache, the host and disk tiers, peers' pulls; the rest was computed. The simulated engine
 * counts tier loads in its cached tokens and pulls apart from them.
 */
export function tierHits(
  before: readonly EngineCounters[],
  after: readonly EngineCounters[],
  blockSize: number,
): { gpu: number; cpu: number; disk: number; peer: number } {
  let prompt = 0;
  let cached = 0;
  let cpu = 0;
  let disk = 0;
  let peer = 0;
  for (const [i, a] of after.entries()) {
    const b = before[i]!;
    prompt += a.promptTokens - b.promptTokens;
    cached += a.cachedTokens - b.cachedTokens;
    cpu += ((a.cpuLoadedBlocks ?? 0) - (b.cpuLoadedBlocks ?? 0)) * blockSize;
    disk += ((a.diskLoadedBlocks ?? 0) - (b.diskLoadedBlocks ?? 0)) * blockSize;
    peer += ((a.pulledBlocks ?? 0) - (b.pulledBlocks ?? 0)) * blockSize;
  }
  if (!(prompt > 0)) return { gpu: NaN, cpu: NaN, disk: NaN, peer: NaN };
  return {
    gpu: (cached - cpu - disk) / prompt,
    cpu: cpu / prompt,
    disk: disk / prompt,
    peer: peer / prompt,
  };
}

/** The simulated engine's counters, else vLLM V1's (prompt tokens, prefix-cache hits in tokens, finished requests). */
export async function readEngineCounters(engineUrl: string): Promise<EngineCounters> {
  const text = await fetch(`${engineUrl}/metrics`, { signal: AbortSignal.timeout(5000) }).then(
    (r) => r.text(),
  );
  const first = (...names: string[]) =>
    names.map((n) => total(text, n)).find((x) => !Number.isNaN(x)) ?? NaN;
  return {
    requests: first("mocker_requests_total", "vllm:request_success_total"),
    promptTokens: first("mocker_prompt_tokens_total", "vllm:prompt_tokens_total"),
    cachedTokens: first("mocker_cached_tokens_total", "vllm:prefix_cache_hits_total"),
    cpuLoadedBlocks: zeroIfNaN(total(text, "mocker_kv_tier_loaded_blocks_total")),
    diskLoadedBlocks: zeroIfNaN(total(text, "mocker_kv_tier_disk_loaded_blocks_total")),
    pulledBlocks: zeroIfNaN(total(text, "mocker_kv_p2p_pulled_blocks_total")),
  };
}

export interface WorkSummary {
  /** Requests each engine received, ÷ the mean (engines' own counters). */
  readonly requestMaxOverMean: number;
  /** Prefill tokens computed (prompt − cached) on the busiest engine ÷ the mean. */
  readonly workMaxOverMean: number;
  /** Engines that computed no prefill at all. */
  readonly idleEngines: number;
  /** Σ prefill tokens computed over all engines. */
  readonly computedTokens: number;
  readonly perEngineComputed: number[];
}

export function summarizeWork(
  before: readonly EngineCounters[],
  after: readonly EngineCounters[],
): WorkSummary {
  const reqs = after.map((a, i) => a.requests - before[i]!.requests);
  const work = after.map(
    (a, i) => a.promptTokens - a.cachedTokens - (before[i]!.promptTokens - before[i]!.cachedTokens),
  );
  const maxOverMean = (xs: number[]) => {
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    return mean > 0 ? Math.max(...xs) / mean : 0;
  };
  return {
    requestMaxOverMean: maxOverMean(reqs),
    workMaxOverMean: maxOverMean(work),
    idleEngines: work.filter((w) => w <= 0).length,
    computedTokens: work.reduce((s, x) => s + x, 0),
    perEngineComputed: work,
  };
}

const TICKS_PER_SECOND = 100; // Linux USER_HZ (getconf CLK_TCK); /proc/PID/stat counts in these

/** utime + stime of a process in ms; NaN when /proc is not there. */
export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state); utime is field 14, stime 15
    return ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND) * 1000;
  } catch {
    return NaN;
  }
}
