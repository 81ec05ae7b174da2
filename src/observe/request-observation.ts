/**
 * One client request as the operator sees it afterwards: its access line, its metrics and its
 * spans. The edge calls a few hooks at well-named points — the request starts (the server
 * wrapper), the prompt is read and tokenized, the routing decision is known, the upstream
 * call goes out, its first byte arrives, the answer ends — and `respond` when the handler's
 * answer leaves. The record is finished exactly once: when the answer leaves, or, for a
 * stream, when the stream ends.
 *
 * It also owns what travels with the request: the request id (kept from the client when it
 * is safe, else made) echoed as x-request-id and sent to the engine, and the W3C trace
 * context sent to the engine (this router's upstream span when it traces, else the
 * client's own context when valid; an invalid one is dropped).
 */
import type { Logger } from "../core/logger.ts";
import { tenantOf } from "../protect/index.ts";
import type { CandidateView, DecisionLog } from "./decision-log.ts";
import { kvPlanText, type KvPlanView } from "./kv-plan-text.ts";
import type { RecentStats } from "./recent-stats.ts";
import { acceptedRequestId, newRequestId, REQUEST_ID_HEADER } from "./request-id.ts";
import type { RequestMetrics } from "./request-metrics.ts";
import {
  formatTraceparent,
  newTraceParent,
  parseTraceparent,
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
  validTracestate,
  type TraceParent,
} from "./trace-context.ts";
import type { Attributes, SpanHandle, SpanIdentity, Tracer } from "./tracing.ts";

export interface ObserveDeps {
  readonly log: Logger;
  /** Access lines are written (the log level lets info lines through). */
  readonly accessLines: boolean;
  readonly metrics: RequestMetrics;
  /** Spans are made only with a tracer (--otlp-endpoint). */
  readonly tracer?: Tracer;
  /** Share of new traces recorded (--otlp-sample-ratio, default 1); a client's sampled flag decides for its own. */
  readonly sampleRatio?: number;
  /** Uniform in [0, 1), for the sampling decision (default Math.random). */
  readonly rng?: () => number;
  readonly decisions?: DecisionLog;
  readonly recent?: RecentStats;
  /** Milliseconds since the epoch, sub-millisecond (performance.timeOrigin + performance.now()). */
  readonly clock: () => number;
  readonly blockSize: number;
  readonly workerUrl: (id: bigint) => string | undefined;
}

/** A routing decision as the proxy has it (src/router RouteDecision, read structurally). */
export interface DecisionView {
  readonly worker: { readonly workerId: bigint; readonly dpRank: number };
  readonly overlapBlocks: number;
  readonly sticky: boolean;
  /** The candidates the policy weighed, costs set: all of them, or the cheapest and the chosen (the router's). */
  readonly candidates?: readonly CandidateView[];
  /** How many there were, when `candidates` holds only some (default: its length). */
  readonly candidatesTotal?: number;
  /** The most prompt blocks any had cached, when `candidates` holds only some. */
  readonly bestOverlapBlocks?: number;
  /** The transfer the decision counted on (a load from the engine's tiers or a pull from a peer). */
  readonly kvPlan?: KvPlanView;
}

/** How a streamed answer ended (the proxy's StreamEnd): client_timeout is a client that took nothing for the stream-idle deadline and was cut. */
export type StreamOutcome = "done" | "error" | "timeout" | "client_timeout" | "cancelled";

/** A streamed answer on its way to the client. */
export interface StreamTrack {
  /** Running count of output tokens as the engine counts them (edge/proxy/sse-counter.ts); the first count above 0 marks the first token. */
  tokens(total: number): void;
  /** A chunk of an answer that is not SSE: its tail holds the usage (JSON answers put it last). */
  chunk(bytes: Uint8Array): void;
  end(how: StreamOutcome, tokens: number, bytes: number): void;
}

interface Answer {
  readonly status: number;
  readonly streamed: boolean;
  firstTokenAt: number | undefined;
  outputTokens: number;
  bytes: number;
  ended: boolean;
  outcome: StreamOutcome;
  /** Set by respond() when the record waits for this stream's end. */
  onEnded: (() => void) | undefined;
}

/**
 * Spans this record opens: the request's own ("server") and the upstream try in flight. The
 * first byte is an event of the upstream span (and its time an attribute), not a span of its
 * own: every span costs the SDK time on every request (bench/observe/cpu.ts).
 */
interface Spans {
  server: SpanHandle;
  upstream?: SpanHandle;
}

/** OpenTelemetry GenAI `gen_ai.operation.name` per route. */
const GEN_AI_OPERATION: Readonly<Record<string, string>> = {
  "/v1/chat/completions": "chat",
  "/v1/completions": "text_completion",
  "/v1/embeddings": "embeddings",
  "/v1/responses": "chat",
  "/generate": "text_completion",
};

export class RequestObservation {
  readonly id: string;
  readonly #d: ObserveDeps;
  /** The client's request: its tenant (--api-keys) is known only once the key check has run, so it is read at the end. */
  readonly #request: Request;
  readonly #start: number;
  readonly #method: string;
  readonly #route: string;
  /** The context the engine continues when this router records nothing: the client's, or an unsampled one of ours. */
  readonly #clientParent: TraceParent | undefined;
  readonly #tracestate: string | undefined;
  readonly #spans: Spans | undefined;
  #model: string | undefined;
  #routedModel = false;
  #promptTokens = 0;
  #session: string | undefined;
  #worker: { workerId: bigint; dpRank: number } | undefined;
  #overlap = 0;
  #best = 0;
  /** The kv policy's predicted TTFT on the chosen worker (ms from the decision), beside the observed one in the access line. */
  #predictedTtftMs: number | undefined;
  #kvPlan: KvPlanView | undefined;
  #retries: string[] | undefined;
  /** Moves of the stream to another worker (edge/proxy/migration), "from -> to: why". */
  #migrations: string[] | undefined;
  #routingFrom: number | undefined;
  #routeStart = 0;
  #routeEnd = 0;
  #admissionWaitMs: number | undefined;
  #prefillWorker: bigint | undefined;
  #sentAt: number | undefined;
  #firstByteAt: number | undefined;
  #answer: Answer | undefined;
  #error: string | undefined;
  #cancelled = false;
  #finished = false;

  constructor(d: ObserveDeps, req: Request, route: string) {
    this.#d = d;
    this.#request = req;
    this.#start = d.clock();
    this.#method = req.method;
    this.#route = route;
    const h = req.headers;
    this.id = acceptedRequestId(h.get(REQUEST_ID_HEADER)) ?? newRequestId();
    const client = parseTraceparent(h.get(TRACEPARENT_HEADER));
    this.#tracestate = client !== undefined ? validTracestate(h.get(TRACESTATE_HEADER)) : undefined;
    // Parent-based sampling: a client's flag decides for its trace; a new trace is recorded
    // with probability sampleRatio. One not recorded still gets a context (flagged unsampled),
    // so the engine and the access line agree on its trace id and the engine records nothing either.
    const ratio = d.sampleRatio ?? 1;
    const unsampledNew =
      d.tracer !== undefined &&
      client === undefined &&
      ratio < 1 &&
      (d.rng ?? Math.random)() >= ratio;
    this.#clientParent = unsampledNew ? newTraceParent(false) : client;
    if (d.tracer !== undefined && !unsampledNew && (client === undefined || client.sampled)) {
      const parent = this.#clientParent && { ...this.#clientParent, tracestate: this.#tracestate };
      this.#spans = {
        server: d.tracer.start({
          name: `${this.#method} ${route}`,
          kind: "server",
          parent,
          remoteParent: parent !== undefined,
          startMs: this.#start,
          attributes: {
            "http.request.method": this.#method,
            "http.route": route,
            "url.path": route,
            "user_agent.original": h.get("user-agent") ?? undefined,
            "switchyard.request_id": this.id,
          },
        }),
      };
    }
  }

  /** The trace this request belongs to: ours when tracing, else the client's (or none). */
  get traceId(): string | undefined {
    return this.#spans?.server.identity.traceId ?? this.#clientParent?.traceId;
  }

  /** The body's model, prompt size, stream flag and session, once the prompt is read. */
  prompt(p: {
    readonly model: unknown;
    readonly tokens: number;
    readonly sessionId?: string;
  }): void {
    this.#model = typeof p.model === "string" ? p.model : undefined;
    this.#promptTokens = p.tokens;
    if (p.sessionId !== undefined) this.#session = hashSessionId(p.sessionId);
  }

  /** Time `fn` (reading the prompt into tokens) as the tokenize span. */
  async tokenize<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#spans === undefined) return fn();
    const t0 = this.#d.clock();
    try {
      return await fn();
    } finally {
      this.#child("tokenize", t0, this.#d.clock());
    }
  }

  /**
   * Wrap one routing attempt: the last call that returns is the decision, and the time before
   * it (retries of a busy fleet inside the admission queue) is the admission wait.
   */
  routing<T>(attempt: () => Promise<T>): () => Promise<T> {
    return async () => {
      const t0 = this.#d.clock();
      this.#routingFrom ??= t0;
      const r = await attempt();
      this.#routeStart = t0;
      this.#routeEnd = this.#d.clock();
      return r;
    };
  }

  decided(decision: DecisionView): void {
    this.#worker = decision.worker;
    this.#overlap = decision.overlapBlocks;
    this.#routedModel = true;
    let best = decision.overlapBlocks;
    const cands = decision.candidates;
    if (decision.bestOverlapBlocks !== undefined) best = Math.max(best, decision.bestOverlapBlocks);
    else if (cands !== undefined)
      for (const c of cands) if (c.overlapBlocks > best) best = c.overlapBlocks;
    this.#best = best;
    const w = decision.worker;
    this.#predictedTtftMs = cands?.find(
      (c) => c.endpoint.worker.workerId === w.workerId && c.endpoint.worker.dpRank === w.dpRank,
    )?.predictedTtftMs;
    this.#kvPlan = decision.kvPlan;
    const wait = this.#routingFrom !== undefined ? this.#routeStart - this.#routingFrom : 0;
    this.#admissionWaitMs = wait;
    this.#d.decisions?.record({
      timeMs: this.#routeEnd || this.#d.clock(),
      requestId: this.id,
      model: this.#model,
      promptTokens: this.#promptTokens,
      chosen: decision.worker,
      overlapBlocks: decision.overlapBlocks,
      sticky: decision.sticky,
      candidates: cands ?? [],
      candidatesTotal: decision.candidatesTotal,
      bestOverlapBlocks: decision.bestOverlapBlocks,
      kvPlan: decision.kvPlan,
    });
    if (this.#spans === undefined) return;
    // Sub-millisecond waits are the first try itself, not a queue.
    if (wait >= 1) this.#child("admission wait", this.#routingFrom!, this.#routeStart);
    let chosenCost: number | undefined;
    const costs: string[] = [];
    if (cands !== undefined) {
      for (const c of cands) {
        const w = c.endpoint.worker;
        if (w.workerId === decision.worker.workerId && w.dpRank === decision.worker.dpRank)
          chosenCost = c.cost;
      }
      for (const c of [...cands].sort((a, b) => a.cost - b.cost).slice(0, 8)) {
        costs.push(
          `${c.endpoint.worker.workerId}:${c.endpoint.worker.dpRank} overlap=${c.overlapBlocks} cost=${Math.round(c.cost * 1000) / 1000}`,
        );
      }
    }
    this.#child("route", this.#routeStart || this.#d.clock(), this.#routeEnd || this.#d.clock(), {
      "switchyard.route.candidates": decision.candidatesTotal ?? cands?.length,
      "switchyard.route.candidate_costs": costs,
      "switchyard.route.overlap_blocks": decision.overlapBlocks,
      "switchyard.route.best_overlap_blocks": best,
      "switchyard.route.cost": chosenCost,
      "switchyard.route.worker_id": String(decision.worker.workerId),
      "switchyard.route.dp_rank": decision.worker.dpRank,
      "switchyard.route.sticky": decision.sticky,
    });
  }

  /** --disagg: the prefill worker of this request's pair. */
  prefillPair(workerId: bigint): void {
    this.#prefillWorker = workerId;
  }

  /**
   * The upstream call is about to go out with `headers`: our request id, and the trace
   * context the engine should continue (this call's span when tracing, else the client's).
   */
  upstream(headers: Record<string, string>, baseUrl: string, path: string): void {
    headers[REQUEST_ID_HEADER] = this.id;
    const now = this.#d.clock();
    this.#sentAt = now;
    let ctx: SpanIdentity | undefined = this.#clientParent && {
      ...this.#clientParent,
      tracestate: this.#tracestate,
    };
    const s = this.#spans;
    if (s !== undefined) {
      const url = safeUrl(baseUrl);
      s.upstream = this.#d.tracer!.start({
        name: "POST",
        kind: "client",
        parent: s.server.identity,
        startMs: now,
        attributes: {
          "http.request.method": "POST",
          "url.full": baseUrl + path,
          "server.address": url?.hostname,
          "server.port":
            url !== undefined
              ? Number(url.port || (url.protocol === "https:" ? 443 : 80))
              : undefined,
          "http.request.resend_count": this.#retries?.length || undefined,
          "switchyard.worker.id":
            this.#worker !== undefined ? String(this.#worker.workerId) : undefined,
        },
      });
      ctx = { ...s.upstream.identity, tracestate: this.#tracestate };
    }
    if (ctx !== undefined) {
      headers[TRACEPARENT_HEADER] = formatTraceparent(ctx.traceId, ctx.spanId, ctx.sampled);
      if (ctx.tracestate !== undefined) headers[TRACESTATE_HEADER] = ctx.tracestate;
      else delete headers[TRACESTATE_HEADER];
    } else {
      delete headers[TRACEPARENT_HEADER];
      delete headers[TRACESTATE_HEADER];
    }
  }

  firstByte(status: number): void {
    const now = this.#d.clock();
    this.#firstByteAt = now;
    const s = this.#spans;
    if (s?.upstream !== undefined) {
      s.upstream.set({
        "http.response.status_code": status,
        "switchyard.upstream.first_byte_ms":
          this.#sentAt !== undefined ? ms(now - this.#sentAt) : undefined,
      });
      s.upstream.event("first_byte", now);
    }
  }

  /** This worker failed the request before its first byte; another may be tried. */
  attemptFailed(workerId: bigint, reason: string): void {
    (this.#retries ??= []).push(`worker ${workerId}: ${reason}`);
    // The next try's admission wait starts now, not before this failed call.
    this.#routingFrom = undefined;
    this.#endUpstream(reason);
  }

  /** The stream moved from one worker to another after its first byte (edge/proxy/migration). */
  migrated(from: bigint, to: bigint, why: string): void {
    (this.#migrations ??= []).push(`worker ${from} -> worker ${to}: ${why}`);
  }

  /** The client left before the first byte. */
  clientGone(): void {
    this.#cancelled = true;
    this.#endUpstream("client closed the request");
  }

  /** A whole answer (not streamed): its body (for the usage) and, for SSE, its output tokens (sse-counter.ts). */
  answered(status: number, body: Uint8Array | undefined, sseEvents: number | undefined): void {
    const streamedAtOnce = sseEvents !== undefined;
    this.#answer = {
      status,
      streamed: false,
      // An SSE answer that came whole: its tokens arrived with the first byte.
      firstTokenAt: streamedAtOnce && sseEvents > 0 ? this.#firstByteAt : undefined,
      outputTokens: streamedAtOnce ? sseEvents : body !== undefined ? completionTokensOf(body) : 0,
      bytes: body?.byteLength ?? 0,
      ended: true,
      outcome: "done",
      onEnded: undefined,
    };
    this.#endUpstream(status >= 500 ? `HTTP ${status}` : undefined);
  }

  /**
   * An answer that goes out as a stream starts (`sse`: an event stream, whose data events are
   * its tokens; else a body arriving in pieces, whose usage is read from its tail). Its end
   * finishes the record, if it is the answer the client gets.
   */
  streaming(status: number, sse: boolean): StreamTrack {
    const a: Answer = {
      status,
      streamed: sse,
      firstTokenAt: undefined,
      outputTokens: 0,
      bytes: 0,
      ended: false,
      outcome: "done",
      onEnded: undefined,
    };
    this.#answer = a;
    let tail: Uint8Array | undefined;
    return {
      tokens: (total) => {
        if (a.firstTokenAt === undefined && total > 0) a.firstTokenAt = this.#d.clock();
      },
      chunk: (c) => {
        tail = keepTail(tail, c);
      },
      end: (how, tokens, bytes) => {
        if (a.ended) return;
        a.ended = true;
        a.outcome = how;
        a.outputTokens = sse ? tokens : tail !== undefined ? completionTokensOf(tail) : 0;
        a.bytes = bytes;
        // A client cut for taking nothing left the answer as surely as one that hung up.
        if (how === "cancelled" || how === "client_timeout") this.#cancelled = true;
        if (this.#answer === a)
          this.#endUpstream(
            how === "error"
              ? "stream cut mid-answer"
              : how === "timeout"
                ? "stream idle deadline missed"
                : undefined,
          );
        a.onEnded?.();
      },
    };
  }

  /** The router answered with an error of this code (errors.ts); the access line names it. */
  failed(code: string): void {
    this.#error = code;
  }

  /** The answer leaves: echo the request id; finish now, or once its stream ends. */
  respond(res: Response): Response {
    let out = res;
    try {
      out.headers.set(REQUEST_ID_HEADER, this.id);
    } catch {
      // Headers of a Response made by fetch are immutable: copy it once to add ours.
      out = new Response(res.body, res);
      out.headers.set(REQUEST_ID_HEADER, this.id);
    }
    const a = this.#answer;
    if (a !== undefined && !a.ended) a.onEnded = () => this.#finish(out.status);
    else this.#finish(out.status);
    return out;
  }

  #endUpstream(failure: string | undefined): void {
    const s = this.#spans;
    if (s?.upstream === undefined) return;
    const now = this.#d.clock();
    if (failure !== undefined) s.upstream.fail(failure);
    s.upstream.end(now);
    s.upstream = undefined;
  }

  #child(name: string, startMs: number, endMs: number, attributes?: Attributes): void {
    const s = this.#spans!;
    const span = this.#d.tracer!.start({
      name,
      kind: "internal",
      parent: s.server.identity,
      startMs,
      attributes,
    });
    span.end(endMs);
  }

  #finish(status: number): void {
    if (this.#finished) return;
    this.#finished = true;
    const d = this.#d;
    const end = d.clock();
    const a = this.#answer;
    // A 499 is this router's own word for "the client left"; clients never see it.
    const cancelled = this.#cancelled || status === 499;
    const routed = this.#worker !== undefined;
    const model = d.metrics.modelLabel(this.#model, this.#routedModel);
    const promptBlocks = Math.floor(this.#promptTokens / d.blockSize);
    const cachedTokens = Math.min(this.#promptTokens, this.#overlap * d.blockSize);
    const ttft = a?.firstTokenAt !== undefined ? a.firstTokenAt - this.#start : undefined;
    const itl =
      a?.streamed && a.firstTokenAt !== undefined && a.outputTokens >= 2
        ? (end - a.firstTokenAt) / (a.outputTokens - 1)
        : undefined;
    const blocks = routed
      ? {
          prompt: promptBlocks,
          cached: Math.min(this.#overlap, promptBlocks),
          best: Math.min(this.#best, promptBlocks),
        }
      : undefined;
    // Bounded: only tenants the keys file names (never the key); undefined without --api-keys or
    // for a request refused before its key was accepted.
    const tenant = tenantOf(this.#request);
    d.metrics.record({
      model,
      tenant,
      route: this.#route,
      status,
      cancelled,
      durationS: (end - this.#start) / 1000,
      ttftS: ttft !== undefined ? ttft / 1000 : undefined,
      itlS: itl !== undefined ? itl / 1000 : undefined,
      promptTokens: routed ? this.#promptTokens : 0,
      completionTokens: a?.outputTokens ?? 0,
      cachedTokens,
      blocks,
    });
    // The fleet's traffic only: the status page reads GET /v1/workers every 2 s, and counting its
    // own reads would swell the requests and thin the error rate it shows.
    if (this.#route !== "/v1/workers")
      d.recent?.add({
        status,
        ttftMs: ttft,
        blocks,
        worker: this.#worker !== undefined ? String(this.#worker.workerId) : undefined,
      });
    const s = this.#spans;
    if (s !== undefined) {
      this.#endUpstream(undefined);
      s.server.set({
        "http.response.status_code": status,
        "gen_ai.operation.name": GEN_AI_OPERATION[this.#route],
        "gen_ai.request.model": this.#model,
        "gen_ai.usage.input_tokens": routed ? this.#promptTokens : undefined,
        "gen_ai.usage.output_tokens": a?.outputTokens,
        "switchyard.worker.id":
          this.#worker !== undefined ? String(this.#worker.workerId) : undefined,
        "switchyard.tenant": tenant,
        "switchyard.client_cancelled": cancelled || undefined,
        "error.type": this.#error ?? (status >= 500 ? String(status) : undefined),
      });
      if (status >= 500) s.server.fail(this.#error ?? `HTTP ${status}`);
      s.server.end(end);
    }
    // One line per request that reached a worker or was answered with an error; probes,
    // scrapes and the status page's reads write none.
    if (!d.accessLines || (!routed && status < 400 && !cancelled)) return;
    const w = this.#worker;
    d.log.info("request", {
      request_id: this.id,
      trace_id: this.traceId ?? null,
      method: this.#method,
      route: this.#route,
      model: this.#model ?? null,
      tenant: tenant ?? null,
      session: this.#session ?? null,
      status,
      error: this.#error ?? null,
      worker: w !== undefined ? String(w.workerId) : null,
      worker_url: w !== undefined ? (d.workerUrl(w.workerId) ?? null) : null,
      dp_rank: w?.dpRank ?? null,
      prefill_worker: this.#prefillWorker !== undefined ? String(this.#prefillWorker) : null,
      prompt_tokens: this.#promptTokens,
      cached_blocks: routed ? this.#overlap : null,
      cached_tokens: routed ? cachedTokens : null,
      best_cached_blocks: routed ? this.#best : null,
      retries: this.#retries?.length ?? 0,
      retry_reasons: this.#retries ?? [],
      migrations: this.#migrations ?? [],
      admission_wait_ms: this.#admissionWaitMs !== undefined ? ms(this.#admissionWaitMs) : null,
      client_cancelled: cancelled,
      ttfb_ms: this.#firstByteAt !== undefined ? ms(this.#firstByteAt - this.#start) : null,
      ttft_ms: ttft !== undefined ? ms(ttft) : null,
      // A P/D pair's decode worker was priced as if it prefilled; its first token came after another worker's prefill.
      predicted_ttft_ms:
        routed && this.#prefillWorker === undefined && this.#predictedTtftMs !== undefined
          ? ms(this.#predictedTtftMs)
          : null,
      kv_plan:
        routed && this.#kvPlan !== undefined
          ? kvPlanText(this.#kvPlan, this.#kvPlan.observedTtftMs ?? ttft)
          : null,
      duration_ms: ms(end - this.#start),
      output_tokens: a?.outputTokens ?? null,
      bytes_out: a?.bytes ?? null,
    });
  }
}

function ms(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function safeUrl(u: string): URL | undefined {
  try {
    return new URL(u);
  } catch {
    return undefined;
  }
}

/**
 * A session id as log lines carry it: 64-bit FNV-1a in hex. Lines of one session stay
 * joinable across routers (no per-process key) while the id itself (often a user or
 * conversation id) stays out of the logs. Not a secret-keeping hash: an id with little
 * entropy can be guessed from it, as from any unkeyed hash.
 */
export function hashSessionId(id: string): string {
  // Two 32-bit FNV-1a lanes with different offsets: 64 bits without BigInt arithmetic.
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
}

/** Bytes of a whole answer's tail searched for its usage (it comes last in vLLM's and SGLang's JSON). */
const USAGE_TAIL_BYTES = 512;

/** The last USAGE_TAIL_BYTES of what arrived so far, `prev` then `chunk`. */
function keepTail(prev: Uint8Array | undefined, chunk: Uint8Array): Uint8Array {
  if (chunk.byteLength >= USAGE_TAIL_BYTES || prev === undefined)
    return chunk.subarray(Math.max(0, chunk.byteLength - USAGE_TAIL_BYTES)).slice();
  const keep = Math.min(prev.byteLength, USAGE_TAIL_BYTES - chunk.byteLength);
  const out = new Uint8Array(keep + chunk.byteLength);
  out.set(prev.subarray(prev.byteLength - keep));
  out.set(chunk, keep);
  return out;
}

/** The key searched for, as bytes. */
const COMPLETION_TOKENS_KEY = new TextEncoder().encode('"completion_tokens"');

/**
 * `usage.completion_tokens` of a whole JSON answer, found in its tail without parsing the body
 * or building a string (this runs once per whole answer, on the proxy's hot path); 0 when absent.
 * The last occurrence of the key wins, followed by optional whitespace, a colon and digits.
 */
export function completionTokensOf(body: Uint8Array): number {
  const key = COMPLETION_TOKENS_KEY;
  const from = Math.max(0, body.byteLength - USAGE_TAIL_BYTES);
  for (let at = body.byteLength - key.length; at >= from; at--) {
    let k = 0;
    while (k < key.length && body[at + k] === key[k]) k++;
    if (k < key.length) continue;
    let i = skipSpace(body, at + k);
    if (body[i] !== 0x3a) continue; // ':'
    i = skipSpace(body, i + 1);
    let n = 0;
    let digits = 0;
    for (; i < body.byteLength && body[i]! >= 0x30 && body[i]! <= 0x39; i++, digits++)
      n = n * 10 + (body[i]! - 0x30);
    if (digits > 0) return n;
  }
  return 0;
}

function skipSpace(b: Uint8Array, i: number): number {
  while (i < b.byteLength && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09))
    i++;
  return i;
}
