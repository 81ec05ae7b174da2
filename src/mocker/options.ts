/**
 * Options of the simulated engine: the programmatic shape (`MockerOptions`, every field
 * optional), the defaults, validation into a complete `MockerConfig`, and the command-line
 * flags of `switchyard mocker`. Pure: parsing only, no process access.
 */
import type { WorkerId } from "../core/ids.ts";
import { scanFlags } from "../config/flag-scan.ts";
import { DEFAULT_TIMING, type TimingModel } from "./timing.ts";

export interface MockerOptions {
  /** TCP port; 0 picks a free one. */
  port?: number;
  host?: string;
  /** Default: workerIdFromUrl(own base URL), the id a router derives from that URL. */
  workerId?: WorkerId;
  dpRanks?: number;
  /** Tokens per KV block. */
  blockSize?: number;
  /** Prefix-cache capacity in blocks, per dp rank. */
  kvBlocks?: number;
  /** Router base URL; KV events are POSTed to `${routerUrl}/v1/kv/events`. Same as one entry of `routerUrls`. */
  routerUrl?: string;
  /**
   * Router base URLs (each entry may be a comma list): every router gets every KV event,
   * through its own batch queue. Merged with `routerUrl`; duplicates are dropped.
   */
  routerUrls?: string[];
  /** Bearer token sent to the router, and required by this engine's admin routes when set. */
  adminToken?: string;
  eventBatchMs?: number;
  /** Divides every simulated duration (10 = ten times faster than the model). */
  speedup?: number;
  /** Sequences running at once per dp rank; more wait in a FIFO queue. */
  maxConcurrency?: number;
  /** LoRA slots (vLLM's --max-loras). */
  maxLoras?: number;
  /** Adapters loaded at start. */
  loras?: string[];
  prefillUsPerToken?: number;
  prefillOverheadMs?: number;
  decodeMsPerStep?: number;
  decodeBatchFactor?: number;
  /** Served base model name (the first one; requests without `model` use it). */
  model?: string;
  /** More base models served besides `model` (a mixed-model test fleet on one engine). */
  models?: string[];
  /**
   * A Hugging Face tokenizer directory (tokenizer.json + tokenizer_config.json): prompts are
   * tokenized like vLLM, so KV events carry the model's token ids. Without it: one token per byte.
   */
  tokenizer?: string;
  /** Seeds the fake output text. */
  seed?: number;
  /** Events kept per dp rank for /kv/query replay (default 1024, as a Dynamo worker keeps). */
  eventBufferSize?: number;
  /** Disaggregated serving: prefill, decode or both (default both: an ordinary engine). */
  role?: EngineRole;
  /** The P/D protocol spoken (vLLM's kv_transfer_params or SGLang's bootstrap room); default vllm. */
  disagg?: DisaggProtocol;
  /** Bytes of one KV block's content (the pools' block size; default 32768). */
  kvBlockBytes?: number;
  /** Decode side: blocks of the device pool transfers land in (default 4096). */
  kvPoolBlocks?: number;
  /** Prefill side: ms a segment waits for its decode engine before it is removed (default 30000). */
  kvLeaseMs?: number;
  /** Aggregated timing: a running prefill holds back the rank's decode steps, as on a GPU without chunked prefill (default false). */
  prefillStallsDecode?: boolean;
}

export type EngineRole = "prefill" | "decode" | "both";
export type DisaggProtocol = "vllm" | "sglang";

/** Every option resolved; `workerId` and `adminToken` may still be absent, `routerUrls` empty. */
export interface MockerConfig extends TimingModel {
  port: number;
  host: string;
  workerId: WorkerId | undefined;
  dpRanks: number;
  blockSize: number;
  kvBlocks: number;
  /** Where KV events go, in the order given, without trailing slashes or duplicates. */
  routerUrls: string[];
  adminToken: string | undefined;
  eventBatchMs: number;
  maxConcurrency: number;
  maxLoras: number;
  loras: string[];
  model: string;
  /** Every served base model, `model` first, no duplicates. */
  models: string[];
  tokenizer: string | undefined;
  seed: number;
  eventBufferSize: number;
  role: EngineRole;
  disagg: DisaggProtocol;
  kvBlockBytes: number;
  kvPoolBlocks: number;
  kvLeaseMs: number;
  prefillStallsDecode: boolean;
}

export const MOCKER_DEFAULTS = {
  port: 0,
  host: "127.0.0.1",
  dpRanks: 1,
  blockSize: 16,
  kvBlocks: 16384,
  eventBatchMs: 5,
  maxConcurrency: 64,
  maxLoras: 4,
  model: "switchyard-sim",
  seed: 0,
  /** Dynamo's WORKER_KV_INDEXER_BUFFER_SIZE: a router's gap older than this gets a tree dump. */
  eventBufferSize: 1024,
  role: "both",
  disagg: "vllm",
  kvBlockBytes: 32768,
  kvPoolBlocks: 4096,
  kvLeaseMs: 30_000,
  prefillStallsDecode: false,
  ...DEFAULT_TIMING,
} as const;

export class MockerOptionsError extends Error {
  override readonly name = "MockerOptionsError";
  constructor(readonly problems: readonly string[]) {
    super(`invalid mocker options:\n  - ${problems.join("\n  - ")}`);
  }
}

type NumKey = {
  [K in keyof MockerConfig]: MockerConfig[K] extends number ? K : never;
}[keyof MockerConfig];

/** Numeric options: [key, flag, integer?, minimum]. */
const NUMERIC: readonly [NumKey, string, boolean, number][] = [
  ["port", "--port", true, 0],
  ["dpRanks", "--dp-ranks", true, 1],
  ["blockSize", "--block-size", true, 1],
  ["kvBlocks", "--kv-blocks", true, 1],
  ["eventBatchMs", "--event-batch-ms", false, 0],
  ["speedup", "--speedup", false, Number.MIN_VALUE],
  ["maxConcurrency", "--max-concurrency", true, 1],
  ["maxLoras", "--max-loras", true, 0],
  ["prefillUsPerToken", "--prefill-us-per-token", false, 0],
  ["prefillOverheadMs", "--prefill-overhead-ms", false, 0],
  ["decodeMsPerStep", "--decode-ms-per-step", false, 0],
  ["decodeBatchFactor", "--decode-batch-factor", false, 0],
  ["seed", "--seed", true, 0],
  ["eventBufferSize", "--event-buffer-size", true, 1],
  ["kvBlockBytes", "--kv-block-bytes", true, 4],
  ["kvPoolBlocks", "--kv-pool-blocks", true, 1],
  ["kvLeaseMs", "--kv-lease-ms", false, 1],
];

/** Fill defaults and check every field; throws one MockerOptionsError listing all problems. */
export function resolveMockerOptions(opts: MockerOptions = {}): MockerConfig {
  const cfg: MockerConfig = {
    ...MOCKER_DEFAULTS,
    workerId: opts.workerId,
    routerUrls: [],
    adminToken: opts.adminToken,
    loras: [],
    models: [],
    tokenizer: undefined,
  };
  const problems: string[] = [];
  for (const [key, flag, integer, min] of NUMERIC) {
    const value = (opts as Record<string, unknown>)[key];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < min) {
      problems.push(`${flag}: must be ${integer ? "an integer" : "a number"} >= ${min === Number.MIN_VALUE ? "> 0" : min} (got ${String(value)})`);
      continue;
    }
    cfg[key] = value;
  }
  if (cfg.port > 65535) problems.push(`--port: must be <= 65535 (got ${cfg.port})`);
  if (opts.host !== undefined) {
    if (opts.host === "") problems.push("--host: must not be empty");
    else cfg.host = opts.host;
  }
  if (opts.model !== undefined) {
    if (opts.model === "") problems.push("--model: must not be empty");
    else cfg.model = opts.model;
  }
  const extra = (opts.models ?? []).flatMap((m) => m.split(",")).map((m) => m.trim());
  if (extra.some((m) => m === "")) problems.push("--model: names must not be empty");
  cfg.models = [...new Set([cfg.model, ...extra.filter((m) => m !== "")])];
  if (opts.tokenizer !== undefined) {
    if (opts.tokenizer === "") problems.push("--tokenizer: must not be empty");
    else cfg.tokenizer = opts.tokenizer;
  }
  if (opts.workerId !== undefined && (opts.workerId < 0n || opts.workerId >= 1n << 64n)) {
    problems.push(`--worker-id: must be a u64 (got ${opts.workerId})`);
  }
  cfg.routerUrls = resolveRouterUrls(opts, problems);
  const loras = opts.loras ?? [];
  if (loras.some((l) => l === "" || cfg.models.includes(l))) problems.push("--lora: names must be non-empty and differ from every --model");
  if (new Set(loras).size > cfg.maxLoras) problems.push(`--lora: ${new Set(loras).size} adapters exceed --max-loras ${cfg.maxLoras}`);
  cfg.loras = [...new Set(loras)];
  if (opts.role !== undefined) {
    if (opts.role === "prefill" || opts.role === "decode" || opts.role === "both") cfg.role = opts.role;
    else problems.push(`--role: must be prefill, decode or both (got ${String(opts.role)})`);
  }
  if (opts.disagg !== undefined) {
    if (opts.disagg === "vllm" || opts.disagg === "sglang") cfg.disagg = opts.disagg;
    else problems.push(`--disagg: must be vllm or sglang (got ${String(opts.disagg)})`);
  }
  if (cfg.kvBlockBytes % 4 !== 0) problems.push(`--kv-block-bytes: must be a multiple of 4 (got ${cfg.kvBlockBytes})`);
  if (opts.prefillStallsDecode !== undefined) cfg.prefillStallsDecode = opts.prefillStallsDecode === true;
  if (problems.length > 0) throw new MockerOptionsError(problems);
  return cfg;
}

/** `routerUrl` + `routerUrls`, comma lists split, each checked, trailing slashes and duplicates dropped. */
function resolveRouterUrls(opts: MockerOptions, problems: string[]): string[] {
  const raw = [...(opts.routerUrl !== undefined ? [opts.routerUrl] : []), ...(opts.routerUrls ?? [])];
  const urls = new Set<string>();
  for (const entry of raw) {
    for (const part of entry.split(",")) {
      const u = part.trim().replace(/\/+$/, "");
      if (URL.canParse(u) && /^https?:$/.test(new URL(u).protocol)) urls.add(u);
      else problems.push(`--router-url: not an http(s) URL (got "${part.trim()}")`);
    }
  }
  return [...urls];
}

const FLAG_TO_NUMERIC = new Map(NUMERIC.map(([key, flag]) => [flag, key]));
const STRING_FLAGS: Record<string, "host" | "adminToken" | "tokenizer"> = {
  "--host": "host",
  "--admin-token": "adminToken",
  "--tokenizer": "tokenizer",
};

export const MOCKER_USAGE = `usage: switchyard mocker [flags]
  --port N                 listen port, 0 = a free one (default 0)
  --host H                 listen address (default 127.0.0.1)
  --worker-id ID           u64 worker id (default: derived from the base URL, like the router)
  --dp-ranks N             data-parallel ranks (default 1)
  --block-size N           tokens per KV block (default 16)
  --kv-blocks N            prefix-cache blocks per dp rank (default 16384)
  --router-url URL[,URL]   push KV events to URL/v1/kv/events (repeatable: every router
                           gets every event, each through its own queue)
  --admin-token T          Bearer token for the router and this engine's admin routes
  --event-batch-ms MS      KV event batching window (default 5)
  --speedup X              divide all simulated durations by X (default 1)
  --max-concurrency N      running sequences per dp rank; more queue FIFO (default 64)
  --max-loras N            LoRA slots (default 4)
  --lora NAME              adapter loaded at start (repeatable)
  --prefill-us-per-token U prefill cost per uncached prompt token (default ${DEFAULT_TIMING.prefillUsPerToken})
  --prefill-overhead-ms MS per-request prefill overhead (default ${DEFAULT_TIMING.prefillOverheadMs})
  --decode-ms-per-step MS  decode step with one running sequence (default ${DEFAULT_TIMING.decodeMsPerStep})
  --decode-batch-factor F  step slowdown per extra running sequence (default ${DEFAULT_TIMING.decodeBatchFactor})
  --model NAME[,NAME]      served base model name(s); repeatable, the first is the default
                           (default switchyard-sim)
  --tokenizer DIR          Hugging Face tokenizer directory: tokenize prompts like vLLM
                           (default: one token per UTF-8 byte)
  --seed N                 seed of the fake output text (default 0)
  --event-buffer-size N    KV events kept per dp rank for replay (default 1024)
  --role R                 prefill | decode | both (default both): disaggregated serving
  --disagg P               vllm | sglang: the P/D protocol (default vllm)
  --kv-block-bytes N       bytes of one KV block's content in the transfer pools (default 32768)
  --kv-pool-blocks N       decode side: device pool blocks transfers land in (default 4096)
  --kv-lease-ms MS         prefill side: a segment not fetched by then is removed (default 30000)
  --prefill-stalls-decode  a running prefill holds back decode steps (aggregated GPU timing)`;

/** `--flag value` / `--flag=value` -> MockerOptions (values unchecked until resolve). */
export function parseMockerArgs(argv: readonly string[]): MockerOptions {
  const opts: MockerOptions = {};
  const problems: string[] = [];
  for (const item of scanFlags(argv, (flag) => flag === "--prefill-stalls-decode")) {
    if ("problem" in item) {
      problems.push(item.problem);
      continue;
    }
    const { flag, value } = item;
    if (flag === "--prefill-stalls-decode") {
      opts.prefillStallsDecode = value !== "false";
      continue;
    }
    const numKey = FLAG_TO_NUMERIC.get(flag);
    if (numKey !== undefined) {
      const n = value.trim() === "" ? NaN : Number(value);
      if (Number.isNaN(n)) problems.push(`${flag}: not a number ("${value}")`);
      else (opts as Record<string, unknown>)[numKey] = n;
    } else if (flag in STRING_FLAGS) {
      opts[STRING_FLAGS[flag]!] = value;
    } else if (flag === "--worker-id") {
      if (/^\d+$/.test(value)) opts.workerId = BigInt(value);
      else problems.push(`--worker-id: must be a decimal u64 ("${value}")`);
    } else if (flag === "--router-url") {
      (opts.routerUrls ??= []).push(value);
    } else if (flag === "--model") {
      const [first, ...rest] = value.split(",");
      if (opts.model === undefined) opts.model = first!;
      else (opts.models ??= []).push(first!);
      if (rest.length > 0) (opts.models ??= []).push(...rest);
    } else if (flag === "--role") {
      opts.role = value as EngineRole;
    } else if (flag === "--disagg") {
      opts.disagg = value as DisaggProtocol;
    } else if (flag === "--lora") {
      (opts.loras ??= []).push(value);
    } else {
      problems.push(`${flag}: unknown flag`);
    }
  }
  if (problems.length > 0) throw new MockerOptionsError(problems);
  return opts;
}
