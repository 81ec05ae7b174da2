/**
 * Disaggregated prefill/decode for the OpenAI completion routes (--disagg vllm|sglang): the
 * router pairs a prefill worker with a decode worker and speaks the engines' own P/D
 * protocol (vllm-protocol.ts, sglang-protocol.ts).
 *
 * 1. Conditional disaggregation (Dynamo's rule): the decode worker the scheduler would pick
 *    is looked up first (its booking released at once); when the prompt's uncached part
 *    there is under --disagg-min-prefill-tokens, it prefills locally (no prefill worker).
 * 2. The prefill worker is chosen by the same cost as every request (KV overlap from the
 *    prefill engines' own events + booked prefill load), among healthy prefill workers.
 * 3. vLLM: the prefill request first (one token, not streamed); a failure before its answer
 *    fences that worker and tries the next (up to --max-retries); then the decode request
 *    with the prefill answer's kv_transfer_params goes through forward() (decode worker by
 *    load and overlap, its retries, deadlines and streaming as for any request).
 *    SGLang: the same body, with a fresh bootstrap room, to both at once; the decode answer
 *    goes to the client. A prefill that fails before the decode answer's first byte gives the
 *    pair up (the decode request is closed) and both go again with the next prefill worker and
 *    a new room; after that byte the decode engine must cope.
 * 4. No healthy prefill worker, or every one failed: the decode worker prefills locally
 *    (counted in switchyard_disagg_requests_total{path="fallback_*"}).
 * Both bookings are released on every path: the prefill's here (finally), the decode's by forward().
 */
import { RouterError } from "../../core/errors.ts";
import type { WorkerId } from "../../core/ids.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import type { Counter } from "../../observe/registry.ts";
import { concatBytes } from "../body.ts";
import type { FleetView } from "../deps.ts";
import { attemptUpstream } from "../proxy/attempt.ts";
import { NO_DEADLINES } from "../proxy/deadlines.ts";
import { forward, type ForwardDeps, type ForwardInput } from "../proxy/forward.ts";
import { upstreamRequestHeaders } from "../proxy/headers.ts";
import type { UpstreamBody, UpstreamCall } from "../proxy/upstream.ts";
import type { PromptHashes, RouteDecision } from "../../router/index.ts";
import { modelRoute } from "../prompt-route/model-routing.ts";
import type { Dispatch } from "../routes/dispatch.ts";
import type { DisaggOptions } from "./options.ts";
import { bootstrapHostOf, bootstrapRoom, sglangBody } from "./sglang-protocol.ts";
import { kvTransferParamsOf, vllmDecodeBody, vllmPrefillBody } from "./vllm-protocol.ts";

/** Header naming the prefill worker of a disaggregated answer (absent: prefilled on the decode worker). */
export const HEADER_PREFILL_WORKER = "x-switchyard-prefill-worker";
/**
 * The largest prefill answer kept (vLLM: one token and the hand-off parameters, but prompt
 * logprobs of a long prompt can make it megabytes). Larger: not the engine's fault, so no fence;
 * the decode engine prefills locally. SGLang's prefill answers are read and dropped, never kept.
 */
const MAX_PREFILL_ANSWER_BYTES = 16 << 20;

class AnswerTooLarge extends Error {}

export type DisaggPath = "disaggregated" | "local_short_prompt" | "fallback_no_prefill_worker" | "fallback_prefill_failed" | "aggregated_lora";

export interface DisaggDispatch {
  (input: ForwardInput, json: Readonly<Record<string, unknown>>, model: unknown): Promise<Response>;
}

const encoder = new TextEncoder();

/** The fields of both P/D protocols; only the router sets them under --disagg. */
const PD_FIELDS = ["kv_transfer_params", "bootstrap_host", "bootstrap_port", "bootstrap_room"] as const;

function withoutPdFields(json: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...json };
  for (const f of PD_FIELDS) delete out[f];
  return out;
}

/** Both halves go through the proxy path's deps (`fd`); `fleet` says which workers serve the model. */
export function createDisaggDispatch(fleet: FleetView, fd: ForwardDeps, aggregated: Dispatch, o: DisaggOptions): DisaggDispatch {
  const { metrics, log } = fd.observe;
  const observers = fd.observe.requests;
  const { fence, report } = fd.outcomes;
  const up = fd.upstream;
  const { requests, prefillFailures } = disaggCounters(metrics);
  const call: UpstreamCall = up.call;
  const rand = o.randomU32 ?? (() => crypto.getRandomValues(new Uint32Array(1))[0]!);

  const within = (a: ReadonlySet<WorkerId> | undefined, b: ReadonlySet<WorkerId>): ReadonlySet<WorkerId> =>
    a === undefined ? b : new Set([...b].filter((w) => a.has(w)));

  /**
   * The decode worker prefills the whole prompt itself: an ordinary request among decode
   * workers, without any P/D field a client put in its body (those are the router's to set:
   * a client's `kv_transfer_params` or `bootstrap_host` would make an engine pull from where
   * the client says).
   */
  const local = (input: ForwardInput, json: Readonly<Record<string, unknown>>, decode: ReadonlySet<WorkerId>, path: DisaggPath): Promise<Response> => {
    requests.inc([path]);
    const body = PD_FIELDS.some((f) => f in json) ? encoder.encode(JSON.stringify(withoutPdFields(json))) : input.body;
    return forward({ ...input, body, allowedWorkerIds: decode }, fd);
  };

  /** Uncached tokens on the decode worker the scheduler picks now (its booking released at once). */
  const uncachedOnDecode = async (input: ForwardInput, prepared: PromptHashes, decode: ReadonlySet<WorkerId>, blockSize: number): Promise<number> => {
    try {
      const est = await fd.routing.route({
        tokens: input.tokens, prepared, approximate: input.approximate, requestId: fd.routing.nextRequestId(),
        loraName: input.loraName, allowedWorkerIds: decode,
      });
      est.lease.free();
      return input.tokens.length - est.overlapBlocks * blockSize;
    } catch {
      return input.tokens.length; // every decode worker busy: decide as for a cold prompt
    }
  };

  const failPrefill = (decision: RouteDecision, url: string, reason: string): void => {
    const id = decision.worker.workerId;
    fence(id, reason);
    report?.(id, reason);
    metrics.upstreamFailures.inc([String(id)]);
    prefillFailures.inc([String(id)]);
    log.warn(`disagg: prefill worker ${id} (${url}) failed before its answer: ${reason}`);
  };

  /** Route a prefill worker among `pool` minus `exclude`; undefined when none is left. */
  const routePrefill = async (input: ForwardInput, prepared: PromptHashes, pool: ReadonlySet<WorkerId>, exclude: ReadonlySet<WorkerId>) => {
    try {
      return await fd.routing.route({
        tokens: input.tokens, prepared, approximate: input.approximate, requestId: fd.routing.nextRequestId(),
        loraName: input.loraName, allowedWorkerIds: pool, exclude,
      });
    } catch (e) {
      if (e instanceof RouterError) return undefined;
      throw e;
    }
  };

  /**
   * One prefill request to one worker, read to its end. Resolves the parsed answer, or
   * `failed` (retry elsewhere), `client_gone`, or a client error to pass on as it is.
   */
  type PrefillResult =
    | { kind: "ok"; json: unknown }
    | { kind: "failed"; reason: string }
    /** Not the engine's fault (no fence): the answer is larger than MAX_PREFILL_ANSWER_BYTES. */
    | { kind: "too_large" }
    | { kind: "client_gone" }
    | { kind: "client_error"; status: number; body: Uint8Array; headers: readonly string[] };
  /**
   * `keep`: the answer is parsed (vLLM's, for its kv_transfer_params), else read and dropped.
   * `firstTokenIsAnswer`: the answer comes whole once the engine has sampled its one token (vLLM's
   * prefill request: one token, not streamed), so its arrival is this worker's first token, the
   * TTFT predictor's sample of its prefill speed. SGLang's prefill request is the client's, maybe
   * streamed, whose headers can come before any token: no sample.
   */
  const prefillOnce = async (input: ForwardInput, decision: RouteDecision, url: string, body: Uint8Array, o: { keep: boolean; firstTokenIsAnswer: boolean }): Promise<PrefillResult> => {
    const keep = o.keep;
    const a = await attemptUpstream({
      call, baseUrl: url, path: input.path, headers: upstreamRequestHeaders(input.request.headers, decision.worker.dpRank, input.upstreamAuthorization), body,
      clientSignal: input.request.signal, deadlines: up.deadlines ?? NO_DEADLINES, stream: false, last: false,
    });
    if (a.kind === "client_gone") return a;
    if (a.kind === "failed") return a;
    if (a.kind === "worker_down") return { kind: "failed", reason: a.reason }; // not watched here: cannot happen
    if (o.firstTokenIsAnswer && a.res.status < 300) decision.lease.firstToken();
    else decision.lease.prefillDone();
    let bytes: Uint8Array;
    try {
      bytes = await readAll(a.first?.value, a.first?.done === true, a.reader, keep ? MAX_PREFILL_ANSWER_BYTES : Infinity, keep);
    } catch (e) {
      if (e instanceof AnswerTooLarge) return { kind: "too_large" };
      return { kind: "failed", reason: `prefill answer unreadable: ${(e as Error).message}` };
    }
    if (a.res.status >= 500) return { kind: "failed", reason: `HTTP ${a.res.status}` };
    if (a.res.status >= 400) return { kind: "client_error", status: a.res.status, body: bytes, headers: a.res.headers };
    if (!keep) return { kind: "ok", json: undefined };
    try {
      return { kind: "ok", json: JSON.parse(new TextDecoder().decode(bytes)) };
    } catch {
      return { kind: "failed", reason: "prefill answer is not JSON" };
    }
  };

  const vllm = async (input: ForwardInput, json: Readonly<Record<string, unknown>>, prepared: PromptHashes, prefill: ReadonlySet<WorkerId>, decode: ReadonlySet<WorkerId>): Promise<Response> => {
    const body = encoder.encode(JSON.stringify(vllmPrefillBody(withoutPdFields(json))));
    const exclude = new Set<WorkerId>();
    for (let attempt = 0; attempt <= up.maxRetries; attempt++) {
      const decision = await routePrefill(input, prepared, prefill, exclude);
      if (decision === undefined) break;
      const rec = fleet.registry.get(decision.worker.workerId);
      let r: PrefillResult;
      try {
        r = rec === undefined ? { kind: "failed", reason: "worker removed" } : await prefillOnce(input, decision, rec.url, body, { keep: true, firstTokenIsAnswer: true });
      } finally {
        decision.lease.free();
      }
      if (r.kind === "client_gone") {
        metrics.requests.inc([String(decision.worker.workerId), "client_cancelled"]);
        return new Response(null, { status: 499 });
      }
      if (r.kind === "client_error") return passOn(r);
      if (r.kind === "too_large") {
        log.warn(`disagg: prefill answer of worker ${decision.worker.workerId} is larger than ${MAX_PREFILL_ANSWER_BYTES} bytes; prefilling on the decode worker`);
        break;
      }
      if (r.kind === "failed") {
        exclude.add(decision.worker.workerId);
        if (rec !== undefined) failPrefill(decision, rec.url, r.reason);
        continue;
      }
      report?.(decision.worker.workerId, undefined);
      requests.inc(["disaggregated"]);
      observers?.of(input.request)?.prefillPair(decision.worker.workerId);
      const params = kvTransferParamsOf(r.json);
      const decodeBody = vllmDecodeBody(withoutPdFields(json), params);
      const res = await forward({ ...input, body: encoder.encode(JSON.stringify(decodeBody)), allowedWorkerIds: decode, prefilledElsewhere: true }, fd);
      return withPrefillWorker(res, decision.worker.workerId);
    }
    return local(input, json, decode, exclude.size > 0 || prefill.size > 0 ? "fallback_prefill_failed" : "fallback_no_prefill_worker");
  };

  const sglang = async (input: ForwardInput, json: Readonly<Record<string, unknown>>, prepared: PromptHashes, prefill: ReadonlySet<WorkerId>, decode: ReadonlySet<WorkerId>): Promise<Response> => {
    // The decode half goes out under its own signal (the client's, or this pair given up),
    // so the server's idle-timeout lift is done here, on the client's request, once.
    up.keepOpen?.(input.request);
    const decodeDeps: ForwardDeps = { ...fd, upstream: { ...up, keepOpen: undefined } };
    const tried = new Set<WorkerId>();
    for (let attempt = 0; attempt <= up.maxRetries; attempt++) {
      const decision = await routePrefill(input, prepared, prefill, tried);
      if (decision === undefined) break;
      const id = decision.worker.workerId;
      const rec = fleet.registry.get(id);
      if (rec === undefined) {
        decision.lease.free();
        tried.add(id);
        continue;
      }
      const bootstrap = { host: bootstrapHostOf(rec.url), port: o.roles.bootstrapPortOf(rec.url) ?? o.defaultBootstrapPort, room: bootstrapRoom(rand) };
      const body = encoder.encode(JSON.stringify(sglangBody(withoutPdFields(json), bootstrap)));
      // Both at once, as mini_lb does. The prefill answer is read and dropped; its booking is
      // released whatever happens to it. A prefill that fails before the decode answer's first
      // byte gives the pair up (the decode engine is waiting on that room): both are tried
      // again with the next prefill worker and a new room. After that byte the decode engine
      // must cope (the simulated one prefills itself).
      const pair = new AbortController();
      let decodeAnswered = false;
      const prefillDone = prefillOnce(input, decision, rec.url, body, { keep: false, firstTokenIsAnswer: false })
        .then((r) => {
          if (r.kind === "failed") {
            failPrefill(decision, rec.url, r.reason);
            if (!decodeAnswered) pair.abort();
          } else if (r.kind === "ok") report?.(id, undefined);
        })
        .catch((e) => log.warn(`disagg: prefill worker ${id}: ${(e as Error).message}`))
        .finally(() => decision.lease.free());
      void prefillDone;
      const signal = AbortSignal.any([input.request.signal, pair.signal]);
      const request = new Request(input.request.url, { method: "POST", headers: input.request.headers, signal });
      observers?.alias(input.request, request);
      observers?.of(input.request)?.prefillPair(id);
      const res = await forward({ ...input, request, body, allowedWorkerIds: decode, prefilledElsewhere: true }, decodeDeps);
      decodeAnswered = true;
      if (pair.signal.aborted && !input.request.signal.aborted && res.status === 499) {
        tried.add(id);
        continue;
      }
      requests.inc(["disaggregated"]);
      return withPrefillWorker(res, id);
    }
    return local(input, json, decode, tried.size > 0 ? "fallback_prefill_failed" : "fallback_no_prefill_worker");
  };

  return async (input, json, model) => {
    const route = modelRoute(model, fleet);
    // Adapters are placed by the LoRA loader on aggregated workers; their requests are not split.
    if (route.kind === "lora") {
      requests.inc(["aggregated_lora"]);
      return aggregated(input, model);
    }
    const allowed = route.kind === "workers" ? route.workerIds : undefined;
    const pools = o.roles.pools(fleet.registry);
    const prefill = within(allowed, pools.prefill);
    const decode = within(input.allowedWorkerIds, within(allowed, pools.decode));
    const routed: ForwardInput = { ...input, loraName: route.kind === "workers" ? route.loraName : input.loraName };
    if (decode.size === 0) throw new RouterError("no_endpoints", "no healthy decode worker serves this request (--disagg: prefill workers only prefill)");
    const prepared = fd.routing.prepare(routed.tokens, routed.loraName);
    const blockSize = o.blockSize;
    if ((await uncachedOnDecode(routed, prepared, decode, blockSize)) < o.minPrefillTokens) return local(routed, json, decode, "local_short_prompt");
    if (prefill.size === 0) return local(routed, json, decode, "fallback_no_prefill_worker");
    return o.protocol === "vllm" ? vllm(routed, json, prepared, prefill, decode) : sglang(routed, json, prepared, prefill, decode);
  };
}

const countersOf = new WeakMap<RouterMetrics, { requests: Counter; prefillFailures: Counter }>();

/** The two disagg counters, registered once per metrics registry (the app builds its handlers twice). */
function disaggCounters(m: RouterMetrics): { requests: Counter; prefillFailures: Counter } {
  let c = countersOf.get(m);
  if (c === undefined) {
    c = {
      requests: m.registry.counter(
        "switchyard_disagg_requests_total",
        "Completion requests under --disagg, by path (disaggregated|local_short_prompt|fallback_no_prefill_worker|fallback_prefill_failed|aggregated_lora)",
        ["path"],
      ),
      prefillFailures: m.registry.counter("switchyard_disagg_prefill_failures_total", "Prefill requests that failed before their answer, by prefill worker", ["worker"]),
    };
    countersOf.set(m, c);
  }
  return c;
}

function withPrefillWorker(res: Response, id: WorkerId): Response {
  try {
    res.headers.set(HEADER_PREFILL_WORKER, String(id));
  } catch {
    // immutable headers (a Response made elsewhere): the answer goes out without the hint
  }
  return res;
}

function passOn(r: { status: number; body: Uint8Array; headers: readonly string[] }): Response {
  const headers = new Headers();
  for (let i = 0; i + 1 < r.headers.length; i += 2) {
    const name = r.headers[i]!;
    if (name === "content-type") headers.set(name, r.headers[i + 1]!);
  }
  return new Response(r.body, { status: r.status, headers });
}

/** The whole body (first chunk already read), at most `max` bytes; `keep` false: read to the end and drop it. */
async function readAll(first: Uint8Array | undefined, done: boolean, reader: UpstreamBody | undefined, max: number, keep = true): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  const add = (c: Uint8Array) => {
    size += c.length;
    if (size > max) throw new AnswerTooLarge(`longer than ${max} bytes`);
    if (keep) parts.push(c);
  };
  try {
    if (first !== undefined) add(first);
    while (!done && reader !== undefined) {
      const r = await reader.read();
      if (r.done) break;
      if (r.value !== undefined) add(r.value);
    }
  } catch (e) {
    // Too large or broken: close the engine connection instead of leaving the rest unread.
    void reader?.cancel().catch(() => {});
    throw e;
  }
  if (!keep) return new Uint8Array(0);
  return concatBytes(parts, size);
}
