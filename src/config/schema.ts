/**
 * THE options table of `switchyard serve`: every option once — its key, its value schema
 * with its default, its help line, its flag and environment variables (derived from the key
 * unless history named them otherwise), and the runtimes that take it. From this table come
 * the flags, the `SWITCHYARD_*` environment, the `--config` file's fields, `--help`, the
 * validation, the refusals on Deno and workerd, and the `Config` type itself (load.ts reads
 * the sources; nothing here touches the process). A new option is one new row.
 *
 * Groups: `scheduler` holds the routing knobs under the names of the router's
 * SchedulerConfig, so the composition hands them over as one object; `outlier` holds
 * outlier ejection's settings (flags `--outlier-*`).
 */
import * as v from "valibot";
import { LOG_FORMATS, LOG_LEVELS } from "../core/logger.ts";
import { LOAD_METRICS, POLICY_NAMES, type PolicyName } from "../router/index.ts";
import { LIMITS_FALLBACKS } from "../protect/limits/limiter.ts";
import { DEFAULT_MAX_PROMPT_CHARS, DEFAULT_RETRY_STATUSES } from "./defaults.ts";
import {
  listOptions,
  type OptionGroup,
  type TableOption,
  type TableValues,
} from "./option-table.ts";
import {
  bunOnly,
  EVERYWHERE,
  notOnWorkerd,
  valueCheck,
  type RuntimeOptionDef,
} from "./runtimes.ts";
import { TokenizerSpecsSchema } from "./tokenizers.ts";
import {
  bool,
  factorOrOff,
  httpStatuses,
  httpUrl,
  int,
  nonNegative,
  oneOf,
  patternList,
  positive,
  redisUrl,
  text,
  urlList,
} from "./values.ts";
import { dpRankPairs, sameWorkerUrl, zmqPairs, zmqWorkers, type ZmqWorker } from "./zmq-pairs.ts";

export type { ZmqEndpointPair, ZmqWorker, DpRanksPair } from "./zmq-pairs.ts";
export { parseZmqPair } from "./zmq-pairs.ts";

/** The scheduler's own lists, so a new policy or load metric needs no second edit here. */
export const POLICIES = POLICY_NAMES;
export type { PolicyName };

/**
 * The tokenizer encoders (src/tokens/README.md): by default ("auto") our byte-level BPE, 3-6x
 * the pure library's speed on a first-sight prompt (bench/tokens), wherever it encodes a
 * differential corpus exactly as the library does at load, else the library; the others force one.
 */
export const TOKENIZER_LIBRARIES = ["auto", "hf", "native", "bpe"] as const;
export type TokenizerLibraryName = (typeof TOKENIZER_LIBRARIES)[number];

/** A row of serve's table: the machinery's option plus its runtimes and environment. */
export interface ServeOptionDef extends RuntimeOptionDef {
  /** Environment variables, first found wins; default: SWITCHYARD_ + the flag in upper snake case. */
  readonly env?: readonly string[];
}

type Row = ServeOptionDef;
const row = <const D extends Row>(d: D): D => d;
const group = <const G extends Readonly<Record<string, Row>>>(
  members: G,
  flagPrefix?: string,
): OptionGroup<G> =>
  flagPrefix === undefined ? { group: members } : { group: members, flagPrefix };

const DISAGG_WHY = "disaggregated prefill/decode is wired by the Bun entry only";
const ZMQ_WHY = "ZMQ event streams use libzmq over bun:ffi (send events over HTTP instead)";
const ENGINES_WHY = "embedded simulated engines run on Bun's server";
const METRICS_WHY = "engine metrics scraping is wired by the Bun entry only";
const DRAIN_WHY = "workerd stops its isolates itself; requests in flight are not drained";
const OTLP_WHY =
  "the OpenTelemetry exporter is wired by the Bun entry only; the trace context is still passed to the engines";
const TLS_WHY =
  "the TLS listener (and its reload on change) is Bun's; terminate TLS in front of Deno and workerd";
const DISCOVERY_WHY =
  "Kubernetes discovery is wired by the Bun entry only; list the engines with --worker";

export const SERVE_OPTIONS = {
  port: row({
    schema: v.optional(int(0, 65535), 8080),
    env: ["SWITCHYARD_PORT", "PORT"],
    meta: "N",
    help: "listen port; 0 = any free port",
    runtimes: EVERYWHERE,
  }),
  host: row({
    schema: v.optional(text()),
    meta: "ADDR",
    help: "listen address",
    // Without a token the admin endpoints answer loopback peers only, so listening on
    // every interface is the safe default only once a token protects them.
    fill: (c: { readonly adminToken: string | undefined }): string =>
      c.adminToken ? "0.0.0.0" : "127.0.0.1",
    defaultText: "0.0.0.0 with --admin-token, else 127.0.0.1",
    runtimes: EVERYWHERE,
  }),
  tokenizers: row({
    flag: "--tokenizer",
    schema: v.optional(TokenizerSpecsSchema, []),
    list: true,
    meta: "[MODEL=]PATH",
    help: "Hugging Face model directory (tokenizer.json + chat template) the engines tokenize with: text is routed on the exact tokens; MODEL=PATH for one model of a mixed fleet; repeatable. Without one: token-id prompts exact, text approximate",
    runtimes: notOnWorkerd(
      "workerd has no file system to read tokenizer directories from (text is routed on the router's own decisions)",
    ),
  }),
  tokenizerLibrary: row({
    schema: v.optional(oneOf(TOKENIZER_LIBRARIES), "auto"),
    meta: "L",
    help: `the encoder behind --tokenizer: ${TOKENIZER_LIBRARIES.join("|")} (auto = our byte-level BPE where the tokenizer qualifies and encodes a built-in differential corpus exactly as the library does, else the library; hf = @huggingface/tokenizers, pure JS; native = HF's Rust tokenizers addon; bpe = the byte-level BPE unchecked, where it qualifies: src/tokens/README.md)`,
    runtimes: valueCheck((lib, runtime) =>
      lib === "native"
        ? `native is not available on ${runtime} (HF's Rust addon loads on Bun/Node only; use hf or bpe)`
        : undefined,
    ),
  }),
  tokenizerWorkers: row({
    schema: v.optional(v.nullable(int(0, 64)), null),
    meta: "N",
    help: "Workers that encode prompts of 32k+ characters off the event loop, so a first-sight 128k-token prompt does not stall other requests; 0 = encode in the event loop",
    defaultText: "cores - 1, 1 to 4",
    runtimes: bunOnly("the encode pool uses Bun Workers"),
  }),
  workers: row({
    flag: "--worker",
    schema: v.optional(urlList, []),
    list: true,
    env: ["SWITCHYARD_WORKERS"],
    help: "engine base URL; repeatable (env: comma list)",
    runtimes: EVERYWHERE,
  }),
  // Every registration source (flags, API, workers file, ZMQ, Kubernetes discovery) counts
  // against one cap, so the index and load books stay bounded whoever registers.
  maxWorkers: row({
    schema: v.optional(int(1, 65_536), 1024),
    meta: "N",
    help: "workers registered at once (any source: flags, API, workers file, ZMQ, discovery); past it a registration gets 503 naming this flag",
    runtimes: EVERYWHERE,
  }),
  prefillWorkers: row({
    flag: "--prefill-worker",
    schema: v.optional(urlList, []),
    list: true,
    env: ["SWITCHYARD_PREFILL_WORKERS"],
    help: "a prefill engine of a disaggregated deployment (--disagg); repeatable",
    runtimes: bunOnly(DISAGG_WHY),
  }),
  decodeWorkers: row({
    flag: "--decode-worker",
    schema: v.optional(urlList, []),
    list: true,
    env: ["SWITCHYARD_DECODE_WORKERS"],
    help: "a decode engine of a disaggregated deployment (--disagg); repeatable",
    runtimes: bunOnly(DISAGG_WHY),
  }),
  disagg: row({
    schema: v.optional(v.picklist(["off", "vllm", "sglang"], "must be off, vllm or sglang"), "off"),
    meta: "P",
    help: "disaggregated prefill/decode protocol: off | vllm (kv_transfer_params) | sglang (bootstrap rooms)",
    runtimes: bunOnly(DISAGG_WHY),
  }),
  // Measured on the Mooncake conversation trace (bench/replay/disagg.md):
  // 2048 halves TTFT against always splitting and keeps decode ITL p99 under 20 ms.
  disaggMinPrefillTokens: row({
    schema: v.optional(int(0, 2 ** 31), 2048),
    meta: "N",
    help: "prompts with fewer uncached tokens on the chosen decode engine are prefilled there, not on a prefill engine (measured in bench/README.md)",
    runtimes: bunOnly(DISAGG_WHY),
  }),
  bootstrapPort: row({
    schema: v.optional(int(1, 65535), 8998),
    meta: "PORT",
    help: "--disagg sglang: the prefill engines' bootstrap port when their /v1/engine/info does not say (SGLang's)",
    runtimes: bunOnly(DISAGG_WHY),
  }),
  engines: row({
    schema: v.optional(int(0, 64), 0),
    meta: "N",
    help: "start N embedded simulated engines in-process",
    runtimes: bunOnly(ENGINES_WHY),
  }),
  engineSpeedup: row({
    schema: v.optional(positive("a number > 0"), 1),
    help: "time speed-up of embedded engines",
    runtimes: bunOnly(ENGINES_WHY),
  }),
  policy: row({
    schema: v.optional(oneOf(POLICIES), "kv"),
    meta: "NAME",
    help: `routing policy: ${POLICIES.join("|")}`,
    runtimes: EVERYWHERE,
  }),
  blockSize: row({
    schema: v.optional(int(1, 1 << 20), 16),
    meta: "N",
    help: "KV block size in tokens; must match the engines",
    runtimes: EVERYWHERE,
  }),
  scheduler: group({
    overlapScoreWeight: row({
      flag: "--overlap-weight",
      schema: v.optional(nonNegative("a number >= 0"), 1),
      help: "weight of uncached prefill blocks in the cost",
      runtimes: EVERYWHERE,
    }),
    temperature: row({
      schema: v.optional(nonNegative("a number >= 0"), 0),
      help: "softmax temperature; 0 = always the cheapest",
      runtimes: EVERYWHERE,
    }),
    loadGuardFactor: row({
      flag: "--load-guard",
      schema: v.optional(factorOrOff, 0),
      meta: "FACTOR",
      help: "kv-blocks/approx: skip workers whose load exceeds FACTOR x the mean (e.g. 1.25); 0 = off",
      runtimes: EVERYWHERE,
    }),
    loadGuardMetric: row({
      schema: v.optional(oneOf(LOAD_METRICS), "requests"),
      help: `what the load guard measures: ${LOAD_METRICS.join("|")}`,
      runtimes: EVERYWHERE,
    }),
    activeRequestWeight: row({
      schema: v.optional(nonNegative("a number >= 0"), 0),
      help: "kv-blocks/approx: extra cost per active request on a worker",
      runtimes: EVERYWHERE,
    }),
    busyThreshold: row({
      schema: v.optional(v.nullable(positive("a number > 0")), null),
      help: "a rank is busy when its engine's KV usage (engine metrics) or its booked prefill tokens / --worker-capacity exceed this fraction; busy ranks are skipped, and when all are, requests queue",
      defaultText: "off",
      runtimes: EVERYWHERE,
    }),
    // On by default: the index learns blocks only after the engine's prefill and event, so
    // without this a burst sharing a new prefix scatters (bench/README.md: +9% hit rate at a
    // quarter capacity on the synthetic trace, on par with approx's in-flight knowledge).
    inflightOverlap: row({
      schema: v.optional(bool, true),
      meta: "true|false",
      help: "kv-blocks/approx: count a prefix that in-flight requests on a worker hold as cached there; false = Dynamo's formula",
      runtimes: EVERYWHERE,
    }),
    // Not Dynamo's 0: on the Mooncake replays the greedy cost scatters conversations over cold
    // workers (0.59-0.68 x ideal hit rate); 32 reached the offline oracle (0.91 x). With the
    // prefill-wait bound below, 16 does as well on every workload (bench/README.md).
    overlapCredit: row({
      schema: v.optional(nonNegative("a number >= 0"), 16),
      help: "kv-blocks/approx: credit per cached prompt block beyond the prefill it saves, so requests follow the cache; 0 = Dynamo's reference formula, see bench/README.md",
      runtimes: EVERYWHERE,
    }),
    // On traffic nobody tuned for (generated chat / agentic shapes) the credit alone piles
    // work on a few engines (work max/mean 1.5-2.4, engines idle); a bound on the prefill
    // wait relative to the best worker, loosened by a share of the mean queue as the cluster
    // saturates, keeps the hits and cuts TTFT p90. 1.05 / 0.75 (with credit 16) is the setting
    // whose worst TTFT p90 over 7 workloads x 3 loads is closest to each one's best (1.15x;
    // bench/replay/sim-grid.ts, bench/README.md). 0 = off (Dynamo).
    prefillWaitFactor: row({
      schema: v.optional(factorOrOff, 1.05),
      meta: "FACTOR",
      help: "kv-blocks/approx: skip workers where the request's prefill would be done later than FACTOR x the best worker's (+ --prefill-wait-slack x the mean queued prefill); 0 = off, Dynamo's formula",
      runtimes: EVERYWHERE,
    }),
    prefillWaitQueueShare: row({
      flag: "--prefill-wait-slack",
      schema: v.optional(nonNegative("a number >= 0"), 0.75),
      help: "share of the workers' mean queued prefill added to the prefill-wait bound, so it loosens as the cluster gets busy",
      runtimes: EVERYWHERE,
    }),
    engineWaitingWeight: row({
      flag: "--engine-load-weight",
      schema: v.optional(nonNegative("a number >= 0"), 0),
      help: "kv-blocks/approx: cost in blocks per request the rank's engine reports waiting (engine metrics); 0 = off",
      runtimes: EVERYWHERE,
    }),
  }),
  sessionTtl: row({
    schema: v.optional(positive("a number of seconds > 0"), 300),
    meta: "S",
    help: "sticky session sliding TTL, seconds",
    runtimes: EVERYWHERE,
  }),
  sessionReaperInterval: row({
    schema: v.optional(positive("a number of seconds > 0"), 30),
    meta: "S",
    help: "seconds between sweeps for expired sessions; an expired engine-backed session is closed on its engine",
    runtimes: EVERYWHERE,
  }),
  adminToken: row({
    schema: v.optional(v.pipe(v.string(), v.minLength(8, "must be at least 8 characters"))),
    meta: "TOKEN",
    help: "bearer token for admin endpoints; without it they answer loopback clients only at the zero-config local start (loopback --host, no --api-keys), and are closed (403) otherwise",
    runtimes: EVERYWHERE,
  }),
  eventsToken: row({
    schema: v.optional(v.pipe(v.string(), v.minLength(16, "must be at least 16 characters"))),
    env: ["SWITCHYARD_EVENTS_TOKEN"],
    meta: "TOKEN",
    help: "bearer token engines send with their KV event pushes (POST /v1/kv/events); it opens that route only, never the admin API. Give engines the same value (mocker: --events-token / SWITCHYARD_EVENTS_TOKEN)",
    runtimes: EVERYWHERE,
  }),
  eventsTokenFile: row({
    schema: v.optional(text("a file path")),
    env: ["SWITCHYARD_EVENTS_TOKEN_FILE"],
    meta: "FILE",
    help: "read --events-token from this file (a mounted Secret; surrounding whitespace trimmed)",
    runtimes: bunOnly(
      "the token file is read by the Bun entry; give --events-token or SWITCHYARD_EVENTS_TOKEN",
    ),
  }),
  healthInterval: row({
    schema: v.optional(positive("a number of seconds > 0"), 2),
    meta: "S",
    help: "seconds between worker health checks",
    runtimes: EVERYWHERE,
  }),
  healthTimeout: row({
    schema: v.optional(positive("a number of seconds > 0"), 1),
    meta: "S",
    help: "seconds before a health check counts as failed",
    runtimes: EVERYWHERE,
  }),
  maxBodyBytes: row({
    schema: v.optional(int(1, 2 ** 31), 16 * 1024 * 1024),
    meta: "N",
    help: "largest accepted request body",
    runtimes: EVERYWHERE,
  }),
  // Routing costs the event loop time in proportion to the prompt, so a prompt has a limit of
  // its own far below the body's (docs/chaos.md, "Found by probing": five 15 MB prompts held /livez 4 s).
  maxPromptChars: row({
    schema: v.optional(int(1, 2 ** 31), DEFAULT_MAX_PROMPT_CHARS),
    meta: "N",
    help: "characters a request's prompt may hold (prompt, messages, input, text; a token id counts one), checked before any work on it; longer: 413 naming the field",
    defaultText: "1048576, ~256k tokens",
    runtimes: EVERYWHERE,
  }),
  redis: row({
    schema: v.optional(redisUrl),
    env: ["SWITCHYARD_REDIS_URL", "SWITCHYARD_REDIS"],
    meta: "URL",
    help: "shared Redis (sessions, active load, tenant limits): redis://, rediss:// or https:// (Upstash REST); default: in-memory, this router only",
    runtimes: valueCheck((url, runtime) => {
      const s = typeof url === "string" ? url.slice(0, url.indexOf(":") + 1).toLowerCase() : "";
      return s === "redis:" || s === "rediss:"
        ? `${s}// is not available on ${runtime} (RESP needs Bun's RedisClient over TCP; use Upstash REST: --redis https://… --redis-token …)`
        : undefined;
    }),
  }),
  redisToken: row({
    schema: v.optional(text()),
    env: ["SWITCHYARD_REDIS_TOKEN", "UPSTASH_REDIS_REST_TOKEN"],
    meta: "TOKEN",
    help: "Upstash REST token (needed when --redis is https://)",
    runtimes: EVERYWHERE,
  }),
  redisTimeout: row({
    schema: v.optional(
      v.pipe(positive("a number of seconds > 0"), v.maxValue(10, "must be at most 10 seconds")),
      0.05,
    ),
    meta: "S",
    help: "seconds a request may wait for Redis; a command slower than this marks Redis down (no waits) until it answers a probe",
    runtimes: EVERYWHERE,
  }),
  // Off by default: on this machine's replays it helps the trace that arrives in bursts and costs
  // the Poisson-like ones cache hits and predictor error (bench/replay/findings.md, "Burst claims").
  burstClaims: row({
    schema: v.optional(bool, false),
    switch: true,
    help: "with --redis and the kv policy: each decision is claimed in one list the routers share, and made again counting the prompts other routers claimed that the load sync has not brought yet (requests that reach several routers in one instant are not all sent to the same engine); one Redis round trip per request",
    runtimes: EVERYWHERE,
  }),
  burstClaimWindow: row({
    schema: v.optional(
      v.pipe(positive("a number of seconds > 0"), v.maxValue(10, "must be at most 10 seconds")),
      0.1,
    ),
    meta: "S",
    help: "seconds a burst claim stays in the shared list (longer than the load sync takes to bring a booking to the other routers)",
    runtimes: EVERYWHERE,
  }),
  cacheCheck: row({
    schema: v.optional(bool, true),
    switch: true,
    help: "check every answer's cached tokens against what the index predicted (stream_options.include_usage added for the engine and its chunk kept from the client); an engine whose view is degraded or blind is routed from the router's own decisions until its answers agree again (docs/observing.md); --cache-check=false: none of it",
    runtimes: EVERYWHERE,
  }),
  canary: row({
    schema: v.optional(bool, true),
    switch: true,
    help: "with --cache-check: a known prompt (256 tokens, or 2 blocks + 1 token at blocks over 127) sent twice straight to each engine at registration and after a restart seen in its events (never billed to a tenant); --canary=false: only on demand (POST /v1/workers/:id/canary)",
    runtimes: EVERYWHERE,
  }),
  maxRetries: row({
    schema: v.optional(int(0, 16), 2),
    meta: "N",
    help: "other workers tried when one fails before its first byte",
    runtimes: EVERYWHERE,
  }),
  // A stream that fails after its first byte goes on on another worker (edge/proxy/migration).
  maxMigrations: row({
    schema: v.optional(int(0, 16), 2),
    meta: "N",
    help: "times one streamed answer may move to another worker when its engine fails after the first byte (continued from the text sent so far); 0 = never; a request turns it off with x-switchyard-migrate: off",
    runtimes: EVERYWHERE,
  }),
  migrateAfter: row({
    schema: v.optional(nonNegative("a number of seconds >= 0"), 30),
    meta: "S",
    help: "seconds a stream may go on on a worker taken out of rotation to drain (a pod not ready or terminating, or POST /v1/workers/:id/drain) before it moves to another worker (--max-migrations); 0 = at once",
    runtimes: EVERYWHERE,
  }),
  migrationKeepBytes: row({
    schema: v.optional(int(0, 2 ** 31), 4 * 1024 * 1024),
    meta: "N",
    help: "bytes one stream may keep of what it sent (its text, 2 bytes a character, and up to 64 KiB of raw events) so it can be moved; past it the stream is not moved",
    runtimes: EVERYWHERE,
  }),
  migrationMemoryBytes: row({
    schema: v.optional(int(0, 2 ** 40), 256 * 1024 * 1024),
    meta: "N",
    help: "bytes all streams together may keep so they can be moved (--migration-keep-bytes each); a stream that finds it full is not moved",
    runtimes: EVERYWHERE,
  }),
  trustForwarded: row({
    schema: v.optional(bool, false),
    switch: true,
    help: "a trusted proxy in front sets X-Forwarded-For and Forwarded: append the peer to them (default: replace the client's with the peer)",
    runtimes: EVERYWHERE,
  }),
  trustKvTransferParams: row({
    schema: v.optional(bool, false),
    switch: true,
    help: "pass a client's kv_transfer_params (and SGLang's bootstrap_*, kv_router_hint) on to engines, for a trusted P/D proxy in front (default: 400 naming the field; only the router sets them)",
    runtimes: EVERYWHERE,
  }),
  forwardCookies: row({
    schema: v.optional(bool, false),
    switch: true,
    help: "pass the client's Cookie header on to engines (default: dropped)",
    runtimes: EVERYWHERE,
  }),
  // Bounds found by probing the router (docs/chaos.md, "Found by probing"): an engine answering 500 failed
  // 3-5 of 60 requests until such answers were tried elsewhere; the budget keeps a request
  // that fails everywhere from being multiplied by the fleet's size.
  retryOn: row({
    schema: v.optional(httpStatuses, [...DEFAULT_RETRY_STATUSES]),
    list: true,
    meta: "STATUS",
    help: "engine answer statuses tried again on another worker before anything reached the client; repeatable or a comma list; none = only connection failures and missed deadlines (502/503/504 also fence the worker)",
    runtimes: EVERYWHERE,
  }),
  retryBudget: row({
    schema: v.optional(
      v.pipe(nonNegative("a percentage"), v.maxValue(1000, "must be <= 1000")),
      20,
    ),
    meta: "P",
    help: "re-sends to another worker (engine answers in --retry-on, connection failures, missed deadlines, fail-over off an ejected or removed worker), beyond 10 per second, as a percentage of the requests of the last 10 s; past it the engine's answer (or a 502) goes to the client",
    runtimes: EVERYWHERE,
  }),
  // Deadlines (seconds; 0 = none). First byte: a 128k-token prompt can take tens of seconds
  // of prefill, longer behind a queue on the engine, so the default is generous; it stays
  // under common client timeouts (100-120 s), so the router fails over before they give up.
  connectTimeout: row({
    schema: v.optional(nonNegative("a number of seconds >= 0"), 5),
    meta: "S",
    help: "seconds to open a connection to an engine before trying another worker; 0 = none",
    runtimes: EVERYWHERE,
  }),
  firstByteTimeout: row({
    schema: v.optional(nonNegative("a number of seconds >= 0"), 120),
    meta: "S",
    help: "seconds from sending a request to the engine's first answer byte (covers prefill of long prompts) before trying another worker; 0 = none",
    runtimes: EVERYWHERE,
  }),
  // Not streamed: the first byte is the whole answer (thousands of output tokens at tens of
  // ms each can take minutes), so a much longer wait before it counts as a hang.
  responseTimeout: row({
    schema: v.optional(nonNegative("a number of seconds >= 0"), 600),
    meta: "S",
    help: "seconds a request that is not streamed may wait for its answer (it comes whole: prefill and every output token) before trying another worker; 0 = none",
    runtimes: EVERYWHERE,
  }),
  streamIdleTimeout: row({
    schema: v.optional(nonNegative("a number of seconds >= 0"), 60),
    meta: "S",
    help: "seconds an answer may stall between two chunks before it ends with an error event; 0 = none",
    runtimes: EVERYWHERE,
  }),
  // Bun.serve's idleTimeout: whole seconds, 1..255 (0 would hold slow clients forever).
  idleTimeout: row({
    schema: v.optional(int(1, 255), 10),
    meta: "S",
    help: "seconds a client connection may take to send its request (slow bodies are cut after 1-2x this) or sit idle; proxied streams are exempt; 1-255",
    runtimes: bunOnly("a client idle timeout is a Bun server option"),
  }),
  drainTimeout: row({
    schema: v.optional(nonNegative("a number of seconds >= 0"), 30),
    meta: "S",
    help: "on SIGTERM/SIGINT: seconds in-flight requests get to finish before exit",
    runtimes: notOnWorkerd(DRAIN_WHY),
  }),
  // A load balancer needs a few probe periods to see a 503 and take the router out; until
  // then it keeps sending, so the listener must keep serving or those requests are refused.
  drainDelay: row({
    schema: v.optional(nonNegative("a number of seconds >= 0"), 0),
    meta: "S",
    help: "on SIGTERM/SIGINT: seconds /health answers 503 while requests are still served, so load balancers stop sending here before the drain (--drain-timeout) begins",
    runtimes: notOnWorkerd(DRAIN_WHY),
  }),
  // A fence is one request's word about an engine; capped like ejections so a starved router
  // or a shared network fault cannot fence the whole fleet (src/fleet/health.ts).
  maxFencedPercent: row({
    schema: v.optional(v.pipe(nonNegative("a percentage"), v.maxValue(100, "must be <= 100")), 50),
    meta: "P",
    help: "most workers out of rotation at once that a fence (a failure before the first byte) may bring about, percent (one always may be fenced, the only worker never; health checks still take out any that are down); 100 = no cap",
    runtimes: EVERYWHERE,
  }),
  outlier: group(
    {
      consecutiveFailures: row({
        schema: v.optional(int(0, 1_000_000), 5),
        meta: "N",
        help: "failed answers in a row (5xx, cut stream, missed deadline) that eject a worker; 0 = off",
        runtimes: EVERYWHERE,
      }),
      failurePercent: row({
        schema: v.optional(
          v.pipe(nonNegative("a percentage"), v.maxValue(100, "must be <= 100")),
          50,
        ),
        meta: "P",
        help: "share of failed answers (of at least 20 in 10 s) that ejects a worker; 0 = off",
        runtimes: EVERYWHERE,
      }),
      baseEjectionTime: row({
        schema: v.optional(positive("a number of seconds > 0"), 30),
        meta: "S",
        help: "seconds of a first ejection; the k-th in a row lasts k times as long",
        runtimes: EVERYWHERE,
      }),
      maxEjectionTime: row({
        schema: v.optional(positive("a number of seconds > 0"), 300),
        meta: "S",
        help: "longest ejection, seconds (at least the base time)",
        runtimes: EVERYWHERE,
      }),
      maxEjectionPercent: row({
        schema: v.optional(
          v.pipe(nonNegative("a percentage"), v.maxValue(100, "must be <= 100")),
          50,
        ),
        meta: "P",
        help: "most workers ejected at once, percent (one always may be)",
        runtimes: EVERYWHERE,
      }),
    },
    "outlier",
  ),
  approxTtl: row({
    schema: v.optional(positive("a number of seconds > 0"), 120),
    meta: "S",
    help: "approx policy: seconds a routing decision stays in the index",
    runtimes: EVERYWHERE,
  }),
  logLevel: row({
    schema: v.optional(oneOf(LOG_LEVELS), "info"),
    meta: "LEVEL",
    help: LOG_LEVELS.join("|"),
    runtimes: EVERYWHERE,
  }),
  // Observability (src/observe): the access log's format and where spans go.
  logFormat: row({
    schema: v.optional(oneOf(LOG_FORMATS), "text"),
    meta: "F",
    help: `${LOG_FORMATS.join("|")}: every log line, the per-request access line included (json = one JSON object per line, for log shippers)`,
    runtimes: EVERYWHERE,
  }),
  // Refused elsewhere on its value, so OTEL_EXPORTER_OTLP_ENDPOINT in the environment is
  // refused too rather than silently ignored.
  alertmanagerUrl: row({
    schema: v.optional(httpUrl),
    meta: "URL",
    help: "Alertmanager whose firing alerts the status page (GET /ui) shows, e.g. http://alertmanager:9093 (its API v2, read at most every 5 s)",
    defaultText: "no alerts on the page",
    runtimes: EVERYWHERE,
  }),
  otlpEndpoint: row({
    schema: v.optional(httpUrl),
    env: ["SWITCHYARD_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"],
    meta: "URL",
    help: "export OpenTelemetry spans over OTLP/HTTP (protobuf) to this collector, e.g. http://collector:4318 (/v1/traces is appended unless the path names it)",
    defaultText: "no spans",
    runtimes: bunOnly(OTLP_WHY),
  }),
  otlpSampleRatio: row({
    schema: v.optional(v.pipe(nonNegative("a number in [0, 1]"), v.maxValue(1, "must be <= 1")), 1),
    env: ["SWITCHYARD_OTLP_SAMPLE_RATIO", "OTEL_TRACES_SAMPLER_ARG"],
    meta: "R",
    help: "share of new traces recorded, 0 to 1 (1: every request); a client's traceparent decides for its own trace. Recording costs router CPU per request (src/observe/README.md)",
    runtimes: EVERYWHERE,
  }),
  loraLoadOnDemand: row({
    schema: v.optional(bool, false),
    switch: true,
    help: "treat a `model` no worker serves (not a base model) as a LoRA adapter and load it from --lora-path",
    runtimes: EVERYWHERE,
  }),
  loraPath: row({
    schema: v.optional(
      v.pipe(v.string("must be a string"), v.includes("{name}", "must contain {name}")),
      "{name}",
    ),
    meta: "TEMPLATE",
    help: "lora_path sent to the engine when the router loads an adapter; {name} = the adapter",
    runtimes: EVERYWHERE,
  }),
  loraEvict: row({
    schema: v.optional(bool, false),
    switch: true,
    help: "no free LoRA slot anywhere: unload the least recently used adapter instead of answering 503",
    runtimes: EVERYWHERE,
  }),
  loraAllow: row({
    schema: v.optional(patternList("name patterns"), []),
    list: true,
    meta: "PATTERN",
    help: "adapter names the router may load or evict (* = any run of characters); repeatable; default: any valid name",
    runtimes: EVERYWHERE,
  }),
  zmqEndpoints: row({
    flag: "--zmq-endpoint",
    schema: v.optional(zmqWorkers, []),
    list: true,
    env: ["SWITCHYARD_ZMQ_ENDPOINTS"],
    meta: "URL=tcp://H:P",
    help: "vLLM worker URL and its KV event PUB endpoint (rank 0); repeatable. Registers the worker, no /kv/query restore",
    runtimes: bunOnly(ZMQ_WHY),
  }),
  zmqReplayEndpoints: row({
    flag: "--zmq-replay-endpoint",
    schema: v.optional(zmqPairs, []),
    list: true,
    env: ["SWITCHYARD_ZMQ_REPLAY_ENDPOINTS"],
    meta: "URL=tcp://H:P",
    help: "that worker's KV event replay (ROUTER) endpoint; repeatable",
    runtimes: bunOnly(ZMQ_WHY),
  }),
  zmqDpRanks: row({
    schema: v.optional(dpRankPairs, []),
    list: true,
    meta: "URL=N",
    help: "that worker's data-parallel rank count: ranks 0..N-1 are subscribed (rank r on port + r) and routed to (default 1); repeatable",
    runtimes: bunOnly(ZMQ_WHY),
  }),
  maxSessions: row({
    schema: v.optional(int(1, 2 ** 31), 100_000),
    meta: "N",
    help: "sticky sessions held in memory; past it the least recently used is dropped",
    runtimes: EVERYWHERE,
  }),
  maxSessionIdLength: row({
    schema: v.optional(int(1, 65_536), 256),
    meta: "N",
    help: "longest session id accepted (X-Session-ID, session_control, /v1/route); longer: 400",
    runtimes: EVERYWHERE,
  }),
  engineToken: row({
    schema: v.optional(text()),
    meta: "TOKEN",
    help: "bearer token the router sends to engines on its own calls (/kv/query); the admin token is never sent",
    runtimes: EVERYWHERE,
  }),
  workerAllow: row({
    schema: v.optional(patternList("URL patterns"), []),
    list: true,
    meta: "PATTERN",
    help: "worker URLs POST /v1/workers may register (* = any run of characters, e.g. http://10.0.0.*:8000); repeatable; default: any",
    runtimes: EVERYWHERE,
  }),
  workersFile: row({
    schema: v.optional(text("a file path")),
    meta: "PATH",
    help: "JSON or YAML list of workers (POST /v1/workers entries, kv_events included), re-read when it changes; workers leave when their entry does",
    runtimes: bunOnly("the workers-file watch reads files with Bun"),
  }),
  tlsCert: row({
    schema: v.optional(text("a file path")),
    meta: "FILE",
    help: "serve HTTPS with this PEM certificate chain (leaf first, then intermediates); needs --tls-key. Both files are re-read when they change (a renewed certificate or a remounted Secret) and served to new connections without a restart; a pair that does not match keeps the previous one",
    runtimes: bunOnly(TLS_WHY),
  }),
  tlsKey: row({
    schema: v.optional(text("a file path")),
    meta: "FILE",
    help: "the PEM private key of --tls-cert",
    runtimes: bunOnly(TLS_WHY),
  }),
  engineMetricsInterval: row({
    schema: v.optional(nonNegative("a number of seconds >= 0"), 2),
    meta: "S",
    help: "seconds between scrapes of each engine's /metrics (vLLM/SGLang running, waiting, KV usage; vLLM's KV capacity and prefill speed); 0 = off",
    runtimes: bunOnly(METRICS_WHY),
  }),
  busyWaiting: row({
    schema: v.optional(v.nullable(nonNegative("a number of requests >= 0")), null),
    meta: "N",
    help: "a rank whose engine reports more than N waiting requests is busy (engine metrics)",
    defaultText: "off",
    runtimes: bunOnly(METRICS_WHY),
  }),
  workerCapacity: row({
    schema: v.optional(v.nullable(int(1, 2 ** 40)), null),
    meta: "TOKENS",
    help: "prefill tokens a rank may have booked (its max_num_batched_tokens): with --busy-threshold, a rank past threshold x this is busy",
    defaultText: "unbounded",
    runtimes: EVERYWHERE,
  }),
  maxQueue: row({
    schema: v.optional(int(0, 1_000_000), 1024),
    meta: "N",
    help: "requests that may wait when every worker is busy; more get 429; 0 = 429 at once",
    runtimes: EVERYWHERE,
  }),
  queueTimeout: row({
    schema: v.optional(positive("a number of seconds > 0"), 30),
    meta: "S",
    help: "seconds a request may wait for a worker that is not busy before a 429",
    runtimes: EVERYWHERE,
  }),
  // Engines found by the router itself (src/fleet/discovery): the pods a label selector matches.
  discover: row({
    schema: v.optional(v.picklist(["off", "kubernetes"], "must be off or kubernetes"), "off"),
    meta: "SOURCE",
    help: "find engines by themselves: off | kubernetes (list + watch the pods --discover-selector matches; per-pod switchyard.dev/* annotations)",
    runtimes: bunOnly(DISCOVERY_WHY),
  }),
  discoverNamespace: row({
    schema: v.optional(
      v.pipe(
        v.string("must be a string"),
        v.regex(
          /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
          "must be a namespace name (lower-case letters, digits, '-')",
        ),
      ),
    ),
    meta: "NS",
    help: "--discover kubernetes: the namespace watched",
    defaultText: "the router pod's own, else the kubeconfig context's, else default",
    runtimes: bunOnly(DISCOVERY_WHY),
  }),
  discoverSelector: row({
    schema: v.optional(
      v.pipe(v.string("must be a string"), v.trim(), v.nonEmpty("must not be empty")),
    ),
    meta: "LABELS",
    help: "--discover kubernetes: label selector of the engine pods, e.g. app=vllm (required with it)",
    runtimes: bunOnly(DISCOVERY_WHY),
  }),
  discoverPortName: row({
    schema: v.optional(
      v.pipe(
        v.string("must be a string"),
        v.regex(
          /^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$/,
          "must be a port name (at most 15 lower-case letters, digits, '-')",
        ),
      ),
      "http",
    ),
    meta: "NAME",
    help: "--discover kubernetes: the container port, by name, the engine serves HTTP on",
    runtimes: bunOnly(DISCOVERY_WHY),
  }),
  kubeconfig: row({
    schema: v.optional(v.pipe(v.string("must be a file path"), v.nonEmpty("must not be empty"))),
    meta: "PATH",
    help: "--discover kubernetes: kubeconfig file",
    defaultText: "the pod's service account in a cluster, else $KUBECONFIG, else ~/.kube/config",
    runtimes: bunOnly(DISCOVERY_WHY),
  }),
  // Protecting the fleet (src/protect): client keys, per-tenant limits, fair admission. Keys and
  // limits work on every runtime: the limits are local counters, or shared through Upstash
  // REST where RESP is not available.
  apiKeys: row({
    schema: v.optional(text("a file path")),
    meta: "FILE",
    help: "JSON or YAML file of client keys (SHA-256 hex), each naming a tenant, its limits, priority band, fair-admission weight and models; every OpenAI and engine-native route then needs Authorization: Bearer KEY (401 otherwise). Re-read on change; a bad file keeps the last good keys. YAML is read on Bun (workerd's launcher runs on Bun); Deno takes JSON only",
    // Deno has no YAML parser without a download; workerd gets the document from its
    // launcher, which runs on Bun and parses either.
    runtimes: {
      deno: (path, runtime) =>
        typeof path === "string" && /\.ya?ml$/i.test(path)
          ? `a YAML keys file is read on Bun only (its YAML parser); give the same document as JSON on ${runtime}`
          : undefined,
      workerd: true,
    },
  }),
  limitsFallback: row({
    schema: v.optional(oneOf(LIMITS_FALLBACKS), "local"),
    meta: "MODE",
    help: `with --redis, what tenant limits do while Redis does not answer: ${LIMITS_FALLBACKS.join("|")} (local: each router keeps limit / N; open: no limits; closed: 503)`,
    runtimes: EVERYWHERE,
  }),
  limitsRouters: row({
    schema: v.optional(int(1, 10_000)),
    meta: "N",
    help: "routers sharing the tenant limits, for the local fallback's share",
    defaultText: "the most heard through Redis in the last minute",
    runtimes: EVERYWHERE,
  }),
  fairAdmission: row({
    schema: v.optional(bool, true),
    switch: true,
    help: "with --api-keys: requests waiting for a busy fleet are served fairly between tenants within a priority band (virtual token counters, weights from the keys file); --fair-admission=false: arrival order",
    runtimes: EVERYWHERE,
  }),
} as const;

/** The validated configuration of `switchyard serve`: exactly the table's keys and value types. */
export interface Config extends TableValues<typeof SERVE_OPTIONS> {}

/** The table's options in order, groups flattened, each with its flag. */
export const SERVE_OPTION_LIST: readonly TableOption<ServeOptionDef>[] =
  listOptions<ServeOptionDef>(SERVE_OPTIONS);

/** The environment variable a flag gets unless its row names others: `--block-size` -> SWITCHYARD_BLOCK_SIZE. */
export function derivedEnvName(flag: string): string {
  return `SWITCHYARD_${flag.slice(2).toUpperCase().replace(/-/g, "_")}`;
}

/** An option's environment variables, in the order they are looked at. */
export function envNames(o: TableOption<ServeOptionDef>): readonly string[] {
  return o.def.env ?? [derivedEnvName(o.flag)];
}

/** Fields whose value follows from the others, once each is parsed; the types stay as the table says. */
export function finishConfig(c: Config): Config {
  const join = (z: ZmqWorker): ZmqWorker => ({
    ...z,
    replayEndpoint: c.zmqReplayEndpoints.find((r) => sameWorkerUrl(r.workerUrl, z.workerUrl))
      ?.endpoint,
    dpRanks: c.zmqDpRanks.find((r) => sameWorkerUrl(r.workerUrl, z.workerUrl))?.dpRanks ?? 1,
  });
  return {
    ...c,
    // A max below the base would make the first ejection longer than the longest.
    outlier: {
      ...c.outlier,
      maxEjectionTime: Math.max(c.outlier.maxEjectionTime, c.outlier.baseEjectionTime),
    },
    zmqEndpoints: c.zmqEndpoints.map(join),
  };
}

/** Problems between fields that the per-field schemas cannot see. */
export function crossFieldProblems(c: Config): string[] {
  const out: string[] = [];
  if (c.redis !== undefined && /^https?:/i.test(c.redis) && c.redisToken === undefined) {
    out.push(
      "--redis-token (SWITCHYARD_REDIS_TOKEN / UPSTASH_REDIS_REST_TOKEN): needed for an https:// (Upstash REST) --redis URL",
    );
  }
  for (const d of c.zmqDpRanks) {
    if (!c.zmqEndpoints.some((z) => sameWorkerUrl(z.workerUrl, d.workerUrl)))
      out.push(`--zmq-dp-ranks: ${d.workerUrl} has no --zmq-endpoint`);
  }
  for (const r of c.zmqReplayEndpoints) {
    if (!c.zmqEndpoints.some((z) => sameWorkerUrl(z.workerUrl, r.workerUrl)))
      out.push(`--zmq-replay-endpoint: ${r.workerUrl} has no --zmq-endpoint`);
  }
  if (c.discover === "kubernetes" && c.discoverSelector === undefined) {
    out.push(
      "--discover-selector (SWITCHYARD_DISCOVER_SELECTOR): needed with --discover kubernetes (the labels of the engine pods, e.g. app=vllm)",
    );
  }
  if (c.discover === "off") {
    const given = [
      ["--discover-namespace", c.discoverNamespace],
      ["--discover-selector", c.discoverSelector],
      ["--kubeconfig", c.kubeconfig],
    ] as const;
    for (const [flag, value] of given)
      if (value !== undefined) out.push(`${flag}: only used with --discover kubernetes`);
  }
  if ((c.tlsCert === undefined) !== (c.tlsKey === undefined)) {
    out.push(
      c.tlsCert === undefined
        ? "--tls-key: needs --tls-cert (the certificate it belongs to)"
        : "--tls-cert: needs --tls-key (its private key)",
    );
  }
  const seen = new Set<string>();
  for (const z of c.zmqEndpoints) {
    const k = z.workerUrl.replace(/\/+$/, "").toLowerCase();
    if (seen.has(k)) out.push(`--zmq-endpoint: ${z.workerUrl} is given twice`);
    seen.add(k);
  }
  return out;
}
