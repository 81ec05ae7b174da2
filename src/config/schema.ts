/**
 * Every option of `switchyard serve`, its default and its validation (valibot). The input
 * is a raw object whose values may be strings (flags, env) or JSON values (config file);
 * numbers given as strings are coerced here, so one schema serves all three sources.
 */
import { type TokenizerSpec, TokenizerSpecsSchema } from "./tokenizers.ts";
import * as v from "valibot";

import { LOAD_METRICS, type LoadMetric } from "../router/choose/filters/load-guard.ts";
import { POLICY_NAMES, type PolicyName } from "../router/choose/registry.ts";

/** The scheduler's own lists, so a new policy or load metric needs no second edit here. */
export const POLICIES = POLICY_NAMES;
export type { PolicyName };


/**
 * The tokenizer encoders (src/tokens/README.md): the ecosystem's libraries by default, as
 * issue 11 asks; our byte-level BPE only when the operator opts in (bench/tokens shows why
 * one would: ~4-5x the pure library's speed on a first-sight prompt).
 */
export const TOKENIZER_LIBRARIES = ["hf", "native", "bpe"] as const;
export type TokenizerLibraryName = (typeof TOKENIZER_LIBRARIES)[number];

export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export const LOG_FORMATS = ["text", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
export type LogLevel = (typeof LOG_LEVELS)[number];

/** One option: its config key, its flag, its env variables and a line of help. */
export interface OptionSpec {
  readonly key: keyof RawConfigShape;
  readonly flag: string;
  readonly env: readonly string[];
  /** Repeatable flag (collects an array); env and file give a comma list or an array. */
  readonly list?: boolean;
  /** A switch: `--flag` alone means true; `--flag=false` (or `--flag false`) turns it off. */
  readonly boolean?: boolean;
  /** What the value looks like in `--help` (default X, or URL for lists). */
  readonly meta?: string;
  readonly help: string;
}

/** The shape before validation; every value is unknown. */
export type RawConfigShape = Record<
  | "port" | "host" | "worker" | "tokenizer" | "tokenizerWorkers" | "tokenizerLibrary" | "engines" | "policy" | "blockSize" | "overlapWeight" | "temperature"
  | "sessionTtl" | "adminToken" | "healthInterval" | "healthTimeout" | "maxBodyBytes" | "redis"
  | "maxRetries" | "approxTtl" | "logLevel" | "engineSpeedup"
  | "connectTimeout" | "firstByteTimeout" | "responseTimeout" | "streamIdleTimeout" | "idleTimeout" | "drainTimeout"
  | "outlierConsecutiveFailures" | "outlierFailurePercent" | "outlierBaseEjectionTime" | "outlierMaxEjectionTime" | "outlierMaxEjectionPercent"
  | "loadGuard" | "loadGuardMetric" | "activeRequestWeight" | "busyThreshold" | "inflightOverlap" | "overlapCredit" | "prefillWaitFactor" | "prefillWaitSlack"
  | "redisToken" | "redisTimeout" | "sessionReaperInterval" | "loraLoadOnDemand" | "loraPath" | "loraEvict" | "zmqEndpoint" | "zmqReplayEndpoint"
  | "maxSessions" | "maxSessionIdLength" | "loraAllow" | "engineToken" | "workerAllow"
  | "zmqDpRanks" | "workersFile" | "engineMetricsInterval" | "busyWaiting" | "workerCapacity" | "maxQueue" | "queueTimeout" | "engineLoadWeight"
  | "disagg" | "prefillWorker" | "decodeWorker" | "disaggMinPrefillTokens" | "bootstrapPort"
  | "logFormat" | "otlpEndpoint" | "otlpSampleRatio",
  unknown
>;

export const OPTIONS: readonly OptionSpec[] = [
  { key: "port", flag: "--port", env: ["SWITCHYARD_PORT", "PORT"], help: "listen port (default 8080; 0 = any free port)" },
  { key: "host", flag: "--host", env: ["SWITCHYARD_HOST"], help: "listen address (default 0.0.0.0 with --admin-token, else 127.0.0.1)" },
  { key: "tokenizer", flag: "--tokenizer", env: ["SWITCHYARD_TOKENIZER"], list: true, meta: "[MODEL=]PATH", help: "Hugging Face model directory (tokenizer.json + chat template) the engines tokenize with: text is routed on the exact tokens; MODEL=PATH for one model of a mixed fleet; repeatable. Without one: token-id prompts exact, text approximate" },
  { key: "tokenizerLibrary", flag: "--tokenizer-library", env: ["SWITCHYARD_TOKENIZER_LIBRARY"], help: `the encoder behind --tokenizer: ${TOKENIZER_LIBRARIES.join("|")} (default hf = @huggingface/tokenizers, pure JS; native = HF's Rust tokenizers addon; bpe = our byte-level BPE, ~4-5x faster on a first-sight prompt, exact on the vectors, for byte-level BPE tokenizers only: src/tokens/README.md)` },
  { key: "tokenizerWorkers", flag: "--tokenizer-workers", env: ["SWITCHYARD_TOKENIZER_WORKERS"], help: "Workers that encode prompts of 32k+ characters off the event loop, so a first-sight 128k-token prompt does not stall other requests (default: cores - 1, 1 to 4; 0 = encode in the event loop)" },
  { key: "worker", flag: "--worker", env: ["SWITCHYARD_WORKERS"], list: true, help: "engine base URL; repeatable (env: comma list)" },
  { key: "prefillWorker", flag: "--prefill-worker", env: ["SWITCHYARD_PREFILL_WORKERS"], list: true, help: "a prefill engine of a disaggregated deployment (--disagg); repeatable" },
  { key: "decodeWorker", flag: "--decode-worker", env: ["SWITCHYARD_DECODE_WORKERS"], list: true, help: "a decode engine of a disaggregated deployment (--disagg); repeatable" },
  { key: "disagg", flag: "--disagg", env: ["SWITCHYARD_DISAGG"], help: "disaggregated prefill/decode protocol: off | vllm (kv_transfer_params) | sglang (bootstrap rooms) (default off)" },
  { key: "disaggMinPrefillTokens", flag: "--disagg-min-prefill-tokens", env: ["SWITCHYARD_DISAGG_MIN_PREFILL_TOKENS"], help: "prompts with fewer uncached tokens on the chosen decode engine are prefilled there, not on a prefill engine (default 2048; measured in bench/README.md)" },
  { key: "bootstrapPort", flag: "--bootstrap-port", env: ["SWITCHYARD_BOOTSTRAP_PORT"], help: "--disagg sglang: the prefill engines' bootstrap port when their /v1/engine/info does not say (default 8998, SGLang's)" },
  { key: "engines", flag: "--engines", env: ["SWITCHYARD_ENGINES"], help: "start N embedded simulated engines in-process (default 0)" },
  { key: "policy", flag: "--policy", env: ["SWITCHYARD_POLICY"], help: `routing policy: ${POLICIES.join("|")} (default kv)` },
  { key: "blockSize", flag: "--block-size", env: ["SWITCHYARD_BLOCK_SIZE"], help: "KV block size in tokens (default 16)" },
  { key: "overlapWeight", flag: "--overlap-weight", env: ["SWITCHYARD_OVERLAP_WEIGHT"], help: "weight of uncached prefill blocks in the cost (default 1)" },
  { key: "temperature", flag: "--temperature", env: ["SWITCHYARD_TEMPERATURE"], help: "softmax temperature; 0 = always the cheapest (default 0)" },
  { key: "sessionTtl", flag: "--session-ttl", env: ["SWITCHYARD_SESSION_TTL"], help: "sticky session sliding TTL, seconds (default 300)" },
  { key: "sessionReaperInterval", flag: "--session-reaper-interval", env: ["SWITCHYARD_SESSION_REAPER_INTERVAL"], help: "seconds between sweeps for expired sessions; an expired engine-backed session is closed on its engine (default 30)" },
  { key: "adminToken", flag: "--admin-token", env: ["SWITCHYARD_ADMIN_TOKEN"], help: "bearer token for admin endpoints; without it they answer loopback only" },
  { key: "healthInterval", flag: "--health-interval", env: ["SWITCHYARD_HEALTH_INTERVAL"], help: "seconds between worker health checks (default 2)" },
  { key: "healthTimeout", flag: "--health-timeout", env: ["SWITCHYARD_HEALTH_TIMEOUT"], help: "seconds before a health check counts as failed (default 1)" },
  { key: "maxBodyBytes", flag: "--max-body-bytes", env: ["SWITCHYARD_MAX_BODY_BYTES"], help: "largest accepted request body (default 16777216)" },
  { key: "redis", flag: "--redis", env: ["SWITCHYARD_REDIS_URL", "SWITCHYARD_REDIS"], meta: "URL", help: "shared Redis (sessions + active load): redis://, rediss:// or https:// (Upstash REST); default: in-memory, this router only" },
  { key: "redisToken", flag: "--redis-token", env: ["SWITCHYARD_REDIS_TOKEN", "UPSTASH_REDIS_REST_TOKEN"], meta: "TOKEN", help: "Upstash REST token (needed when --redis is https://)" },
  { key: "redisTimeout", flag: "--redis-timeout", env: ["SWITCHYARD_REDIS_TIMEOUT"], help: "seconds a request may wait for Redis; a command slower than this marks Redis down (no waits) until it answers a probe (default 0.05)" },
  { key: "maxRetries", flag: "--max-retries", env: ["SWITCHYARD_MAX_RETRIES"], help: "other workers tried when one fails before its first byte (default 2)" },
  { key: "connectTimeout", flag: "--connect-timeout", env: ["SWITCHYARD_CONNECT_TIMEOUT"], help: "seconds to open a connection to an engine before trying another worker; 0 = none (default 5)" },
  { key: "firstByteTimeout", flag: "--first-byte-timeout", env: ["SWITCHYARD_FIRST_BYTE_TIMEOUT"], help: "seconds from sending a request to the engine's first answer byte (covers prefill of long prompts) before trying another worker; 0 = none (default 120)" },
  { key: "responseTimeout", flag: "--response-timeout", env: ["SWITCHYARD_RESPONSE_TIMEOUT"], help: "seconds a request that is not streamed may wait for its answer (it comes whole: prefill and every output token) before trying another worker; 0 = none (default 600)" },
  { key: "streamIdleTimeout", flag: "--stream-idle-timeout", env: ["SWITCHYARD_STREAM_IDLE_TIMEOUT"], help: "seconds an answer may stall between two chunks before it ends with an error event; 0 = none (default 60)" },
  { key: "idleTimeout", flag: "--idle-timeout", env: ["SWITCHYARD_IDLE_TIMEOUT"], help: "seconds a client connection may take to send its request (slow bodies are cut after 1-2x this) or sit idle; proxied streams are exempt; 1-255 (default 10)" },
  { key: "drainTimeout", flag: "--drain-timeout", env: ["SWITCHYARD_DRAIN_TIMEOUT"], help: "on SIGTERM/SIGINT: seconds in-flight requests get to finish before exit (default 30)" },
  { key: "outlierConsecutiveFailures", flag: "--outlier-consecutive-failures", env: ["SWITCHYARD_OUTLIER_CONSECUTIVE_FAILURES"], help: "failed answers in a row (5xx, cut stream, missed deadline) that eject a worker; 0 = off (default 5)" },
  { key: "outlierFailurePercent", flag: "--outlier-failure-percent", env: ["SWITCHYARD_OUTLIER_FAILURE_PERCENT"], help: "share of failed answers (of at least 20 in 10 s) that ejects a worker; 0 = off (default 50)" },
  { key: "outlierBaseEjectionTime", flag: "--outlier-base-ejection-time", env: ["SWITCHYARD_OUTLIER_BASE_EJECTION_TIME"], help: "seconds of a first ejection; the k-th in a row lasts k times as long (default 30)" },
  { key: "outlierMaxEjectionTime", flag: "--outlier-max-ejection-time", env: ["SWITCHYARD_OUTLIER_MAX_EJECTION_TIME"], help: "longest ejection, seconds (default 300)" },
  { key: "outlierMaxEjectionPercent", flag: "--outlier-max-ejection-percent", env: ["SWITCHYARD_OUTLIER_MAX_EJECTION_PERCENT"], help: "most workers ejected at once, percent (one always may be; default 50)" },
  { key: "approxTtl", flag: "--approx-ttl", env: ["SWITCHYARD_APPROX_TTL"], help: "approx policy: seconds a routing decision stays in the index (default 120)" },
  { key: "logLevel", flag: "--log-level", env: ["SWITCHYARD_LOG_LEVEL"], help: `${LOG_LEVELS.join("|")} (default info)` },
  { key: "loadGuard", flag: "--load-guard", env: ["SWITCHYARD_LOAD_GUARD"], help: "kv/approx: skip workers whose load exceeds FACTOR x the mean (e.g. 1.25); 0 = off (default 0)" },
  { key: "prefillWaitFactor", flag: "--prefill-wait-factor", env: ["SWITCHYARD_PREFILL_WAIT_FACTOR"], help: "kv/approx: skip workers where the request's prefill would be done later than FACTOR x the best worker's (+ --prefill-wait-slack x the mean queued prefill); 0 = off, Dynamo's formula (default 1.05)" },
  { key: "prefillWaitSlack", flag: "--prefill-wait-slack", env: ["SWITCHYARD_PREFILL_WAIT_SLACK"], help: "share of the workers' mean queued prefill added to the prefill-wait bound, so it loosens as the cluster gets busy (default 0.75)" },
  { key: "loadGuardMetric", flag: "--load-guard-metric", env: ["SWITCHYARD_LOAD_GUARD_METRIC"], help: "what the load guard measures: requests|blocks (default requests)" },
  { key: "activeRequestWeight", flag: "--active-request-weight", env: ["SWITCHYARD_ACTIVE_REQUEST_WEIGHT"], help: "kv/approx: extra cost per active request on a worker (default 0)" },
  { key: "overlapCredit", flag: "--overlap-credit", env: ["SWITCHYARD_OVERLAP_CREDIT"], help: "kv/approx: credit per cached prompt block beyond the prefill it saves, so requests follow the cache (default 16; 0 = Dynamo's reference formula, see bench/README.md)" },
  { key: "inflightOverlap", flag: "--inflight-overlap", env: ["SWITCHYARD_INFLIGHT_OVERLAP"], help: "kv/approx: count a prefix that in-flight requests on a worker hold as cached there: true|false (default true; false = Dynamo's formula)" },
  { key: "busyThreshold", flag: "--busy-threshold", env: ["SWITCHYARD_BUSY_THRESHOLD"], help: "a rank is busy when its engine's KV usage (engine metrics) or its booked prefill tokens / --worker-capacity exceed this fraction; busy ranks are skipped, and when all are, requests queue (default off)" },
  { key: "loraLoadOnDemand", flag: "--lora-load-on-demand", env: ["SWITCHYARD_LORA_LOAD_ON_DEMAND"], boolean: true, help: "treat a `model` no worker serves (not a base model) as a LoRA adapter and load it from --lora-path (default off)" },
  { key: "loraPath", flag: "--lora-path", env: ["SWITCHYARD_LORA_PATH"], meta: "TEMPLATE", help: "lora_path sent to the engine when the router loads an adapter; {name} = the adapter (default {name})" },
  { key: "loraEvict", flag: "--lora-evict", env: ["SWITCHYARD_LORA_EVICT"], boolean: true, help: "no free LoRA slot anywhere: unload the least recently used adapter instead of answering 503 (default off)" },
  { key: "zmqEndpoint", flag: "--zmq-endpoint", env: ["SWITCHYARD_ZMQ_ENDPOINTS"], list: true, meta: "URL=tcp://H:P", help: "vLLM worker URL and its KV event PUB endpoint (rank 0); repeatable. Registers the worker, no /kv/query restore" },
  { key: "zmqReplayEndpoint", flag: "--zmq-replay-endpoint", env: ["SWITCHYARD_ZMQ_REPLAY_ENDPOINTS"], list: true, meta: "URL=tcp://H:P", help: "that worker's KV event replay (ROUTER) endpoint; repeatable" },
  { key: "maxSessions", flag: "--max-sessions", env: ["SWITCHYARD_MAX_SESSIONS"], help: "sticky sessions held in memory; past it the least recently used is dropped (default 100000)" },
  { key: "maxSessionIdLength", flag: "--max-session-id-length", env: ["SWITCHYARD_MAX_SESSION_ID_LENGTH"], help: "longest session id accepted (X-Session-ID, session_control, /v1/route); longer: 400 (default 256)" },
  { key: "loraAllow", flag: "--lora-allow", env: ["SWITCHYARD_LORA_ALLOW"], list: true, meta: "PATTERN", help: "adapter names the router may load or evict (* = any run of characters); repeatable; default: any valid name" },
  { key: "engineToken", flag: "--engine-token", env: ["SWITCHYARD_ENGINE_TOKEN"], meta: "TOKEN", help: "bearer token the router sends to engines on its own calls (/kv/query); the admin token is never sent" },
  { key: "workerAllow", flag: "--worker-allow", env: ["SWITCHYARD_WORKER_ALLOW"], list: true, meta: "PATTERN", help: "worker URLs POST /v1/workers may register (* = any run of characters, e.g. http://10.0.0.*:8000); repeatable; default: any" },
  { key: "zmqDpRanks", flag: "--zmq-dp-ranks", env: ["SWITCHYARD_ZMQ_DP_RANKS"], list: true, meta: "URL=N", help: "that worker's data-parallel rank count: ranks 0..N-1 are subscribed (rank r on port + r) and routed to (default 1); repeatable" },
  { key: "workersFile", flag: "--workers-file", env: ["SWITCHYARD_WORKERS_FILE"], meta: "PATH", help: "JSON or YAML list of workers (POST /v1/workers entries, kv_events included), re-read when it changes; workers leave when their entry does" },
  { key: "engineMetricsInterval", flag: "--engine-metrics-interval", env: ["SWITCHYARD_ENGINE_METRICS_INTERVAL"], help: "seconds between scrapes of each engine's /metrics (vLLM/SGLang running, waiting, KV usage); 0 = off (default 2)" },
  { key: "busyWaiting", flag: "--busy-waiting", env: ["SWITCHYARD_BUSY_WAITING"], help: "a rank whose engine reports more than N waiting requests is busy (engine metrics; default off)" },
  { key: "workerCapacity", flag: "--worker-capacity", env: ["SWITCHYARD_WORKER_CAPACITY"], help: "prefill tokens a rank may have booked (its max_num_batched_tokens): with --busy-threshold, a rank past threshold x this is busy (default unbounded)" },
  { key: "maxQueue", flag: "--max-queue", env: ["SWITCHYARD_MAX_QUEUE"], help: "requests that may wait when every worker is busy; more get 429 (default 1024; 0 = 429 at once)" },
  { key: "queueTimeout", flag: "--queue-timeout", env: ["SWITCHYARD_QUEUE_TIMEOUT"], help: "seconds a request may wait for a worker that is not busy before a 429 (default 30)" },
  { key: "engineLoadWeight", flag: "--engine-load-weight", env: ["SWITCHYARD_ENGINE_LOAD_WEIGHT"], help: "kv/approx: cost in blocks per request the rank's engine reports waiting (engine metrics); 0 = off (default 0)" },
  { key: "engineSpeedup", flag: "--engine-speedup", env: ["SWITCHYARD_ENGINE_SPEEDUP"], help: "time speed-up of embedded engines (default 1)" },

  // ---- Observability: access log, traces (src/observe) ----
  { key: "logFormat", flag: "--log-format", env: ["SWITCHYARD_LOG_FORMAT"], help: `${LOG_FORMATS.join("|")}: every log line, the per-request access line included (default text; json = one JSON object per line, for log shippers)` },
  { key: "otlpEndpoint", flag: "--otlp-endpoint", env: ["SWITCHYARD_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"], meta: "URL", help: "export OpenTelemetry spans over OTLP/HTTP (protobuf) to this collector, e.g. http://collector:4318 (/v1/traces is appended unless the path names it); default: no spans" },
  { key: "otlpSampleRatio", flag: "--otlp-sample-ratio", env: ["SWITCHYARD_OTLP_SAMPLE_RATIO", "OTEL_TRACES_SAMPLER_ARG"], help: "share of new traces recorded, 0 to 1 (default 1: every request); a client's traceparent decides for its own trace. Recording costs router CPU per request (src/observe/README.md)" },
];

/** "12" -> 12 and " 1.5 " -> 1.5; anything else passes unchanged so the type check names it. */
function coerceNumber(x: unknown): unknown {
  if (typeof x === "string" && x.trim() !== "" && Number.isFinite(Number(x))) return Number(x);
  return x;
}

const num = (what: string) => v.pipe(v.unknown(), v.transform(coerceNumber), v.number(`must be ${what}`));
const int = (min: number, max: number) =>
  v.pipe(num(`an integer in [${min}, ${max}]`), v.integer(`must be an integer in [${min}, ${max}]`), v.minValue(min, `must be >= ${min}`), v.maxValue(max, `must be <= ${max}`));
const nonNegative = (what: string) => v.pipe(num(what), v.minValue(0, "must be >= 0"));
const positive = (what: string) => v.pipe(num(what), v.gtValue(0, "must be > 0"));

const httpUrl = v.pipe(
  v.string("must be a URL string"),
  v.check((s) => {
    try {
      const u = new URL(s);
      return u.protocol === "http:" || u.protocol === "https:";
    } catch {
      return false;
    }
  }, "must be an http:// or https:// URL"),
);

const redisUrl = v.pipe(
  v.string("must be a URL string"),
  v.check((s) => {
    try {
      return ["redis:", "rediss:", "https:", "http:"].includes(new URL(s).protocol);
    } catch {
      return false;
    }
  }, "must be a redis://, rediss:// or https:// URL"),
);

/** "1", "true", "yes", "on" -> true; "0", "false", "no", "off" -> false; booleans pass through. */
function coerceBoolean(x: unknown): unknown {
  if (typeof x !== "string") return x;
  const s = x.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(s)) return true;
  if (["0", "false", "no", "off"].includes(s)) return false;
  return x;
}

const bool = v.pipe(v.unknown(), v.transform(coerceBoolean), v.boolean("must be true or false"));

/** vLLM's ZMQ endpoints: tcp://host:port, ipc://path or inproc://name. */
const ZMQ_SCHEMES = ["tcp://", "ipc://", "inproc://"];

/** One `WORKER_URL=ENDPOINT` pair. */
export interface ZmqEndpointPair {
  /** The worker's HTTP base URL (it is registered with it). */
  readonly workerUrl: string;
  /** Its rank-0 endpoint; rank r uses endpointForDpRank(endpoint, r). */
  readonly endpoint: string;
}

/** "http://w:8000=tcp://w:5557" -> pair; the split is at the last "=" (endpoints have none). */
export function parseZmqPair(s: string): ZmqEndpointPair | string {
  const eq = s.lastIndexOf("=");
  if (eq <= 0) return `must be WORKER_URL=tcp://host:port (got ${JSON.stringify(s)})`;
  const workerUrl = s.slice(0, eq).trim();
  const endpoint = s.slice(eq + 1).trim();
  try {
    const u = new URL(workerUrl);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("scheme");
  } catch {
    return `worker URL must be http:// or https:// (got ${JSON.stringify(workerUrl)})`;
  }
  if (!ZMQ_SCHEMES.some((p) => endpoint.startsWith(p) && endpoint.length > p.length)) {
    return `endpoint must be tcp://host:port, ipc://path or inproc://name (got ${JSON.stringify(endpoint)})`;
  }
  return { workerUrl, endpoint };
}

const zmqPairs = v.pipe(
  v.unknown(),
  v.transform(toList),
  v.array(v.string("must be WORKER_URL=ENDPOINT"), "must be a list of WORKER_URL=ENDPOINT"),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const out: ZmqEndpointPair[] = [];
    for (const item of dataset.value) {
      const p = parseZmqPair(item);
      if (typeof p === "string") {
        addIssue({ message: p });
        return NEVER;
      }
      out.push(p);
    }
    return out;
  }),
);

/** One `WORKER_URL=N` pair of --zmq-dp-ranks. */
export interface DpRanksPair {
  readonly workerUrl: string;
  readonly dpRanks: number;
}

const dpRankPairs = v.pipe(
  v.unknown(),
  v.transform(toList),
  v.array(v.string("must be WORKER_URL=N"), "must be a list of WORKER_URL=N"),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const out: DpRanksPair[] = [];
    for (const item of dataset.value) {
      const eq = item.lastIndexOf("=");
      const n = Number(item.slice(eq + 1).trim());
      if (eq <= 0 || !Number.isInteger(n) || n < 1 || n > 1024) {
        addIssue({ message: `must be WORKER_URL=N with N an integer in [1, 1024] (got ${JSON.stringify(item)})` });
        return NEVER;
      }
      out.push({ workerUrl: item.slice(0, eq).trim(), dpRanks: n });
    }
    return out;
  }),
);

/** "a,b" -> ["a","b"]; a single string -> [it]; arrays pass through. */
function toList(x: unknown): unknown {
  if (typeof x === "string") return x.split(",").map((s) => s.trim()).filter((s) => s !== "");
  return x;
}

export const ConfigSchema = v.object({
  port: v.optional(int(0, 65535), 8080),
  host: v.optional(v.pipe(v.string(), v.nonEmpty("must not be empty"))),
  worker: v.optional(v.pipe(v.unknown(), v.transform(toList), v.array(httpUrl, "must be a list of URLs")), []),
  engines: v.optional(int(0, 64), 0),
  policy: v.optional(v.picklist(POLICIES, `must be one of ${POLICIES.join(", ")}`), "kv"),
  blockSize: v.optional(int(1, 1 << 20), 16),
  overlapWeight: v.optional(nonNegative("a number >= 0"), 1),
  temperature: v.optional(nonNegative("a number >= 0"), 0),
  sessionTtl: v.optional(positive("a number of seconds > 0"), 300),
  sessionReaperInterval: v.optional(positive("a number of seconds > 0"), 30),
  adminToken: v.optional(v.pipe(v.string(), v.minLength(8, "must be at least 8 characters"))),
  healthInterval: v.optional(positive("a number of seconds > 0"), 2),
  healthTimeout: v.optional(positive("a number of seconds > 0"), 1),
  maxBodyBytes: v.optional(int(1, 2 ** 31), 16 * 1024 * 1024),
  redis: v.optional(redisUrl),
  maxRetries: v.optional(int(0, 16), 2),
  // Deadlines (seconds; 0 = none). First byte: a 128k-token prompt can take tens of seconds
  // of prefill, longer behind a queue on the engine, so the default is generous; it stays
  // under common client timeouts (100-120 s), so the router fails over before they give up.
  connectTimeout: v.optional(nonNegative("a number of seconds >= 0"), 5),
  firstByteTimeout: v.optional(nonNegative("a number of seconds >= 0"), 120),
  // Not streamed: the first byte is the whole answer (thousands of output tokens at tens of
  // ms each can take minutes), so a much longer wait before it counts as a hang.
  responseTimeout: v.optional(nonNegative("a number of seconds >= 0"), 600),
  streamIdleTimeout: v.optional(nonNegative("a number of seconds >= 0"), 60),
  // Bun.serve's idleTimeout: whole seconds, 1..255 (0 would hold slow clients forever).
  idleTimeout: v.optional(int(1, 255), 10),
  drainTimeout: v.optional(nonNegative("a number of seconds >= 0"), 30),
  outlierConsecutiveFailures: v.optional(int(0, 1_000_000), 5),
  outlierFailurePercent: v.optional(v.pipe(nonNegative("a percentage"), v.maxValue(100, "must be <= 100")), 50),
  outlierBaseEjectionTime: v.optional(positive("a number of seconds > 0"), 30),
  outlierMaxEjectionTime: v.optional(positive("a number of seconds > 0"), 300),
  outlierMaxEjectionPercent: v.optional(v.pipe(nonNegative("a percentage"), v.maxValue(100, "must be <= 100")), 50),
  approxTtl: v.optional(positive("a number of seconds > 0"), 120),
  logLevel: v.optional(v.picklist(LOG_LEVELS, `must be one of ${LOG_LEVELS.join(", ")}`), "info"),
  engineSpeedup: v.optional(positive("a number > 0"), 1),
  loadGuard: v.optional(v.pipe(nonNegative("a number >= 0"), v.check((x) => x === 0 || x >= 1, "must be 0 (off) or >= 1")), 0),
  loadGuardMetric: v.optional(v.picklist(LOAD_METRICS, `must be one of ${LOAD_METRICS.join(", ")}`), "requests"),
  activeRequestWeight: v.optional(nonNegative("a number >= 0"), 0),
  busyThreshold: v.optional(positive("a number > 0")),
  // On by default: the index learns blocks only after the engine's prefill and event, so
  // without this a burst sharing a new prefix scatters (bench/README.md: +9% hit rate at a
  // quarter capacity on the synthetic trace, on par with approx's in-flight knowledge).
  inflightOverlap: v.optional(bool, true),
  // Not Dynamo's 0: on the Mooncake replays the greedy cost scatters conversations over cold
  // workers (0.59-0.68 x ideal hit rate); 32 reached the offline oracle (0.91 x). With the
  // prefill-wait bound below, 16 does as well on every workload (issue 14, bench/README.md).
  overlapCredit: v.optional(nonNegative("a number >= 0"), 16),
  // Issue 14: on traffic nobody tuned for (generated chat / agentic shapes) the credit alone
  // piled work on a few engines (work max/mean 1.5-2.4, engines idle); a bound on the prefill
  // wait relative to the best worker, loosened by a share of the mean queue as the cluster
  // saturates, keeps the hits and cuts TTFT p90. 1.05 / 0.75 (with credit 16) is the setting
  // whose worst TTFT p90 over 7 workloads x 3 loads is closest to each one's best (1.15x;
  // bench/replay/sim-grid.ts, bench/README.md). 0 = off (Dynamo).
  prefillWaitFactor: v.optional(v.pipe(nonNegative("a number >= 0"), v.check((x) => x === 0 || x >= 1, "must be 0 (off) or >= 1")), 1.05),
  prefillWaitSlack: v.optional(nonNegative("a number >= 0"), 0.75),
  redisToken: v.optional(v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty"))),
  redisTimeout: v.optional(v.pipe(positive("a number of seconds > 0"), v.maxValue(10, "must be at most 10 seconds")), 0.05),
  loraLoadOnDemand: v.optional(bool, false),
  loraPath: v.optional(v.pipe(v.string("must be a string"), v.includes("{name}", "must contain {name}")), "{name}"),
  loraEvict: v.optional(bool, false),
  zmqEndpoint: v.optional(zmqPairs, []),
  tokenizer: v.optional(TokenizerSpecsSchema, []),
  tokenizerWorkers: v.optional(int(0, 64)),
  tokenizerLibrary: v.optional(v.picklist(TOKENIZER_LIBRARIES, `must be one of ${TOKENIZER_LIBRARIES.join(", ")}`), "hf"),
  zmqReplayEndpoint: v.optional(zmqPairs, []),
  maxSessions: v.optional(int(1, 2 ** 31), 100_000),
  maxSessionIdLength: v.optional(int(1, 65_536), 256),
  loraAllow: v.optional(v.pipe(v.unknown(), v.transform(toList), v.array(v.pipe(v.string(), v.nonEmpty("must not be empty")), "must be a list of name patterns")), []),
  engineToken: v.optional(v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty"))),
  workerAllow: v.optional(v.pipe(v.unknown(), v.transform(toList), v.array(v.pipe(v.string(), v.nonEmpty("must not be empty")), "must be a list of URL patterns")), []),
  zmqDpRanks: v.optional(dpRankPairs, []),
  workersFile: v.optional(v.pipe(v.string("must be a file path"), v.nonEmpty("must not be empty"))),
  engineMetricsInterval: v.optional(nonNegative("a number of seconds >= 0"), 2),
  busyWaiting: v.optional(nonNegative("a number of requests >= 0")),
  workerCapacity: v.optional(int(1, 2 ** 40)),
  maxQueue: v.optional(int(0, 1_000_000), 1024),
  queueTimeout: v.optional(positive("a number of seconds > 0"), 30),
  engineLoadWeight: v.optional(nonNegative("a number >= 0"), 0),
  disagg: v.optional(v.picklist(["off", "vllm", "sglang"], "must be off, vllm or sglang"), "off"),
  prefillWorker: v.optional(v.pipe(v.unknown(), v.transform(toList), v.array(httpUrl, "must be a list of URLs")), []),
  decodeWorker: v.optional(v.pipe(v.unknown(), v.transform(toList), v.array(httpUrl, "must be a list of URLs")), []),
  // Measured on the Mooncake conversation trace (bench/README.md, "Disaggregated prefill/decode"):
  // 2048 halves TTFT against always splitting and keeps decode ITL p99 under 20 ms.
  disaggMinPrefillTokens: v.optional(int(0, 2 ** 31), 2048),
  bootstrapPort: v.optional(int(1, 65535), 8998),
  // ---- Observability (src/observe) ----
  logFormat: v.optional(v.picklist(LOG_FORMATS, `must be one of ${LOG_FORMATS.join(", ")}`), "text"),
  otlpEndpoint: v.optional(httpUrl),
  otlpSampleRatio: v.optional(v.pipe(nonNegative("a number in [0, 1]"), v.maxValue(1, "must be <= 1")), 1),
});

/** The validated configuration of `switchyard serve`. */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly workers: readonly string[];
  /** Disaggregated prefill/decode (src/app/disagg): the protocol, the role-tagged workers, the local-prefill threshold. */
  readonly disagg: "off" | "vllm" | "sglang";
  readonly prefillWorkers: readonly string[];
  readonly decodeWorkers: readonly string[];
  readonly disaggMinPrefillTokens: number;
  readonly bootstrapPort: number;
  readonly engines: number;
  readonly policy: PolicyName;
  readonly blockSize: number;
  readonly overlapWeight: number;
  readonly temperature: number;
  /** Seconds. */
  readonly sessionTtl: number;
  /** Seconds. */
  readonly sessionReaperInterval: number;
  readonly adminToken: string | undefined;
  /** Seconds. */
  readonly healthInterval: number;
  /** Seconds. */
  readonly healthTimeout: number;
  readonly maxBodyBytes: number;
  readonly redis: string | undefined;
  readonly maxRetries: number;
  /** Seconds; 0 = none. */
  readonly connectTimeout: number;
  /** Seconds; 0 = none. Streamed requests. */
  readonly firstByteTimeout: number;
  /** Seconds; 0 = none. Requests not streamed (their first byte is the whole answer). */
  readonly responseTimeout: number;
  /** Seconds; 0 = none. */
  readonly streamIdleTimeout: number;
  /** Seconds (Bun.serve idleTimeout). */
  readonly idleTimeout: number;
  /** Seconds. */
  readonly drainTimeout: number;
  /** Outlier ejection (workers/outlier-detector.ts); times in seconds. */
  readonly outlier: {
    readonly consecutiveFailures: number;
    readonly failurePercent: number;
    readonly baseEjectionTime: number;
    readonly maxEjectionTime: number;
    readonly maxEjectionPercent: number;
  };
  /** Seconds. */
  readonly approxTtl: number;
  readonly logLevel: LogLevel;
  readonly engineSpeedup: number;
  /** Load guard factor; null = off. */
  readonly loadGuard: number | null;
  readonly loadGuardMetric: LoadMetric;
  readonly activeRequestWeight: number;
  /** null = no busy filtering. */
  readonly busyThreshold: number | null;
  readonly inflightOverlap: boolean;
  readonly overlapCredit: number;
  /** null = off (filters/prefill-wait-bound.ts). */
  readonly prefillWaitFactor: number | null;
  readonly prefillWaitSlack: number;
  /** Upstash REST token for an https:// --redis. */
  readonly redisToken: string | undefined;
  /** Seconds a request may wait for Redis before it is treated as down. */
  readonly redisTimeout: number;
  /** Unknown `model` names (not a worker's base model) are adapters to load from loraPath. */
  readonly loraLoadOnDemand: boolean;
  /** lora_path template for loads the router starts; `{name}` is replaced by the adapter. */
  readonly loraPath: string;
  /** No free slot: unload the least recently used adapter instead of refusing. */
  readonly loraEvict: boolean;
  /** vLLM workers fed by ZMQ KV events (registered at start, never restored from /kv/query). */
  readonly zmqEndpoints: readonly ZmqWorker[];
  /** Tokenizer directories: one per model, and/or a default (model undefined). */
  readonly tokenizers: readonly TokenizerSpec[];
  /** Encode workers per tokenizer (src/runtime/bun/tokens/encode-pool.ts); 0: in the event loop; null: cores - 1 (1 to 4). */
  readonly tokenizerWorkers: number | null;
  /** The encoder behind the tokenizers: the HF libraries (pure JS or native) or our byte-level BPE (opt-in). */
  readonly tokenizerLibrary: TokenizerLibraryName;
  /** Sticky bindings the in-memory store holds; the least recently used goes first. */
  readonly maxSessions: number;
  /** Longest session id accepted (characters). */
  readonly maxSessionIdLength: number;
  /** Adapter name patterns the router may load or evict; empty = any valid name. */
  readonly loraAllow: readonly string[];
  /** Bearer token for the router's own calls to engines (never the admin token). */
  readonly engineToken: string | undefined;
  /** URL patterns POST /v1/workers accepts; empty = any URL (but never this router's own). */
  readonly workerAllow: readonly string[];
  /** Workers listed in a JSON/YAML file, re-read on change; undefined = none. */
  readonly workersFile: string | undefined;
  /** Seconds between engine /metrics scrapes; 0 = no scraping. */
  readonly engineMetricsInterval: number;
  /** Engine-reported waiting requests above which a rank is busy; null = not checked. */
  readonly busyWaiting: number | null;
  /** Booked prefill tokens per rank (max_num_batched_tokens) for --busy-threshold; null = unbounded. */
  readonly workerCapacity: number | null;
  /** Admission queue bound (requests). */
  readonly maxQueue: number;
  /** Seconds. */
  readonly queueTimeout: number;
  /** Cost (blocks) per engine-reported waiting request; 0 = off. */
  readonly engineLoadWeight: number;
  /** Observability (src/observe): the log's line format, and where spans go (undefined: no spans). */
  readonly logFormat: LogFormat;
  readonly otlpEndpoint: string | undefined;
  /** Share of new traces recorded (a client's sampled flag decides for its own). */
  readonly otlpSampleRatio: number;
}

/** A vLLM worker whose KV events come over ZMQ. */
export interface ZmqWorker extends ZmqEndpointPair {
  readonly replayEndpoint: string | undefined;
  /** Data-parallel ranks publishing (--zmq-dp-ranks; default 1). */
  readonly dpRanks: number;
}

/** Validated output -> Config, filling the defaults that depend on other fields. */
export function finishConfig(o: v.InferOutput<typeof ConfigSchema>): Config {
  return {
    port: o.port,
    // Without a token the admin endpoints answer loopback peers only, so listening on
    // every interface is the safe default only once a token protects them.
    host: o.host ?? (o.adminToken ? "0.0.0.0" : "127.0.0.1"),
    workers: o.worker,
    disagg: o.disagg,
    prefillWorkers: o.prefillWorker,
    decodeWorkers: o.decodeWorker,
    disaggMinPrefillTokens: o.disaggMinPrefillTokens,
    bootstrapPort: o.bootstrapPort,
    engines: o.engines,
    policy: o.policy,
    blockSize: o.blockSize,
    overlapWeight: o.overlapWeight,
    temperature: o.temperature,
    sessionTtl: o.sessionTtl,
    sessionReaperInterval: o.sessionReaperInterval,
    adminToken: o.adminToken,
    healthInterval: o.healthInterval,
    healthTimeout: o.healthTimeout,
    maxBodyBytes: o.maxBodyBytes,
    redis: o.redis,
    maxRetries: o.maxRetries,
    connectTimeout: o.connectTimeout,
    firstByteTimeout: o.firstByteTimeout,
    responseTimeout: o.responseTimeout,
    streamIdleTimeout: o.streamIdleTimeout,
    idleTimeout: o.idleTimeout,
    drainTimeout: o.drainTimeout,
    outlier: {
      consecutiveFailures: o.outlierConsecutiveFailures,
      failurePercent: o.outlierFailurePercent,
      baseEjectionTime: o.outlierBaseEjectionTime,
      maxEjectionTime: Math.max(o.outlierMaxEjectionTime, o.outlierBaseEjectionTime),
      maxEjectionPercent: o.outlierMaxEjectionPercent,
    },
    approxTtl: o.approxTtl,
    logLevel: o.logLevel,
    engineSpeedup: o.engineSpeedup,
    loadGuard: o.loadGuard === 0 ? null : o.loadGuard,
    loadGuardMetric: o.loadGuardMetric,
    activeRequestWeight: o.activeRequestWeight,
    busyThreshold: o.busyThreshold ?? null,
    inflightOverlap: o.inflightOverlap,
    overlapCredit: o.overlapCredit,
    prefillWaitFactor: o.prefillWaitFactor === 0 ? null : o.prefillWaitFactor,
    prefillWaitSlack: o.prefillWaitSlack,
    redisToken: o.redisToken,
    redisTimeout: o.redisTimeout,
    loraLoadOnDemand: o.loraLoadOnDemand,
    loraPath: o.loraPath,
    loraEvict: o.loraEvict,
    tokenizers: o.tokenizer,
    tokenizerWorkers: o.tokenizerWorkers ?? null,
    tokenizerLibrary: o.tokenizerLibrary,
    zmqEndpoints: o.zmqEndpoint.map((p) => ({
      ...p,
      replayEndpoint: o.zmqReplayEndpoint.find((r) => sameWorkerUrl(r.workerUrl, p.workerUrl))?.endpoint,
      dpRanks: o.zmqDpRanks.find((r) => sameWorkerUrl(r.workerUrl, p.workerUrl))?.dpRanks ?? 1,
    })),
    maxSessions: o.maxSessions,
    maxSessionIdLength: o.maxSessionIdLength,
    loraAllow: o.loraAllow,
    engineToken: o.engineToken,
    workerAllow: o.workerAllow,
    workersFile: o.workersFile,
    engineMetricsInterval: o.engineMetricsInterval,
    busyWaiting: o.busyWaiting ?? null,
    workerCapacity: o.workerCapacity ?? null,
    maxQueue: o.maxQueue,
    queueTimeout: o.queueTimeout,
    engineLoadWeight: o.engineLoadWeight,
    logFormat: o.logFormat,
    otlpEndpoint: o.otlpEndpoint,
    otlpSampleRatio: o.otlpSampleRatio,
  };
}

function sameWorkerUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, "").toLowerCase() === b.replace(/\/+$/, "").toLowerCase();
}

/** Problems between fields that the per-field schema cannot see. */
export function crossFieldProblems(c: Config, replays: readonly ZmqEndpointPair[], dpRanks: readonly DpRanksPair[] = []): string[] {
  const out: string[] = [];
  if (c.redis !== undefined && /^https?:/i.test(c.redis) && c.redisToken === undefined) {
    out.push("--redis-token (SWITCHYARD_REDIS_TOKEN / UPSTASH_REDIS_REST_TOKEN): needed for an https:// (Upstash REST) --redis URL");
  }
  for (const d of dpRanks) {
    if (!c.zmqEndpoints.some((z) => sameWorkerUrl(z.workerUrl, d.workerUrl))) out.push(`--zmq-dp-ranks: ${d.workerUrl} has no --zmq-endpoint`);
  }
  for (const r of replays) {
    if (!c.zmqEndpoints.some((z) => sameWorkerUrl(z.workerUrl, r.workerUrl))) {
      out.push(`--zmq-replay-endpoint: ${r.workerUrl} has no --zmq-endpoint`);
    }
  }
  const seen = new Set<string>();
  for (const z of c.zmqEndpoints) {
    const k = z.workerUrl.replace(/\/+$/, "").toLowerCase();
    if (seen.has(k)) out.push(`--zmq-endpoint: ${z.workerUrl} is given twice`);
    seen.add(k);
  }
  return out;
}
