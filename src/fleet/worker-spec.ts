/**
 * What a worker registration says, as `POST /v1/workers` and `--workers-file` both accept
 * it: the engine's URL and optional facts (id, dp ranks, block size, LoRA, model), and
 * optionally where its KV events are published over ZMQ (`kv_events`, vLLM's
 * `--kv-events-config` endpoints; rank r publishes on port + r). Validation only: it
 * registers nothing (provisioner.ts does).
 */
import * as v from "valibot";
import { RouterError } from "../core/errors.ts";
import { describeIssues, U64Schema } from "../core/events.ts";
import { MAX_DP_RANKS, type RegisterInput } from "./membership.ts";

/**
 * Where one engine publishes its KV events (vLLM's ZmqEventPublisher: a PUB socket per dp rank,
 * rank r on port + r, and an optional ROUTER socket replaying recent batches).
 */
export interface KvEventsSpec {
  /** Rank 0's PUB endpoint; rank r's is endpointForDpRank(endpoint, r). */
  readonly endpoint: string;
  /** Rank 0's ROUTER replay endpoint, when the engine has one (gaps are then refilled). */
  readonly replayEndpoint?: string;
  /** Ranks subscribed: 0..dpRanks-1. */
  readonly dpRanks: number;
  /** The subscription prefix (vLLM's `topic`, default ""). */
  readonly topic: string;
}

/** A registration (membership's input, `restore` decided by the provisioner) plus its event stream. */
export interface WorkerSpec extends Omit<RegisterInput, "restore"> {
  readonly kvEvents?: KvEventsSpec;
  /** Disaggregated serving (--disagg): prefill, decode or both; the operator's word over engine info. */
  readonly role?: "prefill" | "decode" | "both";
}

/** vLLM's ZMQ endpoints: tcp://host:port, ipc://path or inproc://name. */
const ZMQ_SCHEMES = ["tcp://", "ipc://", "inproc://"];

const zmqEndpoint = v.pipe(
  v.string("must be a string"),
  v.check(
    (s) => ZMQ_SCHEMES.some((p) => s.startsWith(p) && s.length > p.length),
    "must be tcp://host:port, ipc://path or inproc://name",
  ),
  v.check(
    (s) => !s.startsWith("tcp://") || /:\d{1,5}$/.test(s),
    "a tcp:// endpoint needs a port (rank r publishes on port + r)",
  ),
);
const dpRanks = v.pipe(
  v.number("must be a number"),
  v.integer("must be an integer"),
  v.minValue(1, "must be >= 1"),
  v.maxValue(MAX_DP_RANKS, `must be <= ${MAX_DP_RANKS}`),
);

export const KvEventsSchema = v.strictObject(
  {
    endpoint: zmqEndpoint,
    replay_endpoint: v.optional(zmqEndpoint),
    dp_ranks: v.optional(dpRanks),
    topic: v.optional(v.string("must be a string"), ""),
  },
  "unknown field (accepted: endpoint, replay_endpoint, dp_ranks, topic)",
);

/** A workers-file entry: POST /v1/workers' fields except `tokenizer` (give --tokenizer instead); unknown keys are errors, not ignored. */
export const WorkerSpecSchema = v.strictObject(
  {
    url: v.string("must be a string"),
    id: v.optional(U64Schema),
    dp_ranks: v.optional(dpRanks),
    block_size: v.optional(
      v.pipe(
        v.number("must be a number"),
        v.integer("must be an integer"),
        v.minValue(1, "must be >= 1"),
      ),
    ),
    loras: v.optional(
      v.array(
        v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty")),
        "must be an array of adapter names",
      ),
    ),
    max_loras: v.optional(
      v.pipe(
        v.number("must be a number"),
        v.integer("must be an integer"),
        v.minValue(0, "must be >= 0"),
      ),
    ),
    model: v.optional(v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty"))),
    models: v.optional(
      v.pipe(
        v.array(
          v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty")),
          "must be an array of model names",
        ),
        v.nonEmpty("must not be empty"),
      ),
    ),
    kv_events: v.optional(KvEventsSchema),
    role: v.optional(v.picklist(["prefill", "decode", "both"], "must be prefill, decode or both")),
  },
  "unknown field (accepted: url, id, dp_ranks, block_size, loras, max_loras, model, models, kv_events, role)",
);

/**
 * A body's `kv_events` (validated by KvEventsSchema) with its `dp_ranks` → KvEventsSpec.
 * The rank count is kv_events.dp_ranks, else the body's dp_ranks, else 1; the two must agree.
 */
export function kvEventsSpec(
  kv: v.InferOutput<typeof KvEventsSchema> | undefined,
  dpRanks: number | undefined,
  what: string,
): KvEventsSpec | undefined {
  if (kv === undefined) return undefined;
  if (kv.dp_ranks !== undefined && dpRanks !== undefined && kv.dp_ranks !== dpRanks) {
    throw new RouterError(
      "invalid_request",
      `${what}: dp_ranks (${dpRanks}) and kv_events.dp_ranks (${kv.dp_ranks}) differ`,
      "kv_events.dp_ranks",
    );
  }
  return {
    endpoint: kv.endpoint,
    replayEndpoint: kv.replay_endpoint,
    dpRanks: kv.dp_ranks ?? dpRanks ?? 1,
    topic: kv.topic,
  };
}

/** One workers-file entry → WorkerSpec; a RouterError names the bad field. */
export function parseWorkerSpec(raw: unknown, what = "invalid worker registration"): WorkerSpec {
  const r = v.safeParse(WorkerSpecSchema, raw);
  if (!r.success) throw new RouterError("invalid_request", `${what}: ${describeIssues(r.issues)}`);
  return workerSpecOf(r.output, what);
}

/** A validated registration (a workers-file entry, or POST /v1/workers' body) → WorkerSpec. */
export function workerSpecOf(b: v.InferOutput<typeof WorkerSpecSchema>, what: string): WorkerSpec {
  const kvEvents = kvEventsSpec(b.kv_events, b.dp_ranks, what);
  return {
    url: b.url,
    id: b.id,
    dpRanks: kvEvents?.dpRanks ?? b.dp_ranks,
    blockSize: b.block_size,
    loras: b.loras,
    maxLoras: b.max_loras,
    model: b.model,
    models: b.models,
    kvEvents,
    ...(b.role !== undefined ? { role: b.role } : {}),
  };
}
