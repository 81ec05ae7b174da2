/**
 * An engine's KV capacity (how many of the router's blocks its cache holds per data-parallel rank)
 * from what real engines report about themselves. Pure: text or JSON in, blocks out; asking the
 * engine is engine-capacity-probe.ts (at registration) and engine-metrics-scraper.ts (each scrape).
 * The simulated engine says it directly (`kv_blocks` of /v1/engine/info, engine-info.ts).
 *
 * vLLM: the gauge `vllm:cache_config_info`, an "info" metric whose labels are CacheConfig's fields
 * as text (`CacheConfig.metrics_info()`: `{key: str(value) for key, value in self.__dict__.items()}`,
 * vllm/config/cache.py at vllm-project/vllm 002f10e0) plus `engine`, the DP engine index, one series
 * per engine (`PrometheusStatLogger.log_metrics_info`, vllm/v1/metrics/loggers.py at 005a810b;
 * before DP metrics, at a6f0308c, there is one series and no `engine` label). The fields read:
 * - `num_gpu_blocks` × `block_size`: the API server's `num_gpu_blocks` is the SUM over the DP engines
 *   it started ("Sum values from all engines in DP case", vllm/v1/engine/utils.py
 *   `wait_for_engine_startup` at 5f25cfbe), so one engine holds that ÷ the number of engine series;
 * - `kv_cache_size_tokens` where present (newer vLLM): one engine's capacity in tokens, kept per
 *   engine, not summed ("Per-DP-engine KV cache capacity in tokens (group-aware)"; num_gpu_blocks ×
 *   block_size "can be wrong for hybrid models"), so it is preferred.
 * A value vLLM has not set yet is the text "None".
 *
 * SGLang: `GET /get_server_info` merges the scheduler's ready message into its answer, whose
 * `max_total_num_tokens` is the token pool of one scheduler, i.e. one DP rank
 * (python/sglang/srt/entrypoints/http_server.py `get_server_info` at sgl-project/sglang 0025436e;
 * managers/data_parallel_controller.py at 000a3db1 reports its first scheduler's). Later versions
 * serve the same body as `GET /server_info`, the old name a deprecated alias. It names no rank:
 * every rank gets it.
 *
 * A value that cannot be a real cache (0 blocks, negative, not a number, or absurdly large) is a
 * problem to report, never a capacity: an engine's wrong number would otherwise cap the credit the
 * router gives its cache, and unknown (the prefix credited whole) is the safe side.
 */
import type { DpRank } from "../core/ids.ts";
import { readSamples, type Sample } from "./prometheus-text.ts";

/**
 * Tokens no rank's KV cache holds: an H200's 141 GB keeps about a million tokens of an 8B model's
 * KV (128 KiB a token), so 2^32 tokens is thousands of times past any engine; a larger value is a
 * wrong number, not a big GPU.
 */
export const MAX_KV_TOKENS_PER_RANK = 2 ** 32;

export const VLLM_CACHE_CONFIG_INFO = "vllm:cache_config_info";

/** What an engine said about its KV capacity, in the router's blocks. */
export interface KvCapacityReading {
  /** Where it came from, for log lines ("vLLM's vllm:cache_config_info"). */
  readonly source: string;
  /** Blocks of each rank the engine named (vLLM's `engine` label). */
  readonly byRank: ReadonlyMap<DpRank, number>;
  /** Blocks of every rank it did not name (a report without a rank). */
  readonly everyRank?: number;
  /** Values that were there but not taken, with why. */
  readonly problems: readonly string[];
}

/** A rank's capacity in blocks, or undefined when the engine said nothing usable for it. */
export function capacityOfRank(r: KvCapacityReading, dpRank: DpRank): number | undefined {
  return r.byRank.get(dpRank) ?? r.everyRank;
}

/**
 * A capacity in tokens as whole router blocks (floor: a partial block holds no full block of a
 * prompt), or why it cannot be one.
 */
export function blocksFromTokens(tokens: number, blockSize: number): number | string {
  if (!Number.isFinite(tokens)) return `${tokens} is not a number of tokens`;
  if (tokens > MAX_KV_TOKENS_PER_RANK)
    return `${tokens} tokens is more than any engine's KV cache holds (at most ${MAX_KV_TOKENS_PER_RANK})`;
  const blocks = Math.floor(tokens / blockSize);
  if (!(blocks >= 1)) return `${tokens} tokens is less than one ${blockSize}-token block`;
  return blocks;
}

/** A count of the router's blocks an engine reported directly (the simulated engine's kv_blocks), or why it is not one. */
export function checkedBlocks(blocks: number, blockSize: number): number | string {
  if (!Number.isSafeInteger(blocks) || blocks < 1)
    return `${blocks} is not a positive number of blocks`;
  if (blocks * blockSize > MAX_KV_TOKENS_PER_RANK)
    return `${blocks} blocks of ${blockSize} tokens is more than any engine's KV cache holds`;
  return blocks;
}

/** vLLM's capacity from its /metrics text; `undefined` when the page has no `vllm:cache_config_info`. */
export function readVllmKvCapacity(text: string, blockSize: number): KvCapacityReading | undefined {
  const { samples, errors } = readSamples(text, new Set([VLLM_CACHE_CONFIG_INFO]));
  return vllmKvCapacity(samples, errors, blockSize);
}

/** The same from samples already read (the scraper reads one page for load and capacity at once). */
export function vllmKvCapacity(
  samples: readonly Sample[],
  errors: readonly string[],
  blockSize: number,
): KvCapacityReading | undefined {
  const series = samples.filter((s) => s.name === VLLM_CACHE_CONFIG_INFO);
  if (series.length === 0 && errors.length === 0) return undefined;
  const source = `vLLM's ${VLLM_CACHE_CONFIG_INFO}`;
  const problems = errors.map((e) => `unreadable line (${e})`);
  const byRank = new Map<DpRank, number>();
  let everyRank: number | undefined;
  // The summed num_gpu_blocks is shared by this many engines (each has its own series).
  const engines = new Set(series.map((s) => s.labels.engine ?? "")).size;
  for (const s of series) {
    const engine = s.labels.engine;
    const rank =
      engine === undefined || engine === ""
        ? undefined
        : /^\d+$/.test(engine)
          ? Number(engine)
          : NaN;
    if (Number.isNaN(rank)) {
      problems.push(`engine label ${JSON.stringify(engine)} is not a DP rank`);
      continue;
    }
    const tokens = tokensOfEngine(s.labels, engines);
    const blocks = typeof tokens === "string" ? tokens : blocksFromTokens(tokens, blockSize);
    if (typeof blocks === "string") {
      problems.push(`${rank === undefined ? "" : `engine ${rank}: `}${blocks}`);
      continue;
    }
    // Without an engine label the series stands for the whole API server and is applied to every
    // rank: should it be a sum over several, it overstates each rank, and an overstated capacity
    // caps nothing, which is what an unknown one does.
    if (rank === undefined) everyRank = blocks;
    else byRank.set(rank, blocks);
  }
  return { source, byRank, everyRank, problems };
}

function tokensOfEngine(
  labels: Readonly<Record<string, string>>,
  engines: number,
): number | string {
  const own = labels.kv_cache_size_tokens;
  if (own !== undefined && own !== "None") return numberLabel("kv_cache_size_tokens", own);
  const blocks = labels.num_gpu_blocks;
  const size = labels.block_size;
  if (blocks === undefined || blocks === "None") return "num_gpu_blocks is not set";
  if (size === undefined || size === "None") return "block_size is not set";
  const b = numberLabel("num_gpu_blocks", blocks);
  const z = numberLabel("block_size", size);
  if (typeof b === "string") return b;
  if (typeof z === "string") return z;
  if (!(z >= 1)) return `block_size ${z} is not a block size`;
  return (b * z) / engines;
}

/** A label's text as a number: Python's str() of an int (vLLM writes them so), nothing looser. */
function numberLabel(name: string, text: string): number | string {
  if (!/^-?\d+$/.test(text)) return `${name} ${JSON.stringify(text)} is not a whole number`;
  const n = Number(text);
  return n < 0 ? `${name} ${n} is negative` : n;
}

/** SGLang's capacity from its server info (parsed JSON); `undefined` when it has no `max_total_num_tokens`. */
export function readSglangKvCapacity(
  info: unknown,
  blockSize: number,
): KvCapacityReading | undefined {
  if (typeof info !== "object" || info === null || !("max_total_num_tokens" in info))
    return undefined;
  const source = "SGLang's server info max_total_num_tokens";
  const tokens = (info as { max_total_num_tokens: unknown }).max_total_num_tokens;
  const blocks =
    typeof tokens === "number" && Number.isInteger(tokens)
      ? tokens < 0
        ? `${tokens} tokens is negative`
        : blocksFromTokens(tokens, blockSize)
      : `${typeof tokens === "bigint" ? String(tokens) : JSON.stringify(tokens)} is not a whole number of tokens`;
  if (typeof blocks === "string") return { source, byRank: new Map(), problems: [blocks] };
  return { source, byRank: new Map(), everyRank: blocks, problems: [] };
}
