/**
 * Forwards one OpenAI request to the worker the router chose and streams the answer back
 * unchanged. A failure before the first byte (connection refused, reset, a 502/503/504, a
 * body that breaks before its first chunk, a missed connect / first-byte / response
 * deadline: attempt.ts) frees the booking, fences that worker and routes again without it,
 * up to `maxRetries` times; after the first byte, an upstream error reaches the client as a
 * broken stream, a stall past the idle deadline as an error event (observe-stream.ts). A
 * client that leaves before the first byte closes the engine call and blames no worker.
 * Every answer's outcome is reported (`report`) for outlier ejection. The booking is
 * released exactly once.
 */
import { RouterError } from "../../core/errors.ts";
import { errorResponse } from "../errors.ts";
import type { WorkerId } from "../../core/ids.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import type { WorkerRegistry } from "../../fleet/registry.ts";
import type { AdmissionGate } from "../../router/admission/admission-gate.ts";
import type { RouteDecision, RoutingService, PromptHashes } from "../../router/routing-service.ts";
import type { SessionControl } from "../../router/sessions/session-control.ts";
import { clientResponseHeaders, HEADER_DP_RANK, HEADER_OVERLAP, HEADER_WORKER, upstreamRequestHeaders } from "./headers.ts";
import { observeStream, type ChunkReader, type StreamEnd } from "./observe-stream.ts";
import { SseDataCounter } from "./sse-counter.ts";
import { attemptUpstream } from "./attempt.ts";
import { NO_DEADLINES, type UpstreamDeadlines } from "./deadlines.ts";
import { fetchUpstream, type UpstreamBody, type UpstreamCall, type UpstreamResponse } from "./upstream.ts";
import type { RequestObservation } from "../../observe/request-observation.ts";

export interface ForwardDeps {
  readonly routing: RoutingService;
  readonly registry: WorkerRegistry;
  readonly fence: (workerId: WorkerId, reason: string) => void;
  readonly metrics: RouterMetrics;
  readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
  /** The upstream client; without one, requests go through `fetch`. */
  readonly upstream?: UpstreamCall;
  readonly maxRetries: number;
  /** Use Bun's direct streams for response bodies (see observe-stream.ts). */
  readonly directStreams?: boolean;
  readonly warn?: (message: string, fields?: Record<string, unknown>) => void;
  /** The request's observation (access line, metrics, spans), found by its Request; without it, none. */
  readonly observe?: (request: Request) => RequestObservation | undefined;
  /** Connect, first-byte and stream-idle deadlines (deadlines.ts); without them, none. */
  readonly deadlines?: UpstreamDeadlines;
  /** How each answer of a worker went (undefined: well), for outlier ejection (workers/health.ts). */
  readonly report?: (workerId: WorkerId, failure: string | undefined) => void;
  /**
   * The request's body is read: lift the server's idle timeout for it (Bun: server.timeout(req, 0)),
   * since an answer may stream for minutes; the proxy's own deadlines bound it from here.
   */
  readonly keepOpen?: (request: Request) => void;
  /** Where requests wait when every worker is busy; without it they get all_workers_busy (503). */
  readonly admission?: AdmissionGate;
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
}

/** The worker each answer forward() made came from (read by dispatch without parsing our own header back). */
const routedWorkers = new WeakMap<Response, WorkerId>();

/** The worker that answered `res`, when forward() made it from a worker's answer. */
export function routedWorkerOf(res: Response): WorkerId | undefined {
  return routedWorkers.get(res);
}

export async function forward(input: ForwardInput, d: ForwardDeps): Promise<Response> {
  d.keepOpen?.(input.request);
  const obs = d.observe?.(input.request);
  const requestId = d.routing.nextRequestId();
  const exclude = new Set<WorkerId>();
  const failures: string[] = [];
  // Hashed once; every retry reuses them.
  const prepared = input.prepared ?? d.routing.prepare(input.tokens, input.loraName);
  for (let attempt = 0; attempt <= d.maxRetries; attempt++) {
    let decision: RouteDecision;
    try {
      const route = () =>
        d.routing.route({
          tokens: input.tokens,
          prepared,
          approximate: input.approximate,
          requestId,
          loraName: input.loraName,
          sessionId: input.sessionId,
          sessionControl: input.sessionControl,
          allowedWorkerIds: input.allowedWorkerIds,
          exclude,
        });
      const attempt = obs !== undefined ? obs.routing(route) : route;
      // Every candidate busy: wait in the admission queue (429 when full or too long).
      decision = d.admission
        ? await d.admission.admit(attempt, { priority: input.priority, signal: input.request.signal, abandon: (x) => x.lease.free() })
        : await attempt();
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
    const headers = upstreamRequestHeaders(input.request.headers, worker.dpRank);
    obs?.upstream(headers, rec.url, input.path);
    const started = performance.now();
    const a = await attemptUpstream({
      call: upstreamOf(d),
      baseUrl: rec.url,
      path: input.path,
      headers,
      body: input.body,
      clientSignal: input.request.signal,
      deadlines: d.deadlines ?? NO_DEADLINES,
      stream: input.stream,
      last: attempt === d.maxRetries,
    });
    if (a.kind === "answer") {
      d.metrics.firstByte.observe((performance.now() - started) / 1000);
      obs?.firstByte(a.res.status);
      const answer = respond(a.res, a.first, a.reader, decision, d, obs);
      routedWorkers.set(answer, worker.workerId);
      return answer;
    }
    lease.free();
    if (a.kind === "client_gone") {
      obs?.clientGone();
      return clientGone(worker.workerId, d);
    }
    if (a.deadline !== undefined) d.metrics.deadlineMisses.inc([String(worker.workerId), a.deadline]);
    obs?.attemptFailed(worker.workerId, a.reason);
    failAttempt(worker.workerId, rec.url, a.reason, failures, exclude, d, obs?.id);
  }
  throw upstreamFailed(failures);
}

const fetchAdapters = new WeakMap<ForwardDeps["fetch"], UpstreamCall>();

/** The deps' upstream client, or one over their fetch (made once per fetch function). */
function upstreamOf(d: ForwardDeps): UpstreamCall {
  if (d.upstream) return d.upstream;
  let call = fetchAdapters.get(d.fetch);
  if (call === undefined) fetchAdapters.set(d.fetch, (call = fetchUpstream(d.fetch)));
  return call;
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
  // The client sees worker ids only; the URL and the engine's answer go to the log (issue 12).
  failures.push(`worker ${id}`);
  exclude.add(id);
  d.fence(id, reason);
  // After the fence: an ejection this failure causes is what /v1/workers shows as the reason.
  d.report?.(id, reason);
  d.metrics.upstreamFailures.inc([String(id)]);
  d.warn?.(`upstream failure before the first byte, worker ${id} (${url}) fenced: ${reason}`, requestId !== undefined ? { request_id: requestId } : undefined);
}

/**
 * The client left before the first byte: the engine connection is closed already
 * (attempt.ts), the booking freed; nobody reads this answer. Not the worker's fault.
 */
function clientGone(id: WorkerId, d: ForwardDeps): Response {
  d.metrics.requests.inc([String(id), "client_cancelled"]);
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
): Response {
  const { worker, lease } = decision;
  const workerLabel = String(worker.workerId);
  const headers = clientResponseHeaders(res.headers, workerLabel, worker.dpRank, decision.overlapBlocks);
  const init = { status: res.status, statusText: res.statusText, headers };
  // A non-streamed answer starts (headers) only once the engine has computed the prompt:
  // its prefill load is gone now, not when the whole answer has arrived (issue 13).
  if (!isEventStream(res.headers)) lease.prefillDone();
  // A 5xx the engine answered counts against the worker; its body may hold the engine's
  // internals (URLs, stack traces), so it goes to the log and the client gets the worker id.
  if (res.status >= 500) {
    obs?.answered(res.status, undefined, undefined);
    return engineServerError(res, first, reader, decision, d, obs?.id);
  }
  if (!reader || !first || first.done || first.value === undefined) {
    obs?.answered(res.status, undefined, undefined);
    lease.free();
    d.report?.(worker.workerId, undefined);
    d.metrics.requests.inc([workerLabel, String(res.status)]);
    return new Response(null, init);
  }
  if (reader.drained === true) {
    // The whole answer is already here (a non-streamed answer, or a fast engine): the
    // engine is done with the request, so count its tokens, release the booking and
    // answer the bytes at once, without a stream.
    const counter = new SseDataCounter();
    counter.push(first.value);
    counter.finish();
    if (counter.events > 0) lease.outputTokens(counter.events);
    obs?.answered(res.status, first.value, isEventStream(res.headers) ? counter.events : undefined);
    lease.free();
    d.report?.(worker.workerId, undefined);
    d.metrics.requests.inc([workerLabel, String(res.status)]);
    return new Response(first.value, init);
  }
  const idleMs = d.deadlines?.streamIdleMs ?? 0;
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
      if (how === "timeout") d.metrics.deadlineMisses.inc([workerLabel, "stream_idle"]);
      if (how !== "cancelled") d.report?.(worker.workerId, STREAM_FAILURE[how]);
      d.metrics.requests.inc([workerLabel, how === "done" ? String(res.status) : STREAM_END_LABEL[how]]);
    },
  }, d.directStreams, { idleMs, sse });
  return new Response(body, init);
}

/** Bytes of an engine's 5xx answer kept for the log. */
const ENGINE_ERROR_LOG_BYTES = 1024;

/**
 * The engine answered 5xx (a non-retryable status, or the last worker's 502/503/504): the
 * client gets the same status in OpenAI's shape naming the worker id; the engine's own
 * answer (which may name internal hosts or paths) is logged, never forwarded (issue 12).
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
  d.report?.(worker.workerId, `HTTP ${res.status}`);
  d.metrics.requests.inc([id, String(res.status)]);
  d.warn?.(`worker ${id} answered HTTP ${res.status}: ${JSON.stringify(text)}`, requestId !== undefined ? { request_id: requestId } : undefined);
  const answer = errorResponse(res.status, "upstream_error", `worker ${id} answered HTTP ${res.status} (the router's log has its answer)`);
  answer.headers.set(HEADER_WORKER, id);
  answer.headers.set(HEADER_DP_RANK, String(worker.dpRank));
  answer.headers.set(HEADER_OVERLAP, String(decision.overlapBlocks));
  return answer;
}

/** What a stream's end says about the worker (done: its status decides). */
const STREAM_FAILURE: Partial<Record<StreamEnd, string>> = { error: "stream cut mid-answer", timeout: "stream idle deadline missed" };
/** requests_total status label of a stream that did not end well. */
const STREAM_END_LABEL: Record<StreamEnd, string> = { done: "200", error: "stream_error", timeout: "stream_timeout", cancelled: "client_cancelled" };

/** Is the answer an SSE stream? (headers: flat [name, value, ...] as the upstream gives them) */
function isEventStream(h: UpstreamResponse["headers"]): boolean {
  for (let i = 0; i + 1 < h.length; i += 2) {
    if (h[i]!.toLowerCase() === "content-type") return h[i + 1]!.toLowerCase().startsWith("text/event-stream");
  }
  return false;
}
