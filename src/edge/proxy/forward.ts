/**
 * Forwards one OpenAI request to the worker the router chose and streams the answer back
 * unchanged. A failure before the first byte (connection refused, reset, a 502/503/504, a
 * body that breaks before its first chunk, a missed connect / first-byte / response
 * deadline: attempt.ts) frees the booking, fences that worker and routes again without it;
 * a 500 or 429 (retry-policy.ts) routes again without a fence, within the retry budget;
 * up to `maxRetries` times; so does the worker being taken out of rotation by anyone else
 * (health check, fence, ejection, removal) while the try waits for its first byte. Every
 * re-send, whatever its cause, draws from the one retry budget (past it: 502). After
 * the first byte, an upstream error reaches the client as a broken stream, a stall past the
 * idle deadline as an error event (observe-stream.ts). A client that leaves before the first
 * byte closes the engine call and blames no worker. Each decision gets a settlement
 * (settlement.ts): this file says what happened to the try, the settlement frees the booking,
 * reports the outcome for outlier ejection, counts and observes it, exactly once. Every way
 * out is a returned answer or a thrown error (retries, fail-over and a malformed answer
 * included); with the request's settlement (request-settlement.ts), each answer is marked as
 * made by its decision, whose settlement hands the answer's end on to the request.
 */
import { RouterError } from "../../core/errors.ts";
import { errorResponse } from "../errors.ts";
import type { WorkerId } from "../../core/ids.ts";
import type { PromptHashes, RouteDecision, RoutingService } from "../../router/index.ts";
import type { ForwardDeps, ForwardInput } from "./forward-input.ts";
import {
  clientResponseHeaders,
  HEADER_DP_RANK,
  HEADER_OVERLAP,
  HEADER_WORKER,
  upstreamRequestHeaders,
} from "./headers.ts";
import { observeStream } from "./observe-stream.ts";
import { SseDataCounter } from "./sse-counter.ts";
import { attemptUpstream, type AttemptResult, type FirstRead } from "./attempt.ts";
import { NO_DEADLINES } from "./deadlines.ts";
import type { UpstreamBody, UpstreamResponse } from "./upstream.ts";
import { fencesWorker, GATEWAY_RETRIES_ONLY, type RetryPolicy } from "./retry-policy.ts";
import { abandon, Settlement } from "./settlement.ts";
import { apiKindOf } from "./migration/continuation.ts";
import { movable, movingStream, type MovingContext } from "./migration/move.ts";
import type { RequestObservation } from "../../observe/request-observation.ts";
import { checkedBody, watchAnswer } from "./cache-check.ts";
import { kvRequestIdOf, withKvSource, type KvSource } from "./kv-source.ts";
import type { PreparedBody } from "./usage-injection.ts";

export type { ForwardDeps, ForwardInput } from "./forward-input.ts";

/**
 * The prompt's block hashes under `input`'s adapter: where a request's hashing starts, the one
 * place for every path. The first to route the request (forward, the LoRA placement, a P/D
 * pair) passes them on as `prepared`, and every try, the LoRA retry and both halves of a pair
 * reuse them.
 */
export function promptHashes(
  input: Pick<ForwardInput, "tokens" | "loraName" | "prepared">,
  routing: Pick<RoutingService, "prepare">,
): PromptHashes {
  return input.prepared ?? routing.prepare(input.tokens, input.loraName);
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
  const sinks = { outcomes: d.outcomes, metrics: d.observe.metrics, log: d.observe.log };
  // Two ids, two jobs. `requestId` is the router's own (its id in hex, a counter): it names the
  // booking in the load books, which load sync shares with other routers, so it must be unique
  // across the fleet and never come from a client. The client-facing one, obs.id, is the
  // client's x-request-id when it sent a valid one (else a UUID): echoed on the answer, sent to
  // the engine as x-request-id and written in the access line, so a client can quote it.
  const requestId = d.routing.nextRequestId();
  const exclude = new Set<WorkerId>();
  const failures: string[] = [];
  // Hashed once; every retry reuses them.
  const prepared = promptHashes(input, d.routing);
  const retry = d.upstream.retry ?? GATEWAY_RETRIES_ONLY;
  retry.budget?.request();
  // Usage asked for where the client did not (taken out of its stream again): cache-check.ts.
  const checked =
    d.cacheCheck !== undefined
      ? checkedBody(
          input.body,
          input.stream === true,
          input.approximate === true || input.prefilledElsewhere === true,
          input.streamOptions,
        )
      : undefined;
  const mayRetry = (worker: WorkerId) => (status: number) =>
    // A 500 or 429 from the last worker that could serve is the answer (a fencing status goes
    // on: it fences the worker, and the client gets upstream_failed when no worker is left).
    (fencesWorker(status) || anotherWorker(worker, exclude, input.allowedWorkerIds, d)) &&
    (retry.budget === undefined || retryAllowed(retry, d));
  const kind = apiKindOf(input.path);
  const moving: MovingContext | undefined =
    kind !== undefined && movable(input, d.upstream.migration)
      ? {
          input,
          d,
          kind,
          exclude,
          sinks,
          obs,
          options: d.upstream.migration,
          decide: () => decide(input, d, { requestId, prepared, exclude }, obs),
          budget: () => retry.budget === undefined || retryAllowed(retry, d),
        }
      : undefined;
  for (let attempt = 0; attempt <= d.upstream.maxRetries; attempt++) {
    let decision: RouteDecision;
    try {
      decision = await decide(input, d, { requestId, prepared, exclude }, obs);
    } catch (e) {
      // Every worker left failed this request: say so rather than "no workers".
      if (failures.length > 0) throw upstreamFailed(failures);
      throw e;
    }
    const s = new Settlement(decision, sinks, obs, undefined, input.settlement);
    const { worker } = decision;
    // The rank's removal events heard so far, read as it was chosen (no event is applied between).
    const removalsAtRoute =
      checked !== undefined ? d.cacheCheck!.removalsSeen(worker.workerId, worker.dpRank) : 0;
    const rec = d.registry.get(worker.workerId);
    if (!rec) {
      s.retry({ kind: "unlisted" });
      exclude.add(worker.workerId);
      continue;
    }
    const headers = upstreamRequestHeaders(
      input.request,
      worker.dpRank,
      input.upstreamAuthorization,
      d.upstream.forwarding,
    );
    // A planned pull names its source to the engine (kv-source.ts); the client's header never passes.
    const sent = withKvSource(
      checked?.body ?? input.body,
      headers,
      kvSourceOf(decision, d, requestId, attempt),
    );
    s.sent(headers, rec.url, input.path);
    const a = await attemptUpstream({
      call: d.upstream.call,
      baseUrl: rec.url,
      path: input.path,
      headers,
      body: sent.body,
      clientSignal: input.request.signal,
      deadlines: d.upstream.deadlines ?? NO_DEADLINES,
      stream: input.stream,
      last: attempt === d.upstream.maxRetries,
      retryOn: retry.statuses,
      mayRetry: mayRetry(worker.workerId),
      watchWorker: (onDown) => d.registry.onUnavailable(worker.workerId, onDown),
    });
    if (a.kind === "answer") {
      const answer = answerOf(a, s, input, d, checked, prepared, moving, removalsAtRoute);
      routedWorkers.set(answer, worker.workerId);
      input.settlement?.made(answer, s);
      return answer;
    }
    if (a.kind === "client_gone") {
      // The engine connection is closed already (attempt.ts); nobody reads this answer. Not the worker's fault.
      s.end({ how: "client_gone" });
      return new Response(null, { status: 499 });
    }
    // Out of rotation already (worker_down) or failed: the next worker gets the request.
    failures.push(`worker ${worker.workerId}`);
    exclude.add(worker.workerId);
    s.retry(a);
    // A retryable status took its retry from the budget already (mayRetry); every other
    // re-send (the worker left rotation, a connection failure, a missed deadline, a broken
    // first chunk) takes it here.
    if ((a.kind === "worker_down" || a.status === undefined) && !mayResend(attempt, retry, d))
      throw upstreamFailed(failures);
  }
  throw upstreamFailed(failures);
}

/** The engine's answer to this try, as the client gets it (through the cache check's tap when it watches this one). */
function answerOf(
  a: Extract<AttemptResult, { kind: "answer" }>,
  s: Settlement,
  input: ForwardInput,
  d: ForwardDeps,
  checked: PreparedBody | undefined,
  prepared: PromptHashes,
  moving: MovingContext | undefined,
  removalsAtRoute: number,
): Response {
  s.firstByte(a.res.status);
  try {
    if (a.res.status < 200 || a.res.status > 599)
      throw new Error(`status ${a.res.status} is not a final HTTP status`);
    let { first, reader } = a;
    if (
      checked !== undefined &&
      a.res.status < 300 &&
      reader !== undefined &&
      first !== undefined &&
      !first.done
    ) {
      const t = watchAnswer(
        d.cacheCheck!,
        s.decision,
        input.tokens.length,
        prepared.hashes,
        checked,
        isEventStream(a.res.headers),
        first.value,
        reader,
        (n) => s.engineUsage(n),
        removalsAtRoute,
      );
      first = { done: false, value: t.first };
      reader = t.reader as UpstreamBody;
    }
    return respond(a.res, first, reader, s, d, moving);
  } catch (e) {
    // Nothing reached the client: an answer the runtime cannot pass on (a status or a
    // header it refuses) is the worker's failure, not an unhandled 500 that would keep
    // the booking and the engine's stream.
    return malformedAnswer(a.reader, s, (e as Error).message);
  }
}

/** The peer a decision's plan pulls from, while it is still registered. */
function kvSourceOf(
  decision: RouteDecision,
  d: ForwardDeps,
  requestId: string,
  attempt: number,
): KvSource | undefined {
  const from = decision.kvPlan?.kind === "pull" ? decision.kvPlan.from : undefined;
  const url = from === undefined ? undefined : d.registry.get(from.workerId)?.url;
  return url === undefined ? undefined : { url, kvRequestId: kvRequestIdOf(requestId, attempt) };
}

/** This try's decision. Every candidate busy: the router waits for one in its admission queue (429 when full or too long). */
function decide(
  input: ForwardInput,
  d: ForwardDeps,
  t: {
    readonly requestId: string;
    readonly prepared: PromptHashes;
    readonly exclude: ReadonlySet<WorkerId>;
  },
  obs: RequestObservation | undefined,
): Promise<RouteDecision> {
  return d.routing.routeOrWait(
    {
      tokens: input.tokens,
      prepared: t.prepared,
      approximate: input.approximate,
      requestId: t.requestId,
      loraName: input.loraName,
      sessionId: input.sessionId,
      sessionControl: input.sessionControl,
      allowedWorkerIds: input.allowedWorkerIds,
      exclude: t.exclude,
      prefilledElsewhere: input.prefilledElsewhere,
    },
    // A decision made for a client that left meanwhile: nobody will use its booking.
    {
      priority: input.priority,
      signal: input.request.signal,
      abandon,
      share: input.share,
      eachAttempt: obs !== undefined ? (attempt) => obs.routing(attempt) : undefined,
    },
  );
}

/** Whether a healthy worker other than `id` and those tried may still take the request. */
function anotherWorker(
  id: WorkerId,
  tried: ReadonlySet<WorkerId>,
  allowed: ReadonlySet<WorkerId> | undefined,
  d: ForwardDeps,
): boolean {
  for (const w of d.registry.healthyIds()) {
    if (w !== id && !tried.has(w) && (allowed === undefined || allowed.has(w))) return true;
  }
  return false;
}

/**
 * Whether the request may be sent again after a try that reached a worker and gave no answer
 * (the worker left rotation, a connection failure, a missed deadline): every re-send draws
 * from the one retry budget, so ejections and removals during a burst of failures cannot
 * multiply the engines' load past it. The last try takes nothing (no re-send follows).
 */
function mayResend(attempt: number, retry: RetryPolicy, d: ForwardDeps): boolean {
  if (attempt >= d.upstream.maxRetries || retry.budget === undefined) return true;
  return retryAllowed(retry, d);
}

/** A retry the budget refused is counted, and the engine's answer goes to the client. */
function retryAllowed(retry: RetryPolicy, d: ForwardDeps): boolean {
  if (retry.budget!.tryRetry()) return true;
  d.observe.metrics.retryBudgetExhausted.inc([]);
  return false;
}

function upstreamFailed(failures: readonly string[]): RouterError {
  return new RouterError(
    "upstream_failed",
    `no worker could serve the request (tried ${failures.join(", ")}; the router's log has the reasons)`,
  );
}

function respond(
  res: UpstreamResponse,
  first: FirstRead | undefined,
  reader: UpstreamBody | undefined,
  s: Settlement,
  d: ForwardDeps,
  /** The stream may move to another worker when its engine fails (migration/); undefined: it may not. */
  moving: MovingContext | undefined,
): Response {
  const { worker } = s.decision;
  const headers = clientResponseHeaders(
    res.headers,
    String(worker.workerId),
    worker.dpRank,
    s.decision.overlapBlocks,
  );
  const init = { status: res.status, statusText: res.statusText, headers };
  const sse = isEventStream(res.headers);
  // A non-streamed answer starts (headers) only once the engine has computed the prompt:
  // its prefill load is gone now, not when the whole answer has arrived.
  if (!sse) s.prefillDone();
  // A streamed answer's first data event is its first token: the TTFT the router learns speeds from.
  else if (
    res.status < 300 &&
    first?.value !== undefined &&
    new SseDataCounter().push(first.value) > 0
  )
    s.firstToken();
  // A 5xx the engine answered counts against the worker; its body may hold the engine's
  // internals (URLs, stack traces), so it goes to the log and the client gets the worker id.
  if (res.status >= 500) return engineServerError(res, first, reader, s);
  if (!reader || !first || first.done || first.value === undefined) {
    const answer = new Response(null, init); // first: a refused head settles nothing twice
    s.end({ how: "whole", status: res.status });
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
    s.tokens(counter.tokens);
    s.end({
      how: "whole",
      status: res.status,
      body: first.value,
      sseEvents: sse ? counter.tokens : undefined,
    });
    return answer;
  }
  const idleMs = d.upstream.deadlines?.streamIdleMs ?? 0;
  if (moving !== undefined && sse && res.status === 200) {
    const m = movingStream(moving, first.value, reader, s, res.status);
    return new Response(
      observeStream(m.reader.takeFirst(), m.reader, m.hooks, d.upstream.directStreams, {
        idleMs,
        sse,
      }),
      init,
    );
  }
  const body = observeStream(
    first.value,
    reader,
    s.stream(res.status, sse),
    d.upstream.directStreams,
    { idleMs, sse },
  );
  return new Response(body, init);
}

/**
 * The engine's answer cannot be given to the client as it is: 502 naming the worker, the
 * engine connection closed, the settlement counting a failure against the worker.
 */
function malformedAnswer(reader: UpstreamBody | undefined, s: Settlement, why: string): Response {
  const id = String(s.workerId);
  void reader?.cancel().catch(() => {});
  s.end({ how: "malformed", why });
  const answer = errorResponse(
    502,
    "upstream_error",
    `worker ${id} sent a malformed answer (the router's log has the details)`,
  );
  answer.headers.set(HEADER_WORKER, id);
  return answer;
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
  first: FirstRead | undefined,
  reader: UpstreamBody | undefined,
  s: Settlement,
): Response {
  const { worker, overlapBlocks } = s.decision;
  const id = String(worker.workerId);
  const text =
    first?.value !== undefined
      ? new TextDecoder().decode(first.value.subarray(0, ENGINE_ERROR_LOG_BYTES))
      : "";
  if (reader && first !== undefined && !first.done && reader.drained !== true)
    void reader.cancel().catch(() => {});
  s.end({ how: "engine_error", status: res.status, answer: text });
  const answer = errorResponse(
    res.status,
    "upstream_error",
    `worker ${id} answered HTTP ${res.status} (the router's log has its answer)`,
  );
  answer.headers.set(HEADER_WORKER, id);
  answer.headers.set(HEADER_DP_RANK, String(worker.dpRank));
  answer.headers.set(HEADER_OVERLAP, String(overlapBlocks));
  return answer;
}

/** Is the answer an SSE stream? (headers: flat [name, value, ...] as the upstream gives them) */
function isEventStream(h: UpstreamResponse["headers"]): boolean {
  for (let i = 0; i + 1 < h.length; i += 2) {
    if (h[i]!.toLowerCase() === "content-type")
      return h[i + 1]!.toLowerCase().startsWith("text/event-stream");
  }
  return false;
}
