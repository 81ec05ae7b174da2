/**
 * Forwards one OpenAI request to the worker the router chose and streams the answer back
 * unchanged. A failure before the first byte (connection refused, reset, a 502/503/504, a
 * body that breaks before its first chunk, a missed connect / first-byte / response
 * deadline: attempt.ts) frees the booking, fences that worker and routes again without it;
 * a 500 or 429 (retry-policy.ts) routes again without a fence, within the retry budget;
 * up to `maxRetries` times; so does the worker being taken out of rotation by anyone else
 * (health check, fence, ejection, removal) while the try waits for its first byte. After
 * the first byte, an upstream error reaches the client as a broken stream, a stall past the
 * idle deadline as an error event (observe-stream.ts). A client that leaves before the first
 * byte closes the engine call and blames no worker. Every answer's outcome is reported
 * (`report`) for outlier ejection. The booking is released exactly once. Every way out is a
 * returned answer or a thrown error (retries, fail-over and a malformed answer included), so
 * a caller holding a tenant's share (edge/tenants) settles it once on either.
 */
import { RouterError } from "../../core/errors.ts";
import { errorResponse } from "../errors.ts";
import type { WorkerId } from "../../core/ids.ts";
import type { WorkerRegistry } from "../../fleet/registry.ts";
import type { PromptHashes, RouteDecision, RoutingService, SessionControl, TenantShare } from "../../router/index.ts";
import type { Observability, Upstream, WorkerOutcomes } from "../deps.ts";
import { clientResponseHeaders, HEADER_DP_RANK, HEADER_OVERLAP, HEADER_WORKER, upstreamRequestHeaders } from "./headers.ts";
import { observeStream, type ChunkReader, type StreamEnd } from "./observe-stream.ts";
import { SseDataCounter } from "./sse-counter.ts";
import { attemptUpstream } from "./attempt.ts";
import { NO_DEADLINES } from "./deadlines.ts";
import type { UpstreamBody, UpstreamResponse } from "./upstream.ts";
import { countsAsFailure, fencesWorker, GATEWAY_RETRIES_ONLY, type RetryPolicy } from "./retry-policy.ts";
import type { RequestObservation } from "../../observe/request-observation.ts";

/** What the proxy path needs: the same for every proxied route (and the decode half under --disagg). */
export interface ForwardDeps {
  /** Decisions: routeOrWait (waits in the router's admission gate while every worker is busy), prepare, request ids. */
  readonly routing: RoutingService;
  /** A decision's worker -> its URL (gone meanwhile: the next decision), and word when it leaves rotation. */
  readonly registry: Pick<WorkerRegistry, "get" | "onUnavailable" | "healthyIds">;
  readonly upstream: Upstream;
  readonly outcomes: WorkerOutcomes;
  readonly observe: Observability;
}

export interface ForwardInput {
  /** The client's request (headers, abort signal). */
  readonly request: Request;
  /** Upstream path, e.g. /v1/chat/completions. */
  readonly path: string;
  /** The body exactly as received; forwarded byte for byte. */
  readonly body: Uint8Array;
  readonly tokens: Uint32Array;
  /** The tokens are not the engine's (text without a tokenizer): route approximately. */
  readonly approximate?: boolean;
  readonly loraName?: string;
  readonly sessionId?: string;
  readonly sessionControl?: SessionControl;
  readonly allowedWorkerIds?: ReadonlySet<WorkerId>;
  /** The body asked for an SSE stream (`stream: true`); picks the first-byte or the response deadline. */
  readonly stream?: boolean;
  /** The body's `priority` (vLLM: lower is served first); orders the admission queue. */
  readonly priority?: number;
  /** The prompt's hashes when the caller has them already (a LoRA 404 retry reuses them); else hashed here once. */
  readonly prepared?: PromptHashes;
  /** The output tokens the body asks for (max_tokens and kin; src/protect/output-budget.ts); undefined: it does not say. */
  readonly maxOutputTokens?: number;
  /** With --api-keys: the request's tenant and what it asks, for fair admission in the router's queue. */
  readonly share?: TenantShare;
  /**
   * What the engine gets as `Authorization`: undefined passes the client's on (engines with
   * their own keys), null drops it and a string replaces it. With --api-keys the client's
   * header holds its key to this router, which must never reach an engine's logs.
   */
  readonly upstreamAuthorization?: string | null;
  /**
   * The caller reads the answer's body itself before the client does (edge/tenants reads its
   * usage): the body is then a pull stream, since Bun's direct stream waits for a client's
   * socket to drain only when it writes to one, so under a JavaScript reader neither the
   * engine's backpressure nor the stalled-client cut would hold.
   */
  readonly bodyReadByCaller?: boolean;
  /** The decode half of a P/D pair: another worker computes the prompt (RouteInput.prefilledElsewhere). */
  readonly prefilledElsewhere?: boolean;
}

/** The worker each answer forward() made came from (read by dispatch without parsing our own header back). */
const routedWorkers = new WeakMap<Response, WorkerId>();

/** The worker that answered `res`, when forward() made it from a worker's answer. */
export function routedWorkerOf(res: Response): WorkerId | undefined {
  return routedWorkers.get(res);
}

export async function forward(input: ForwardInput, d: ForwardDeps): Promise<Response> {
  d.upstream.keepOpen?.(input.request);
  const obs = d.observe.requests?.of(input.request);
  // Two ids, two jobs. `requestId` is the router's own (its id in hex, a counter): it names the
  // booking in the load books, which load sync shares with other routers, so it must be unique
  // across the fleet and never come from a client. The client-facing one, obs.id, is the
  // client's x-request-id when it sent a valid one (else a UUID): echoed on the answer, sent to
  // the engine as x-request-id and written in the access line, so a client can quote it.
  const requestId = d.routing.nextRequestId();
  const exclude = new Set<WorkerId>();
  const failures: string[] = [];
  // Hashed once; every retry reuses them.
  const prepared = input.prepared ?? d.routing.prepare(input.tokens, input.loraName);
  const retry = d.upstream.retry ?? GATEWAY_RETRIES_ONLY;
  retry.budget?.request();
  const mayRetry = (worker: WorkerId) => (status: number) =>
    // A 500 or 429 from the last worker that could serve is the answer (a fencing status goes
    // on: it fences the worker, and the client gets upstream_failed when no worker is left).
    (fencesWorker(status) || anotherWorker(worker, exclude, input.allowedWorkerIds, d)) && (retry.budget === undefined || retryAllowed(retry, d));
  for (let attempt = 0; attempt <= d.upstream.maxRetries; attempt++) {
    let decision: RouteDecision;
    try {
      // Every candidate busy: the router waits for one in its admission queue (429 when full or too long).
      decision = await d.routing.routeOrWait(
        {
          tokens: input.tokens,
          prepared,
          approximate: input.approximate,
          requestId,
          loraName: input.loraName,
          sessionId: input.sessionId,
          sessionControl: input.sessionControl,
          allowedWorkerIds: input.allowedWorkerIds,
          exclude,
          prefilledElsewhere: input.prefilledElsewhere,
        },
        // A decision made for a client that left meanwhile: nobody will use its booking.
        {
          priority: input.priority,
          signal: input.request.signal,
          abandon: (x) => x.lease.free(),
          share: input.share,
          eachAttempt: obs !== undefined ? (attempt) => obs.routing(attempt) : undefined,
        },
      );
    } catch (e) {
      // Every worker left failed this request: say so rather than "no workers".
      if (failures.length > 0) throw upstreamFailed(failures);
      throw e;
    }
    const { worker, lease } = decision;
    const rec = d.registry.get(worker.workerId);
    if (!rec) {
      lease.free();
      exclude.add(worker.workerId);
      continue;
    }
    obs?.decided(decision);
    const headers = upstreamRequestHeaders(input.request.headers, worker.dpRank, input.upstreamAuthorization);
    obs?.upstream(headers, rec.url, input.path);
    const started = performance.now();
    const a = await attemptUpstream({
      call: d.upstream.call,
      baseUrl: rec.url,
      path: input.path,
      headers,
      body: input.body,
      clientSignal: input.request.signal,
      deadlines: d.upstream.deadlines ?? NO_DEADLINES,
      stream: input.stream,
      last: attempt === d.upstream.maxRetries,
      retryOn: retry.statuses,
      mayRetry: mayRetry(worker.workerId),
      watchWorker: (onDown) => d.registry.onUnavailable(worker.workerId, onDown),
    });
    if (a.kind === "answer") {
      d.observe.metrics.firstByte.observe((performance.now() - started) / 1000);
      obs?.firstByte(a.res.status);
      let answer: Response;
      try {
        if (a.res.status < 200 || a.res.status > 599) throw new Error(`status ${a.res.status} is not a final HTTP status`);
        answer = respond(a.res, a.first, a.reader, decision, d, obs, input.bodyReadByCaller !== true);
      } catch (e) {
        // Nothing reached the client: an answer the runtime cannot pass on (a status or a
        // header it refuses) is the worker's failure, not an unhandled 500 that would keep
        // the booking and the engine's stream.
        answer = malformedAnswer(a.reader, decision, rec.url, (e as Error).message, d, obs);
      }
      routedWorkers.set(answer, worker.workerId);
      return answer;
    }
    lease.free();
    if (a.kind === "client_gone") {
      obs?.clientGone();
      return clientGone(worker.workerId, d);
    }
    if (a.kind === "worker_down") {
      // Already out of rotation, and whoever took it out counted why: no fence or report
      // of our own, just the next worker.
      failures.push(`worker ${worker.workerId}`);
      exclude.add(worker.workerId);
      obs?.attemptFailed(worker.workerId, a.reason);
      d.observe.log.warn(`worker ${worker.workerId} (${rec.url}) left rotation before its first byte; trying another: ${a.reason}`, requestIdField(obs?.id));
      continue;
    }
    if (a.deadline !== undefined) d.observe.metrics.deadlineMisses.inc([String(worker.workerId), a.deadline]);
    obs?.attemptFailed(worker.workerId, a.reason);
    if (a.status !== undefined && !fencesWorker(a.status)) answeredRetryable(worker.workerId, rec.url, a.status, failures, exclude, d, obs?.id);
    else failAttempt(worker.workerId, rec.url, a.reason, failures, exclude, d, obs?.id);
  }
  throw upstreamFailed(failures);
}

function failAttempt(
  id: WorkerId,
  url: string,
  reason: string,
  failures: string[],
  exclude: Set<WorkerId>,
  d: ForwardDeps,
  requestId: string | undefined,
): void {
  // The client sees worker ids only; the URL and the engine's answer go to the log.
  failures.push(`worker ${id}`);
  exclude.add(id);
  d.outcomes.fence(id, reason);
  // After the fence: an ejection this failure causes is what /v1/workers shows as the reason.
  d.outcomes.report?.(id, reason);
  d.observe.metrics.upstreamFailures.inc([String(id)]);
  d.observe.log.warn(`upstream failure before the first byte, worker ${id} (${url}) fenced: ${reason}`, requestIdField(requestId));
}

/**
 * The engine answered a status worth another worker's try (a 500, a 429: retry-policy.ts)
 * that does not say the worker is down: the next worker gets the request, this one is not
 * fenced (one bad prompt must not fence the fleet), a server error counts towards ejection.
 */
function answeredRetryable(id: WorkerId, url: string, status: number, failures: string[], exclude: Set<WorkerId>, d: ForwardDeps, requestId: string | undefined): void {
  failures.push(`worker ${id}`);
  exclude.add(id);
  if (countsAsFailure(status)) d.outcomes.report?.(id, `HTTP ${status}`);
  d.observe.metrics.upstreamFailures.inc([String(id)]);
  d.observe.log.warn(`worker ${id} (${url}) answered HTTP ${status} before anything reached the client; trying another worker`, requestIdField(requestId));
}

/** Whether a healthy worker other than `id` and those tried may still take the request. */
function anotherWorker(id: WorkerId, tried: ReadonlySet<WorkerId>, allowed: ReadonlySet<WorkerId> | undefined, d: ForwardDeps): boolean {
  for (const w of d.registry.healthyIds()) {
    if (w !== id && !tried.has(w) && (allowed === undefined || allowed.has(w))) return true;
  }
  return false;
}

/** A retry the budget refused is counted, and the engine's answer goes to the client. */
function retryAllowed(retry: RetryPolicy, d: ForwardDeps): boolean {
  if (retry.budget!.tryRetry()) return true;
  d.observe.metrics.retryBudgetExhausted.inc([]);
  return false;
}

/**
 * The client left before the first byte: the engine connection is closed already
 * (attempt.ts), the booking freed; nobody reads this answer. Not the worker's fault.
 */
function clientGone(id: WorkerId, d: ForwardDeps): Response {
  d.observe.metrics.requests.inc([String(id), "client_cancelled"]);
  return new Response(null, { status: 499 });
}

function upstreamFailed(failures: readonly string[]): RouterError {
  return new RouterError("upstream_failed", `no worker could serve the request (tried ${failures.join(", ")}; the router's log has the reasons)`);
}

function respond(
  res: UpstreamResponse,
  first: Awaited<ReturnType<ChunkReader["read"]>> | undefined,
  reader: UpstreamBody | undefined,
  decision: RouteDecision,
  d: ForwardDeps,
  obs: RequestObservation | undefined,
  /** Bun's direct stream may carry the body (false: the caller reads it; a pull stream). */
  direct: boolean,
): Response {
  const { worker, lease } = decision;
  const workerLabel = String(worker.workerId);
  const headers = clientResponseHeaders(res.headers, workerLabel, worker.dpRank, decision.overlapBlocks);
  const init = { status: res.status, statusText: res.statusText, headers };
  // A non-streamed answer starts (headers) only once the engine has computed the prompt:
  // its prefill load is gone now, not when the whole answer has arrived.
  if (!isEventStream(res.headers)) lease.prefillDone();
  // A streamed answer's first data event is its first token: the TTFT the router learns speeds from.
  else if (res.status < 300 && first?.value !== undefined && new SseDataCounter().push(first.value) > 0) lease.firstToken();
  // A 5xx the engine answered counts against the worker; its body may hold the engine's
  // internals (URLs, stack traces), so it goes to the log and the client gets the worker id.
  if (res.status >= 500) {
    obs?.answered(res.status, undefined, undefined);
    return engineServerError(res, first, reader, decision, d, obs?.id);
  }
  if (!reader || !first || first.done || first.value === undefined) {
    const answer = new Response(null, init); // first: a refused head frees nothing twice
    obs?.answered(res.status, undefined, undefined);
    lease.free();
    d.outcomes.report?.(worker.workerId, undefined);
    d.observe.metrics.requests.inc([workerLabel, String(res.status)]);
    return answer;
  }
  if (reader.drained === true) {
    // The whole answer is already here (a non-streamed answer, or a fast engine): the
    // engine is done with the request, so count its tokens, release the booking and
    // answer the bytes at once, without a stream.
    const answer = new Response(first.value, init);
    const counter = new SseDataCounter();
    counter.push(first.value);
    counter.finish();
    if (counter.tokens > 0) lease.outputTokens(counter.tokens);
    obs?.answered(res.status, first.value, isEventStream(res.headers) ? counter.tokens : undefined);
    lease.free();
    d.outcomes.report?.(worker.workerId, undefined);
    d.observe.metrics.requests.inc([workerLabel, String(res.status)]);
    return answer;
  }
  const idleMs = d.upstream.deadlines?.streamIdleMs ?? 0;
  const sse = isEventStream(res.headers);
  const track = obs?.streaming(res.status, sse);
  const body = observeStream(first.value, reader, {
    onTokens: (n) => {
      lease.outputTokens(n);
      track?.tokens(n);
    },
    onChunk: track !== undefined && !sse ? (c) => track.chunk(c) : undefined,
    onEnd: (how, tokens, bytes) => {
      track?.end(how, tokens, bytes);
      lease.free();
      if (how === "timeout") d.observe.metrics.deadlineMisses.inc([workerLabel, "stream_idle"]);
      // A client that left or stopped reading says nothing about the worker.
      if (how !== "cancelled" && how !== "client_timeout") d.outcomes.report?.(worker.workerId, STREAM_FAILURE[how]);
      d.observe.metrics.requests.inc([workerLabel, how === "done" ? String(res.status) : STREAM_END_LABEL[how]]);
    },
  }, direct && d.upstream.directStreams, { idleMs, sse });
  return new Response(body, init);
}

/**
 * The engine's answer cannot be given to the client as it is: 502 naming the worker, the
 * booking freed, the engine connection closed, a failure counted against the worker.
 */
function malformedAnswer(reader: UpstreamBody | undefined, decision: RouteDecision, url: string, why: string, d: ForwardDeps, obs: RequestObservation | undefined): Response {
  const { worker, lease } = decision;
  const id = String(worker.workerId);
  void reader?.cancel().catch(() => {});
  lease.free();
  obs?.answered(502, undefined, undefined);
  d.outcomes.report?.(worker.workerId, `malformed answer: ${why}`);
  d.observe.metrics.upstreamFailures.inc([id]);
  d.observe.metrics.requests.inc([id, "502"]);
  d.observe.log.warn(`worker ${id} (${url}) sent an answer that cannot be passed on: ${why}`, requestIdField(obs?.id));
  const answer = errorResponse(502, "upstream_error", `worker ${id} sent a malformed answer (the router's log has the details)`);
  answer.headers.set(HEADER_WORKER, id);
  return answer;
}

/** A log line's field naming the client-facing request id, so it joins the access line. */
function requestIdField(requestId: string | undefined): Record<string, unknown> | undefined {
  return requestId !== undefined ? { request_id: requestId } : undefined;
}

/** Bytes of an engine's 5xx answer kept for the log. */
const ENGINE_ERROR_LOG_BYTES = 1024;

/**
 * The engine answered 5xx (a non-retryable status, or the last worker's 502/503/504): the
 * client gets the same status in OpenAI's shape naming the worker id; the engine's own
 * answer (which may name internal hosts or paths) is logged, never forwarded.
 */
function engineServerError(
  res: UpstreamResponse,
  first: Awaited<ReturnType<ChunkReader["read"]>> | undefined,
  reader: UpstreamBody | undefined,
  decision: RouteDecision,
  d: ForwardDeps,
  requestId: string | undefined,
): Response {
  const { worker, lease } = decision;
  const id = String(worker.workerId);
  const text = first?.value !== undefined ? new TextDecoder().decode(first.value.subarray(0, ENGINE_ERROR_LOG_BYTES)) : "";
  if (reader && first !== undefined && !first.done && reader.drained !== true) void reader.cancel().catch(() => {});
  lease.free();
  d.outcomes.report?.(worker.workerId, `HTTP ${res.status}`);
  d.observe.metrics.requests.inc([id, String(res.status)]);
  d.observe.log.warn(`worker ${id} answered HTTP ${res.status}: ${JSON.stringify(text)}`, requestIdField(requestId));
  const answer = errorResponse(res.status, "upstream_error", `worker ${id} answered HTTP ${res.status} (the router's log has its answer)`);
  answer.headers.set(HEADER_WORKER, id);
  answer.headers.set(HEADER_DP_RANK, String(worker.dpRank));
  answer.headers.set(HEADER_OVERLAP, String(decision.overlapBlocks));
  return answer;
}

/** What a stream's end says about the worker (done: its status decides). */
const STREAM_FAILURE: Partial<Record<StreamEnd, string>> = { error: "stream cut mid-answer", timeout: "stream idle deadline missed" };
/** requests_total status label of a stream that did not end well. */
const STREAM_END_LABEL: Record<StreamEnd, string> = {
  done: "200",
  error: "stream_error",
  timeout: "stream_timeout",
  client_timeout: "client_stalled",
  cancelled: "client_cancelled",
};

/** Is the answer an SSE stream? (headers: flat [name, value, ...] as the upstream gives them) */
function isEventStream(h: UpstreamResponse["headers"]): boolean {
  for (let i = 0; i + 1 < h.length; i += 2) {
    if (h[i]!.toLowerCase() === "content-type") return h[i + 1]!.toLowerCase().startsWith("text/event-stream");
  }
  return false;
}
