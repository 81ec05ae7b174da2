/**
 * The per-request metrics operators graph, by model and route: end-to-end duration, time to
 * first token, inter-token latency, tokens in / out / cached, requests by status class, and
 * the cache's hit against the best hit any candidate offered. Recorded once per finished
 * request (request-observation.ts), never per chunk.
 *
 * Cardinality is bounded: `model` takes the first MAX_MODEL_LABELS names that were routed to
 * a worker and "other" after that (a client can send any string as `model`, and an unknown
 * one must not mint a series); `route` is one of the router's own paths or "other". No
 * request or session id is ever a label. With --api-keys, requests, tokens and TTFT are also
 * counted per tenant, in families of their own so the per-model series do not multiply by the
 * tenants: `tenant` takes only the names the keys file configures (never a key).
 */
import { METRIC_PREFIX } from "./names.ts";
import type { Counter, Histogram, MetricsRegistry } from "./registry.ts";

/** Distinct `model` label values; past it, "other". A fleet rarely serves more than a handful of models and adapters. */
export const MAX_MODEL_LABELS = 32;
/** The label of requests that named no model, and of names past the cap or never routed. */
export const NO_MODEL = "none";
export const OTHER_MODEL = "other";

/** End to end: LLM answers take from tens of ms (a short cached prompt) to minutes (long generations). */
const DURATION_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];
/** Time to first token: a cached prefix answers in ms, a 128k-token cold prefill in tens of seconds. */
const TTFT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Mean gap between tokens of one stream: a few ms (small batch) to a fraction of a second (saturated engine). */
const ITL_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1];

/** Status class label of a finished request: 2xx..5xx, or "cancelled" when the client left first. */
export type StatusClass = "2xx" | "3xx" | "4xx" | "5xx" | "cancelled";

export function statusClass(status: number, cancelled: boolean): StatusClass {
  if (cancelled) return "cancelled";
  if (status >= 500) return "5xx";
  if (status >= 400) return "4xx";
  if (status >= 300) return "3xx";
  return "2xx";
}

/** What one finished request adds to the metrics. */
export interface FinishedRequest {
  readonly model: string;
  /** The request's tenant (--api-keys; src/protect tenantOf); undefined: none, nothing per tenant is recorded. */
  readonly tenant?: string;
  readonly route: string;
  readonly status: number;
  readonly cancelled: boolean;
  readonly durationS: number;
  /** Streamed answers only. */
  readonly ttftS?: number;
  /** Mean gap between output tokens; streamed answers with 2+ tokens only. */
  readonly itlS?: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  /** Set once a worker was chosen: the prompt's blocks, cached on the chosen worker, cached on the best candidate. */
  readonly blocks?: { readonly prompt: number; readonly cached: number; readonly best: number };
}

export class RequestMetrics {
  readonly requests: Counter;
  readonly duration: Histogram;
  readonly ttft: Histogram;
  readonly itl: Histogram;
  readonly promptTokens: Counter;
  readonly completionTokens: Counter;
  readonly cachedTokens: Counter;
  readonly promptBlocks: Counter;
  readonly cachedBlocks: Counter;
  readonly bestCachedBlocks: Counter;
  readonly tenantRequests: Counter;
  readonly tenantPromptTokens: Counter;
  readonly tenantCompletionTokens: Counter;
  readonly tenantTtft: Histogram;
  readonly #models = new Set<string>();

  constructor(r: MetricsRegistry) {
    const p = METRIC_PREFIX;
    this.requests = r.counter(
      `${p}http_requests_total`,
      "Client requests the router finished, by model, route and status class (cancelled: the client left first)",
      ["model", "route", "status_class"],
    );
    this.duration = r.histogram(
      `${p}request_duration_seconds`,
      "Time from the request's arrival to the answer's last byte",
      ["model", "route"],
      DURATION_BUCKETS,
    );
    this.ttft = r.histogram(
      `${p}time_to_first_token_seconds`,
      "Time from the request's arrival to its first streamed token (streamed answers)",
      ["model", "route"],
      TTFT_BUCKETS,
    );
    this.itl = r.histogram(
      `${p}inter_token_latency_seconds`,
      "Mean gap between a streamed answer's tokens, one observation per answer",
      ["model", "route"],
      ITL_BUCKETS,
    );
    this.promptTokens = r.counter(
      `${p}prompt_tokens_total`,
      "Prompt tokens of routed requests, as the router tokenized them",
      ["model"],
    );
    this.completionTokens = r.counter(
      `${p}completion_tokens_total`,
      "Output tokens of answers, as the engine counts them (its usage; a stream without usage: its events with output)",
      ["model"],
    );
    this.cachedTokens = r.counter(
      `${p}cached_tokens_total`,
      "Prompt tokens already cached on the chosen worker (prefix blocks x block size)",
      ["model"],
    );
    this.promptBlocks = r.counter(
      `${p}prompt_blocks_total`,
      "Full prompt blocks of routed requests",
      ["model"],
    );
    this.cachedBlocks = r.counter(
      `${p}cached_blocks_total`,
      "Prompt blocks cached on the worker the router chose",
      ["model"],
    );
    this.bestCachedBlocks = r.counter(
      `${p}best_cached_blocks_total`,
      "Prompt blocks cached on the candidate with the longest cached prefix: the hit the router could have had",
      ["model"],
    );
    this.tenantRequests = r.counter(
      `${p}tenant_requests_total`,
      "Client requests the router finished for each tenant (--api-keys), by status class (cancelled: the client left first)",
      ["tenant", "status_class"],
    );
    this.tenantPromptTokens = r.counter(
      `${p}tenant_prompt_tokens_total`,
      "Prompt tokens of each tenant's routed requests, as the router tokenized them",
      ["tenant"],
    );
    this.tenantCompletionTokens = r.counter(
      `${p}tenant_completion_tokens_total`,
      "Output tokens of each tenant's answers, as the engine counts them (its usage; a stream without usage: its events with output)",
      ["tenant"],
    );
    this.tenantTtft = r.histogram(
      `${p}tenant_time_to_first_token_seconds`,
      "Time from a tenant's request's arrival to its first streamed token (what fair admission evens out between tenants)",
      ["tenant"],
      TTFT_BUCKETS,
    );
  }

  /**
   * The label for `model`: its name once it was routed (and while under the cap), "none" when
   * the request named none, else "other". `routed` says a worker accepted this name.
   */
  modelLabel(model: string | undefined, routed: boolean): string {
    if (model === undefined) return NO_MODEL;
    if (this.#models.has(model)) return model;
    if (!routed || this.#models.size >= MAX_MODEL_LABELS) return OTHER_MODEL;
    this.#models.add(model);
    return model;
  }

  record(f: FinishedRequest): void {
    const ml = [f.model, f.route];
    const sc = statusClass(f.status, f.cancelled);
    this.requests.inc([f.model, f.route, sc]);
    this.duration.observe(ml, f.durationS);
    if (f.ttftS !== undefined) this.ttft.observe(ml, f.ttftS);
    if (f.itlS !== undefined) this.itl.observe(ml, f.itlS);
    const m = [f.model];
    if (f.promptTokens > 0) this.promptTokens.inc(m, f.promptTokens);
    if (f.completionTokens > 0) this.completionTokens.inc(m, f.completionTokens);
    if (f.blocks !== undefined) {
      this.cachedTokens.inc(m, f.cachedTokens);
      this.promptBlocks.inc(m, f.blocks.prompt);
      this.cachedBlocks.inc(m, f.blocks.cached);
      this.bestCachedBlocks.inc(m, f.blocks.best);
    }
    if (f.tenant !== undefined) {
      const t = [f.tenant];
      this.tenantRequests.inc([f.tenant, sc]);
      if (f.promptTokens > 0) this.tenantPromptTokens.inc(t, f.promptTokens);
      if (f.completionTokens > 0) this.tenantCompletionTokens.inc(t, f.completionTokens);
      if (f.ttftS !== undefined) this.tenantTtft.observe(t, f.ttftS);
    }
  }
}
