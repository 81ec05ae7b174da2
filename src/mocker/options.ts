/**
 * Options of the simulated engine, declared once in MOCKER_OPTIONS (the same table machinery
 * as `switchyard serve`, src/config/option-table.ts): from it come the flags of `switchyard
 * mocker` and their help, the defaults, the programmatic shape (`MockerOptions`, every field
 * optional) and its validation into a complete `MockerConfig`. Pure: parsing only, no
 * process access.
 */
import * as v from "valibot";
import type { WorkerId } from "../core/ids.ts";
import {
  listOptions,
  parseOption,
  scanOptionItems,
  usageRows,
  type OptionDef,
  type TableValues,
} from "../config/option-table.ts";
import { DEFAULT_TIMING } from "./timing.ts";

export type EngineRole = "prefill" | "decode" | "both";
export type DisaggProtocol = "vllm" | "sglang";

/** A mocker option: its table row, and how a flag's text becomes the value (numbers, ids). */
interface MockerOptionDef extends OptionDef {
  readonly read?: (text: string, flag: string) => unknown;
}

/** A flag's text that is not a value of its kind; reported as is. */
class FlagTextError extends Error {}

const readNumber = (text: string, flag: string): number => {
  const n = text.trim() === "" ? NaN : Number(text);
  if (Number.isNaN(n)) throw new FlagTextError(`${flag}: not a number ("${text}")`);
  return n;
};

const readU64 = (text: string, flag: string): bigint => {
  if (!/^\d+$/.test(text)) throw new FlagTextError(`${flag}: must be a decimal u64 ("${text}")`);
  return BigInt(text);
};

/** A number option's value: finite, integral if `integer`, at least `min` (exclusive when `above`). */
function numberAtLeast(min: number, { integer = false, above = false } = {}) {
  const what = `must be ${integer ? "an integer" : "a number"} ${above ? ">" : ">="} ${min}`;
  return v.pipe(
    v.number(what),
    v.finite(what),
    v.check((x) => !integer || Number.isInteger(x), what),
    v.check((x) => (above ? x > min : x >= min), what),
  );
}
const count = (min: number) => numberAtLeast(min, { integer: true });
const nonEmpty = v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty"));
const u64 = v.pipe(
  v.bigint("must be a u64"),
  v.check((x) => x >= 0n && x < 1n << 64n, "must be a u64"),
);
const names = v.array(v.string("must be a name"));
const row = <const D extends MockerOptionDef>(d: D): D => d;

export const MOCKER_OPTIONS = {
  port: row({
    schema: v.optional(v.pipe(count(0), v.maxValue(65535, "must be <= 65535")), 0),
    read: readNumber,
    meta: "N",
    help: "listen port, 0 = a free one",
  }),
  host: row({ schema: v.optional(nonEmpty, "127.0.0.1"), meta: "H", help: "listen address" }),
  workerId: row({
    schema: v.optional(u64),
    read: readU64,
    meta: "ID",
    help: "u64 worker id (default: derived from --advertise-url, else the\nlisten URL, as the router derives it)",
    defaultText: false,
  }),
  /**
   * The URL routers reach this engine at. In a container the listen URL (http://0.0.0.0:8000)
   * is the same for every engine, so every engine would claim the same worker id; the id must
   * come from the address the router registers instead.
   */
  advertiseUrl: row({
    schema: v.optional(
      v.pipe(
        nonEmpty,
        v.check(
          (u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol),
          "must be an http:// or https:// URL",
        ),
      ),
    ),
    meta: "URL",
    help: "the URL routers reach this engine at (e.g. http://engine-1:8000);\nits worker id is derived from it, as the router does",
    defaultText: false,
  }),
  dpRanks: row({
    schema: v.optional(count(1), 1),
    read: readNumber,
    meta: "N",
    help: "data-parallel ranks",
  }),
  blockSize: row({
    schema: v.optional(count(1), 16),
    read: readNumber,
    meta: "N",
    help: "tokens per KV block",
  }),
  kvBlocks: row({
    schema: v.optional(count(1), 16384),
    read: readNumber,
    meta: "N",
    help: "prefix-cache blocks per dp rank",
  }),
  routerUrls: row({
    flag: "--router-url",
    schema: v.optional(names, []),
    list: true,
    meta: "URL[,URL]",
    help: "push KV events to URL/v1/kv/events (repeatable: every router\ngets every event, each through its own queue)",
  }),
  adminToken: row({
    schema: v.optional(v.string()),
    meta: "T",
    help: "Bearer token for this engine's admin routes (never sent to a router)",
  }),
  eventsToken: row({
    schema: v.optional(v.string()),
    meta: "T",
    help: "Bearer token sent with every KV event push: the router's --events-token\n(else SWITCHYARD_EVENTS_TOKEN, or the file --events-token-file / SWITCHYARD_EVENTS_TOKEN_FILE names)",
  }),
  eventsTokenFile: row({
    schema: v.optional(v.string()),
    meta: "FILE",
    help: "read --events-token from this file (surrounding whitespace trimmed)",
  }),
  eventBatchMs: row({
    schema: v.optional(numberAtLeast(0), 5),
    read: readNumber,
    meta: "MS",
    help: "KV event batching window",
  }),
  speedup: row({
    schema: v.optional(numberAtLeast(0, { above: true }), DEFAULT_TIMING.speedup),
    read: readNumber,
    meta: "X",
    help: "divide all simulated durations by X",
  }),
  maxConcurrency: row({
    schema: v.optional(count(1), 64),
    read: readNumber,
    meta: "N",
    help: "running sequences per dp rank; more queue FIFO",
  }),
  maxLoras: row({
    schema: v.optional(count(0), 4),
    read: readNumber,
    meta: "N",
    help: "LoRA slots",
  }),
  loras: row({
    flag: "--lora",
    schema: v.optional(names, []),
    list: true,
    meta: "NAME",
    help: "adapter loaded at start (repeatable)",
  }),
  prefillUsPerToken: row({
    schema: v.optional(numberAtLeast(0), DEFAULT_TIMING.prefillUsPerToken),
    read: readNumber,
    meta: "U",
    help: "prefill cost per uncached prompt token",
  }),
  prefillOverheadMs: row({
    schema: v.optional(numberAtLeast(0), DEFAULT_TIMING.prefillOverheadMs),
    read: readNumber,
    meta: "MS",
    help: "per-request prefill overhead",
  }),
  decodeMsPerStep: row({
    schema: v.optional(numberAtLeast(0), DEFAULT_TIMING.decodeMsPerStep),
    read: readNumber,
    meta: "MS",
    help: "decode step with one running sequence",
  }),
  decodeBatchFactor: row({
    schema: v.optional(numberAtLeast(0), DEFAULT_TIMING.decodeBatchFactor),
    read: readNumber,
    meta: "F",
    help: "step slowdown per extra running sequence",
  }),
  model: row({
    schema: v.optional(nonEmpty, "switchyard-sim"),
    list: true,
    meta: "NAME[,NAME]",
    help: "served base model name(s); repeatable, the first is the default\n",
  }),
  tokenizer: row({
    schema: v.optional(nonEmpty),
    meta: "DIR",
    help: "Hugging Face tokenizer directory: tokenize prompts like vLLM\n(default: one token per UTF-8 byte)",
    defaultText: false,
  }),
  seed: row({
    schema: v.optional(count(0), 0),
    read: readNumber,
    meta: "N",
    help: "seed of the fake output text",
  }),
  requestLog: row({
    schema: v.optional(nonEmpty),
    meta: "FILE",
    help: "append a JSON line per request at its first token: when it\narrived, got the prefill lane and answered, tokens computed",
    defaultText: false,
  }),
  /** Dynamo's WORKER_KV_INDEXER_BUFFER_SIZE: the events a router can ask to replay; a router's gap older than this gets a tree dump. */
  eventBufferSize: row({
    schema: v.optional(count(1), 1024),
    read: readNumber,
    meta: "N",
    help: "KV events kept per dp rank for replay",
  }),
  role: row({
    schema: v.optional(
      v.picklist(["prefill", "decode", "both"], "must be prefill, decode or both"),
      "both",
    ),
    meta: "R",
    help: "prefill | decode | both: disaggregated serving",
  }),
  disagg: row({
    schema: v.optional(v.picklist(["vllm", "sglang"], "must be vllm or sglang"), "vllm"),
    meta: "P",
    help: "vllm | sglang: the P/D protocol",
  }),
  kvBlockBytes: row({
    schema: v.optional(
      v.pipe(
        count(4),
        v.check((x) => x % 4 === 0, "must be a multiple of 4"),
      ),
      32768,
    ),
    read: readNumber,
    meta: "N",
    help: "bytes of one KV block's content in the transfer pools",
  }),
  kvPoolBlocks: row({
    schema: v.optional(count(1), 4096),
    read: readNumber,
    meta: "N",
    help: "decode side: device pool blocks transfers land in",
  }),
  kvLeaseMs: row({
    schema: v.optional(numberAtLeast(1), 30_000),
    read: readNumber,
    meta: "MS",
    help: "prefill side: a segment not fetched by then is removed",
  }),
  /*
   * Lower tiers and peer pulls. Off unless --kv-host-blocks is set (an engine without tiers
   * behaves as before). The defaults are an H100 node's figures (docs/engines.md says where
   * each comes from): a DGX H100 has 2 TB of DRAM for 8 GPUs of 80 GB HBM (host tier ~3x the
   * GPU cache), PCIe Gen5 x16 between host and GPU (63 GB/s raw per direction, ~50 sustained),
   * PCIe Gen4 NVMe data drives (~7 GB/s read), and one 400 Gb/s NIC per GPU (50 GB/s).
   */
  kvHostBlocks: row({
    schema: v.optional(count(0), 0),
    read: readNumber,
    meta: "N",
    help: "host (CPU) tier blocks per dp rank: GPU evictions are copied there and\nloaded back instead of recomputed; 0 = no tiers (an H100 node: ~3x --kv-blocks)",
  }),
  kvDiskBlocks: row({
    schema: v.optional(count(0), 0),
    read: readNumber,
    meta: "N",
    help: "disk tier blocks per dp rank under the host tier (0 = none; needs --kv-host-blocks)",
  }),
  kvDiskDir: row({
    schema: v.optional(nonEmpty),
    meta: "DIR",
    help: "directory of the disk tier's slot file (default: the system temp dir)",
    defaultText: false,
  }),
  kvHostGbps: row({
    schema: v.optional(numberAtLeast(0, { above: true }), 50),
    read: readNumber,
    meta: "GB/S",
    help: "modelled host->GPU load bandwidth (PCIe Gen5 x16, sustained)",
  }),
  kvDiskGbps: row({
    schema: v.optional(numberAtLeast(0, { above: true }), 7),
    read: readNumber,
    meta: "GB/S",
    help: "modelled disk->GPU load bandwidth (one PCIe Gen4 NVMe drive)",
  }),
  kvPeerGbps: row({
    schema: v.optional(numberAtLeast(0, { above: true }), 50),
    read: readNumber,
    meta: "GB/S",
    help: "modelled peer pull bandwidth (one 400 Gb/s NIC per GPU)",
  }),
  kvBytesPerToken: row({
    schema: v.optional(count(1), 131_072),
    read: readNumber,
    meta: "N",
    help: "modelled KV bytes per token for load and pull times\n(Llama-3.1-8B bf16: 2 x 32 layers x 8 KV heads x 128 x 2 B)",
  }),
  kvPullDeadlineMs: row({
    schema: v.optional(numberAtLeast(1), 2_000),
    read: readNumber,
    meta: "MS",
    help: "a peer pull not done by then is abandoned and the prefix computed",
  }),
  scheduler: row({
    schema: v.optional(v.picklist(["v1", "fifo"], "must be v1 or fifo"), "v1"),
    meta: "S",
    help: "v1: vLLM V1's steps (a token budget per step, running decodes\nfirst, prefill chunks in what is left); fifo: one prefill at a\ntime per rank beside the decodes (earlier results)",
  }),
  maxNumBatchedTokens: row({
    schema: v.optional(count(1), 8192),
    read: readNumber,
    meta: "N",
    help: "--scheduler v1: tokens one step computes (vLLM's\nmax_num_batched_tokens)",
  }),
  prefillStallsDecode: row({
    schema: v.optional(v.boolean("must be true or false"), false),
    switch: true,
    read: (text: string) => text !== "false",
    help: "--scheduler fifo: a running prefill holds back decode steps\n(aggregated GPU timing without chunked prefill)",
    defaultText: false,
  }),
  // Faults, for the router's cache check (src/fleet/cache-truth): each makes this engine's cache
  // differ from what its events or its tokens let a router believe, as real fleets go wrong.
  faultChatTemplate: row({
    schema: v.optional(v.boolean("must be true or false"), false),
    switch: true,
    read: (text: string) => text !== "false",
    help: "fault: chat prompts through another chat template (a system preamble the router does not add)",
    defaultText: false,
  }),
  faultBlockSize: row({
    schema: v.optional(count(1)),
    read: readNumber,
    meta: "N",
    help: "fault: the cache runs on blocks of N tokens while the engine still says --block-size",
    defaultText: false,
  }),
  faultHashSeed: row({
    schema: v.optional(v.string()),
    meta: "S",
    help: "fault: block hashes with another seed (as another PYTHONHASHSEED or --prefix-caching-hash-algo)",
    defaultText: false,
  }),
  faultDropEvents: row({
    schema: v.optional(v.pipe(numberAtLeast(0), v.maxValue(1, "must be <= 1")), 0),
    read: readNumber,
    meta: "F",
    help: "fault: share of KV events dropped before they get an id (a full publisher queue: no gap to see)",
  }),
  faultEventsUrl: row({
    schema: v.optional(v.string()),
    meta: "URL",
    help: "fault: KV events go to this URL instead of the routers' (a ZMQ port pointing elsewhere)",
    defaultText: false,
  }),
  faultLoraSalt: row({
    schema: v.optional(v.string()),
    meta: "S",
    help: "fault: LoRA blocks salted with this added to the adapter's name",
    defaultText: false,
  }),
} as const;

type TableConfig = TableValues<typeof MOCKER_OPTIONS>;
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The programmatic options: any option of the table (see its help), plus `routerUrl` (one
 * more router, same as an entry of `routerUrls`) and `models` (base models served besides
 * `model`, each entry maybe a comma list).
 */
export type MockerOptions = { [K in keyof TableConfig]?: TableConfig[K] } & {
  routerUrl?: string;
  models?: string[];
};

/**
 * Every option resolved: `workerId` and `adminToken` may still be absent; `routerUrls` in the
 * order given without trailing slashes or duplicates; `models` every served base model,
 * `model` first, no duplicates.
 */
export type MockerConfig = Mutable<TableConfig> & {
  models: string[];
  workerId: WorkerId | undefined;
};

const OPTION_LIST = listOptions<MockerOptionDef>(MOCKER_OPTIONS);

/** Each option's default, from the table. */
export const MOCKER_DEFAULTS = Object.fromEntries(
  OPTION_LIST.map((o) => [o.path[0]!, v.getDefault(o.def.schema) as unknown]),
) as unknown as Readonly<TableConfig>;

export class MockerOptionsError extends Error {
  override readonly name = "MockerOptionsError";
  constructor(readonly problems: readonly string[]) {
    super(`invalid mocker options:\n  - ${problems.join("\n  - ")}`);
  }
}

/** Options resolved on their own rules below, not by their schema alone. */
const RESOLVED_APART: ReadonlySet<string> = new Set(["routerUrls", "model", "loras"]);

/** Fill defaults and check every field; throws one MockerOptionsError listing all problems. */
export function resolveMockerOptions(opts: MockerOptions = {}): MockerConfig {
  const problems: string[] = [];
  const cfg: Record<string, unknown> = {};
  for (const o of OPTION_LIST) {
    const key = o.path[0]!;
    const value = (opts as Record<string, unknown>)[key];
    const parsed = RESOLVED_APART.has(key)
      ? parseOption(o.def, undefined)
      : parseOption(o.def, value);
    if (parsed.ok) cfg[key] = parsed.value;
    else {
      problems.push(`${o.flag}: ${parsed.message} (got ${String(value)})`);
      cfg[key] = v.getDefault(o.def.schema);
    }
  }
  const c = cfg as MockerConfig;
  if (opts.model !== undefined) {
    if (opts.model === "") problems.push("--model: must not be empty");
    else c.model = opts.model;
  }
  const extra = (opts.models ?? []).flatMap((m) => m.split(",")).map((m) => m.trim());
  if (extra.some((m) => m === "")) problems.push("--model: names must not be empty");
  c.models = [...new Set([c.model, ...extra.filter((m) => m !== "")])];
  c.routerUrls = resolveRouterUrls(opts, problems);
  const loras = opts.loras ?? [];
  if (loras.some((l) => l === "" || c.models.includes(l)))
    problems.push("--lora: names must be non-empty and differ from every --model");
  if (new Set(loras).size > c.maxLoras)
    problems.push(`--lora: ${new Set(loras).size} adapters exceed --max-loras ${c.maxLoras}`);
  c.loras = [...new Set(loras)];
  if (c.kvDiskBlocks > 0 && c.kvHostBlocks === 0)
    problems.push(
      "--kv-disk-blocks: needs --kv-host-blocks (the disk tier sits under the host tier)",
    );
  if (problems.length > 0) throw new MockerOptionsError(problems);
  return c;
}

/** `routerUrl` + `routerUrls`, comma lists split, each checked, trailing slashes and duplicates dropped. */
function resolveRouterUrls(opts: MockerOptions, problems: string[]): string[] {
  const raw = [
    ...(opts.routerUrl !== undefined ? [opts.routerUrl] : []),
    ...(opts.routerUrls ?? []),
  ];
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

/**
 * The longest sequence the engine takes: its KV cache of one rank (vLLM refuses at start a
 * max_model_len its cache cannot hold), as /v1/models, /tokenize and SGLang's server info say.
 */
export function maxModelLen(c: Pick<MockerConfig, "kvBlocks" | "blockSize">): number {
  return c.kvBlocks * c.blockSize;
}

export const MOCKER_USAGE = [
  "usage: switchyard mocker [flags]",
  ...usageRows(OPTION_LIST, 24),
].join("\n");

/** `--flag value` / `--flag=value` -> MockerOptions (values unchecked until resolve). */
export function parseMockerArgs(argv: readonly string[]): MockerOptions {
  const opts: Record<string, unknown> = {};
  const models: string[] = [];
  const problems: string[] = [];
  for (const item of scanOptionItems(OPTION_LIST, argv)) {
    if ("problem" in item) {
      problems.push(item.problem);
      continue;
    }
    if (!("option" in item)) continue;
    const { option, text } = item;
    const key = option.path[0]!;
    if (key === "model") {
      models.push(...text.split(","));
      continue;
    }
    let value: unknown;
    try {
      value = (option.def as MockerOptionDef).read?.(text, option.flag) ?? text;
    } catch (e) {
      if (!(e instanceof FlagTextError)) throw e;
      problems.push(e.message);
      continue;
    }
    if (option.def.list) opts[key] = [...((opts[key] as unknown[] | undefined) ?? []), value];
    else opts[key] = value;
  }
  // --model a --model b,c: the first name is the default model, the others are served too.
  if (models.length > 0) opts.model = models[0];
  if (models.length > 1) opts.models = models.slice(1);
  if (problems.length > 0) throw new MockerOptionsError(problems);
  return opts as MockerOptions;
}
