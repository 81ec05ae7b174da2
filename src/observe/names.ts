/**
 * The router's metrics: names, label sets and buckets. Everything that records a metric
 * goes through RouterMetrics; RouterError codes are used as label values unchanged.
 */
import type { BurstClaimOutcome } from "../router/index.ts";
import {
  MetricsRegistry,
  type Counter,
  type Gauge,
  type Histogram,
  type HistogramSeries,
} from "./registry.ts";

export const METRIC_PREFIX = "switchyard_";

/** Routing phases timed per request (block hashes, index match, scheduling), and their sum. */
export type RoutingPhase = "hash" | "match" | "schedule" | "total";

/** Why an event never reached the index. */
export type EventDropReason = "unknown_worker" | "invalid" | "approx_policy";

/** Which upstream deadline cut a wait (edge/proxy/deadlines.ts): the `deadline` label of upstream_deadline_misses_total. */
export const DEADLINE_KINDS = ["connect", "first_byte", "response", "stream_idle"] as const;
export type DeadlineKind = (typeof DEADLINE_KINDS)[number];

/** Seconds; routing work is microseconds to a few milliseconds. */
const OVERHEAD_BUCKETS = [
  1e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 5e-2,
];
const OVERLAP_BUCKETS = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096];
/** Seconds a request waited for a worker that is not busy. */
const QUEUE_WAIT_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** |predicted ÷ observed − 1|: fine below 0.5, where a good predictor lives, coarse above. */
const PREDICTION_ERROR_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 2, 5,
];

/** Status label of a request: the HTTP status, or "aborted" when the client left. */
export type RequestStatusLabel = string;

export class RouterMetrics {
  readonly registry = new MetricsRegistry();
  readonly requests: Counter = this.registry.counter(
    `${METRIC_PREFIX}requests_total`,
    "Proxied requests by worker and final status",
    ["worker", "status"],
  );
  readonly routingErrors: Counter = this.registry.counter(
    `${METRIC_PREFIX}routing_errors_total`,
    "Requests the router answered itself with an error, by code",
    ["code"],
  );
  readonly upstreamFailures: Counter = this.registry.counter(
    `${METRIC_PREFIX}upstream_failures_total`,
    "Upstream failures before the first byte (worker fenced, request retried)",
    ["worker"],
  );
  readonly retryBudgetExhausted: Counter = this.registry.counter(
    `${METRIC_PREFIX}retry_budget_exhausted_total`,
    "Engine answers passed to the client because the retry budget (--retry-budget) allowed no retry",
  );
  readonly streamMigrations: Counter = this.registry.counter(
    `${METRIC_PREFIX}stream_migrations_total`,
    "Streams that failed after their first byte, by what followed (moved: continued on another worker; refused: not movable, ended as before; failed: no worker took the continuation)",
    ["outcome"],
  );
  readonly routingOverhead: Histogram = this.registry.histogram(
    `${METRIC_PREFIX}routing_overhead_seconds`,
    "Time spent routing a request, per phase",
    ["phase"],
    OVERHEAD_BUCKETS,
  );
  readonly overlapBlocks: Histogram = this.registry.histogram(
    `${METRIC_PREFIX}overlap_blocks`,
    "Cached prefix blocks on the chosen worker",
    [],
    OVERLAP_BUCKETS,
  );
  readonly ttftPredictionErrors: Histogram = this.registry.histogram(
    `${METRIC_PREFIX}ttft_prediction_error_ratio`,
    "Per request, |predicted ÷ observed time to first token − 1| (the router's TTFT predictor: streamed answers, and the prefill half of a vLLM P/D pair)",
    [],
    PREDICTION_ERROR_BUCKETS,
  );
  readonly burstClaims: Counter = this.registry.counter(
    `${METRIC_PREFIX}burst_claims_total`,
    "The kv policy's decisions claimed in the routers' shared list, by outcome (clear: no claim the books lacked; counted: some, same choice; moved: the choice moved; failed: Redis did not answer)",
    ["outcome"],
  );
  readonly timeToFirstByte: Histogram = this.registry.histogram(
    `${METRIC_PREFIX}upstream_first_byte_seconds`,
    "Time from forwarding to the first upstream body byte",
    [],
    TTFT_BUCKETS,
  );
  readonly kvEventsApplied: Counter = this.registry.counter(
    `${METRIC_PREFIX}kv_events_applied_total`,
    "KV events applied to the index by type and status",
    ["event_type", "status"],
  );
  readonly kvEventsDropped: Counter = this.registry.counter(
    `${METRIC_PREFIX}kv_events_dropped_total`,
    "KV events received but not applied, by reason",
    ["reason"],
  );
  readonly kvEventPushesRefused: Counter = this.registry.counter(
    `${METRIC_PREFIX}kv_event_pushes_refused_total`,
    "KV event pushes (POST /v1/kv/events) refused at the door, by reason (missing or invalid credential, admin API closed): each is a gap in the index",
    ["reason"],
  );
  readonly indexBlocks: Gauge = this.registry.gauge(
    `${METRIC_PREFIX}index_blocks`,
    "Blocks in the KV index (a block held by k workers counts k times)",
  );
  readonly activePrefillTokens: Gauge = this.registry.gauge(
    `${METRIC_PREFIX}active_prefill_tokens`,
    "Prefill tokens of in-flight requests per worker",
    ["worker", "dp_rank"],
  );
  readonly activeDecodeBlocks: Gauge = this.registry.gauge(
    `${METRIC_PREFIX}active_decode_blocks`,
    "KV blocks of in-flight requests per worker",
    ["worker", "dp_rank"],
  );
  readonly workerHealthy: Gauge = this.registry.gauge(
    `${METRIC_PREFIX}worker_healthy`,
    "1 when the worker passed its last health check",
    ["worker"],
  );
  readonly deadlineMisses: Counter = this.registry.counter(
    `${METRIC_PREFIX}upstream_deadline_misses_total`,
    "Upstream waits cut by a deadline, by worker and deadline (connect|first_byte|response|stream_idle)",
    ["worker", "deadline"],
  );
  readonly workerEjections: Counter = this.registry.counter(
    `${METRIC_PREFIX}worker_ejections_total`,
    "Workers ejected by outlier detection (answers kept failing)",
    ["worker"],
  );
  readonly fencesRefused: Counter = this.registry.counter(
    `${METRIC_PREFIX}worker_fences_refused_total`,
    "Fences not made because too many workers were out of rotation already (--max-fenced-percent), by worker",
    ["worker"],
  );
  readonly deadlinesExcused: Counter = this.registry.counter(
    `${METRIC_PREFIX}upstream_deadlines_excused_total`,
    "Upstream deadlines that ran out while the router's own event loop was held, not counted against the worker, by deadline",
    ["deadline"],
  );
  readonly admissionQueueLength: Gauge = this.registry.gauge(
    `${METRIC_PREFIX}admission_queue_length`,
    "Requests waiting because every worker is busy",
  );
  readonly admissionWait: Histogram = this.registry.histogram(
    `${METRIC_PREFIX}admission_wait_seconds`,
    "Time admitted requests waited in the admission queue",
    [],
    QUEUE_WAIT_BUCKETS,
  );
  readonly admissionRejections: Counter = this.registry.counter(
    `${METRIC_PREFIX}admission_rejections_total`,
    "Requests answered 429 by the admission queue, by reason (queue_full|queue_timeout)",
    ["reason"],
  );
  readonly tokenizerEncoder: Gauge = this.registry.gauge(
    `${METRIC_PREFIX}tokenizer_encoder`,
    "1 per loaded tokenizer directory: its encoder (byte-level-bpe|library|native) and why not the byte-level BPE (empty when used; the differential check's first differing input when it found one)",
    ["tokenizer", "encoder", "reason"],
  );
  readonly engineMetric: Gauge = this.registry.gauge(
    `${METRIC_PREFIX}engine_load`,
    "The engines' own load from their /metrics, by worker, rank and metric (running|waiting|kv_usage)",
    ["worker", "dp_rank", "metric"],
  );

  /** Per-phase series resolved once: the routing path records four of them per request. */
  readonly phases: Readonly<Record<RoutingPhase, HistogramSeries>> = {
    hash: this.routingOverhead.series(["hash"]),
    match: this.routingOverhead.series(["match"]),
    schedule: this.routingOverhead.series(["schedule"]),
    total: this.routingOverhead.series(["total"]),
  };
  readonly overlap: HistogramSeries = this.overlapBlocks.series([]);
  readonly ttftPredictionError: HistogramSeries = this.ttftPredictionErrors.series([]);
  readonly firstByte: HistogramSeries = this.timeToFirstByte.series([]);
  readonly burstClaim = (outcome: BurstClaimOutcome): void => this.burstClaims.inc([outcome]);
  eventDropped(reason: EventDropReason, n = 1): void {
    this.kvEventsDropped.inc([reason], n);
  }
  render(): string {
    return this.registry.render();
  }
}
