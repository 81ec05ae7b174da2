/**
 * The way out of one routing decision: its booking, the outcome the worker's health hears,
 * the requests_total line and the request's observation, settled by one object made with the
 * decision. The proxy (forward.ts), the stream it passes on (observe-stream.ts, through
 * `stream()`) and the prefill half of a P/D pair (disagg/pair-forward.ts) say what
 * happened; this file alone decides which sinks that touches. Every call is safe to repeat:
 * `retry` and `end` are the two ways out and only the first of them counts, so the booking
 * is freed and the answer counted exactly once, whatever ends the request. A decision made for
 * a client's request hands its answer's end to that request's settlement (request-settlement.ts),
 * with what the client got counted on the way, for the charges that span the whole request.
 *
 * What it does not do: choose the next worker, or count the booking's tokens (the caller
 * passes the count it has). The bytes it is shown for the request's charges are the client's,
 * counted as they pass (request-settlement.ts AnswerCount), never read ahead.
 */
import type { WorkerId } from "../../core/ids.ts";
import type { RequestObservation, StreamTrack } from "../../observe/request-observation.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import type { Counter } from "../../observe/registry.ts";
import type { RouteDecision } from "../../router/index.ts";
import type { Logger } from "../../core/logger.ts";
import type { WorkerOutcomes } from "../deps.ts";
import type { DeadlineKind } from "../../observe/names.ts";
import type { StreamEnd, StreamHooks } from "./observe-stream.ts";
import { countsAsFailure, fencesWorker } from "./retry-policy.ts";
import { AnswerCount, type DecisionAnswer, type RequestSettlement } from "./request-settlement.ts";

/** What a settlement writes to. */
export interface SettleDeps {
  readonly outcomes: WorkerOutcomes;
  readonly metrics: RouterMetrics;
  readonly log: Logger;
}

/** This worker's try ended before anything reached the client; another worker may get the request. */
export type AttemptFailure =
  /** The worker left the registry between the decision and the call: nothing was sent. */
  | { readonly kind: "unlisted" }
  /** Taken out of rotation by someone else while the try waited; whoever did it counted why. */
  | { readonly kind: "worker_down"; readonly reason: string }
  /** Refused, reset, a missed deadline (`deadline`), or a retryable answer (`status`). */
  | {
      readonly kind: "failed";
      readonly reason: string;
      readonly status?: number;
      readonly deadline?: DeadlineKind;
      /** The deadline ran out while the router's own event loop was held (deadlines.ts judgeDeadline): not the worker's fault. */
      readonly routerLagged?: boolean;
    };

/** How the answer to the client ended. */
export type SettleEnd =
  /** The client left before the first byte (the engine call is closed already). */
  | { readonly how: "client_gone" }
  /** A whole answer (no body, or all of it already here); `sseEvents`: its output tokens (sse-counter.ts) when it is SSE. */
  | {
      readonly how: "whole";
      readonly status: number;
      readonly body?: Uint8Array;
      readonly sseEvents?: number;
    }
  /** The engine answered 5xx: its own answer (`answer`) goes to the log, never to the client. */
  | { readonly how: "engine_error"; readonly status: number; readonly answer: string }
  /** The engine's answer cannot be passed on (a status or header the runtime refuses). */
  | { readonly how: "malformed"; readonly why: string }
  /** A streamed answer ended (observe-stream.ts); `tokens`: output tokens as its counter saw them. */
  | {
      readonly how: "stream";
      readonly end: StreamEnd;
      readonly tokens: number;
      readonly bytes: number;
    }
  /** A prefill half answered well. */
  | { readonly how: "prefilled" }
  /** Released, with nothing to say about the worker (a client error passed on, a prefill answer too large). */
  | { readonly how: "released" };

/** A prefill half of a P/D pair: its failures are also counted per prefill worker, and no client answer is counted. */
export interface PrefillHalf {
  readonly failures: Counter;
}

/** What a stream's end says about the worker (done: its status decides). */
const STREAM_FAILURE: Partial<Record<StreamEnd, string>> = {
  error: "stream cut mid-answer",
  timeout: "stream idle deadline missed",
};
/** requests_total status label of a stream that did not end well. */
const STREAM_END_LABEL: Record<StreamEnd, string> = {
  done: "200",
  error: "stream_error",
  timeout: "stream_timeout",
  client_timeout: "client_stalled",
  cancelled: "client_cancelled",
};

/** A decision made for a client that left meanwhile (or an estimate): nobody uses its booking. */
export function abandon(decision: RouteDecision): void {
  decision.lease.free();
}

export class Settlement {
  readonly decision: RouteDecision;
  readonly #d: SettleDeps;
  readonly #obs: RequestObservation | undefined;
  readonly #prefill: PrefillHalf | undefined;
  readonly #label: string;
  #url = "";
  #sentAt = 0;
  #status = 0;
  #track: StreamTrack | undefined;
  #settled = false;
  /** The client's request this decision answers, when something settles at its end (a tenant's charge). */
  readonly #request: RequestSettlement | undefined;
  /** The streamed answer's bytes counted for `#request`. */
  #count: AnswerCount | undefined;
  /** Output tokens from the engine's own usage, read by the cache check before it took that usage out of the client's stream. */
  #engineTokens: number | undefined;

  constructor(
    decision: RouteDecision,
    d: SettleDeps,
    obs: RequestObservation | undefined,
    prefill?: PrefillHalf,
    request?: RequestSettlement,
  ) {
    this.decision = decision;
    this.#d = d;
    this.#obs = obs;
    this.#prefill = prefill;
    this.#request = request;
    this.#label = String(decision.worker.workerId);
  }

  get workerId(): WorkerId {
    return this.decision.worker.workerId;
  }

  /** Whether `retry` or `end` ran. */
  get settled(): boolean {
    return this.#settled;
  }

  /** The call goes out to `url` with `headers` (the observation adds its request id and trace context). */
  sent(headers: Record<string, string>, url: string, path: string): void {
    this.#url = url;
    this.#obs?.decided(this.decision);
    this.#obs?.upstream(headers, url, path);
    this.#sentAt = performance.now();
  }

  /** The engine's head arrived. */
  firstByte(status: number): void {
    this.#d.metrics.firstByte.observe((performance.now() - this.#sentAt) / 1000);
    this.#obs?.firstByte(status);
  }

  /** The engine has computed the prompt (a whole answer's head): its prefill load goes. */
  prefillDone(): void {
    this.decision.lease.prefillDone();
  }

  /** The first token arrived: the TTFT the router learns speeds from, then the prefill is done. */
  firstToken(): void {
    this.decision.lease.firstToken();
  }

  /**
   * The engine's usage said `completionTokens`, and the client's stream will not carry it (the
   * router asked for it: edge/proxy/cache-check.ts): the counts below take it over the events
   * counted, as they would have had the usage reached the counter.
   */
  engineUsage(completionTokens: number): void {
    this.#engineTokens = completionTokens;
    this.tokens(completionTokens);
  }

  /** `total` output tokens so far (a running count; none yet: nothing to book). */
  tokens(total: number): void {
    if (this.#engineTokens !== undefined) total = this.#engineTokens;
    if (total <= 0 || this.#settled) return;
    this.decision.lease.outputTokens(total);
    this.#track?.tokens(total);
  }

  /**
   * The answer goes out as a stream (`sse`: its data events are its tokens): the hooks
   * observe-stream.ts calls, ending in `end({ how: "stream" })`.
   */
  stream(status: number, sse: boolean): StreamHooks {
    this.#status = status;
    const track = (this.#track = this.#obs?.streaming(status, sse));
    const count = (this.#count = this.#request !== undefined ? new AnswerCount() : undefined);
    const observed = track !== undefined && !sse ? track : undefined;
    return {
      onTokens: (n) => this.tokens(n),
      onChunk:
        count === undefined && observed === undefined
          ? undefined
          : (c) => {
              count?.push(c);
              observed?.chunk(c);
            },
      onTail: count !== undefined ? (c) => count.push(c) : undefined,
      onEnd: (end, tokens, bytes) => this.end({ how: "stream", end, tokens, bytes }),
    };
  }

  /**
   * The stream this try was passing on failed after its first byte and goes on on another worker
   * (migration/): this try ends as a failure of its worker (fenced when `fence`: the engine
   * connection broke; not reported at all when not `blame`: a planned move), and hands over the
   * stream's observation to the settlement that continues it. The client's request still knows
   * this settlement as the one that made its answer: `movedStreamEnded` tells it the end.
   */
  migrated(why: string, fence: boolean, blame = true): StreamTrack | undefined {
    if (this.#settled) return undefined;
    this.#settled = true;
    this.decision.lease.free();
    const id = this.workerId;
    if (fence) this.#d.outcomes.fence(id, why);
    // A planned move (the worker drains) says nothing about the worker.
    if (blame) this.#d.outcomes.report?.(id, why);
    this.#d.metrics.requests.inc([this.#label, "migrated"]);
    this.#d.log.warn(
      `worker ${id} (${this.#url}) failed mid-stream; the stream goes on elsewhere: ${why}`,
      this.#requestIdField(),
    );
    const track = this.#track;
    this.#track = undefined;
    return track;
  }

  /** This try continues a stream another try began (`track`: that stream's observation); it ends like any stream. */
  continues(status: number, track: StreamTrack | undefined): void {
    this.#status = status;
    this.#track = track;
  }

  /** A stream this settlement began and that moved is over: its request hears the answer (the bytes counted across every move). */
  movedStreamEnded(): void {
    this.#request?.decisionEnded(this, { status: this.#status, count: this.#count });
  }

  /** This try failed before anything reached the client: release it and say why. */
  retry(f: AttemptFailure): void {
    if (this.#settled) return;
    this.#settled = true;
    this.decision.lease.free();
    if (f.kind === "unlisted") return;
    const id = this.workerId;
    const { log, metrics } = this.#d;
    this.#obs?.attemptFailed(id, f.reason);
    if (f.kind === "worker_down") {
      log.warn(
        `worker ${id} (${this.#url}) left rotation before its first byte; trying another: ${f.reason}`,
        this.#requestIdField(),
      );
      return;
    }
    if (f.routerLagged === true) {
      if (f.deadline !== undefined) metrics.deadlinesExcused.inc([f.deadline]);
      // The router could not watch the engine for most of the wait: blaming the engine would
      // fence healthy engines one after another on a starved router, each re-send adding load.
      log.warn(
        `worker ${id} (${this.#url}) not fenced; trying another worker: ${f.reason}`,
        this.#requestIdField(),
      );
      return;
    }
    if (f.deadline !== undefined) metrics.deadlineMisses.inc([this.#label, f.deadline]);
    if (this.#prefill === undefined && f.status !== undefined && !fencesWorker(f.status)) {
      // Not fenced: one bad prompt must not fence the fleet; a server error counts towards ejection.
      if (countsAsFailure(f.status)) this.#d.outcomes.report?.(id, `HTTP ${f.status}`);
      metrics.upstreamFailures.inc([this.#label]);
      log.warn(
        `worker ${id} (${this.#url}) answered HTTP ${f.status} before anything reached the client; trying another worker`,
        this.#requestIdField(),
      );
      return;
    }
    const fenced = this.#d.outcomes.fence(id, f.reason) !== false;
    // After the fence: an ejection this failure causes is what /v1/workers shows as the reason.
    this.#d.outcomes.report?.(id, f.reason);
    metrics.upstreamFailures.inc([this.#label]);
    if (this.#prefill !== undefined) {
      this.#prefill.failures.inc([this.#label]);
      log.warn(`disagg: prefill worker ${id} (${this.#url}) failed before its answer: ${f.reason}`);
    } else {
      // The client sees worker ids only; the URL and the engine's answer go to the log.
      log.warn(
        `upstream failure before the first byte, worker ${id} (${this.#url}) ${fenced ? "fenced" : "not fenced (too many workers out of rotation: --max-fenced-percent)"}: ${f.reason}`,
        this.#requestIdField(),
      );
    }
  }

  /** The answer is over (or will never come): release, report, count and observe it, once; then tell the request. */
  end(e: SettleEnd): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#release(e);
    const answer = this.#request !== undefined ? this.#clientAnswer(e) : undefined;
    if (answer !== undefined) this.#request!.decisionEnded(this, answer);
  }

  /** What the client got from this decision, as the request's charges read it (a prefill half's end: nothing). */
  #clientAnswer(e: SettleEnd): DecisionAnswer | undefined {
    switch (e.how) {
      case "client_gone":
        return { status: 499 };
      case "whole": {
        if (e.body === undefined) return { status: e.status };
        const count = new AnswerCount();
        count.push(e.body);
        return { status: e.status, count };
      }
      // The client gets the router's own error body, which reports no usage.
      case "engine_error":
        return { status: e.status };
      case "malformed":
        return { status: 502 };
      case "stream":
        return { status: this.#status, count: this.#count };
      case "prefilled":
      case "released":
        return undefined;
    }
  }

  #release(e: SettleEnd): void {
    const id = this.workerId;
    const { outcomes, metrics, log } = this.#d;
    const obs = this.#obs;
    switch (e.how) {
      case "client_gone":
        this.decision.lease.free();
        obs?.clientGone();
        metrics.requests.inc([this.#label, "client_cancelled"]);
        return;
      case "whole":
        obs?.answered(
          e.status,
          e.body,
          e.sseEvents !== undefined ? (this.#engineTokens ?? e.sseEvents) : undefined,
        );
        this.decision.lease.free();
        outcomes.report?.(id, undefined);
        metrics.requests.inc([this.#label, String(e.status)]);
        return;
      case "engine_error":
        obs?.answered(e.status, undefined, undefined);
        this.decision.lease.free();
        outcomes.report?.(id, `HTTP ${e.status}`);
        metrics.requests.inc([this.#label, String(e.status)]);
        log.warn(
          `worker ${id} answered HTTP ${e.status}: ${JSON.stringify(e.answer)}`,
          this.#requestIdField(),
        );
        return;
      case "malformed":
        this.decision.lease.free();
        obs?.answered(502, undefined, undefined);
        outcomes.report?.(id, `malformed answer: ${e.why}`);
        metrics.upstreamFailures.inc([this.#label]);
        metrics.requests.inc([this.#label, "502"]);
        log.warn(
          `worker ${id} (${this.#url}) sent an answer that cannot be passed on: ${e.why}`,
          this.#requestIdField(),
        );
        return;
      case "stream": {
        this.#track?.end(e.end, this.#engineTokens ?? e.tokens, e.bytes);
        this.decision.lease.free();
        if (e.end === "timeout") metrics.deadlineMisses.inc([this.#label, "stream_idle"]);
        // A client that left or stopped reading says nothing about the worker.
        if (e.end !== "cancelled" && e.end !== "client_timeout")
          outcomes.report?.(id, STREAM_FAILURE[e.end]);
        metrics.requests.inc([
          this.#label,
          e.end === "done" ? String(this.#status) : STREAM_END_LABEL[e.end],
        ]);
        return;
      }
      case "prefilled":
        this.decision.lease.free();
        outcomes.report?.(id, undefined);
        return;
      case "released":
        this.decision.lease.free();
        return;
    }
  }

  /** A log line's field naming the client-facing request id, so it joins the access line. */
  #requestIdField(): Record<string, unknown> | undefined {
    const id = this.#obs?.id;
    return id !== undefined ? { request_id: id } : undefined;
  }
}
