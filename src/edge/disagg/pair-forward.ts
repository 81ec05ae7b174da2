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
 * Both bookings are released on every path, each by its settlement (proxy/settlement.ts): the
 * prefill's here, the decode's in forward().
 */
import { RouterError } from "../../core/errors.ts";
import { KV_STEERING_FIELDS } from "../../protect/kv-steering.ts";
import type { WorkerId } from "../../core/ids.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import type { Counter } from "../../observe/registry.ts";
import type { FleetView } from "../deps.ts";
import { forward, promptHashes, type ForwardDeps, type ForwardInput } from "../proxy/forward.ts";
import { abandon, Settlement } from "../proxy/settlement.ts";
import type { PromptHashes, RouteDecision } from "../../router/index.ts";
import { modelRoute } from "../prompt-route/model-routing.ts";
import type { ModelForward } from "../proxy/model-forward.ts";
import type { DisaggOptions } from "./options.ts";
import { MAX_PREFILL_ANSWER_BYTES, prefillOnce, type PrefillResult } from "./prefill-call.ts";
import { bootstrapHostOf, bootstrapRoom, sglangBody } from "./sglang-protocol.ts";
import { kvTransferParamsOf, vllmDecodeBody, vllmPrefillBody } from "./vllm-protocol.ts";

/** Header naming the prefill worker of a disaggregated answer (absent: prefilled on the decode worker). */
export const HEADER_PREFILL_WORKER = "x-switchyard-prefill-worker";

export type DisaggPath =
  | "disaggregated"
  | "local_short_prompt"
  | "fallback_no_prefill_worker"
  | "fallback_prefill_failed"
  | "aggregated_lora";

export type PairForward = (
  input: ForwardInput,
  json: Readonly<Record<string, unknown>>,
  model: string | undefined,
) => Promise<Response>;

const encoder = new TextEncoder();

/**
 * The fields of both P/D protocols (and every other KV-steering field): only the router sets
 * them under --disagg, also where --trust-kv-transfer-params lets a client's through the edge.
 */
const PD_FIELDS = KV_STEERING_FIELDS;

function withoutPdFields(json: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...json };
  for (const f of PD_FIELDS) delete out[f];
  return out;
}

function within(
  a: ReadonlySet<WorkerId> | undefined,
  b: ReadonlySet<WorkerId>,
): ReadonlySet<WorkerId> {
  return a === undefined ? b : new Set([...b].filter((w) => a.has(w)));
}

/** What every pair of one app shares. */
interface Pairing {
  readonly fleet: FleetView;
  /** Both halves go through the proxy path's deps. */
  readonly fd: ForwardDeps;
  readonly o: DisaggOptions;
  /** switchyard_disagg_requests_total by path. */
  readonly requests: Counter;
  /** A prefill half's settlement: it has no observation of its own (the request's is the decode half's). */
  readonly settle: (decision: RouteDecision) => Settlement;
  readonly rand: () => number;
}

/** The request with its pools, routed on `model` (`fleet` says which workers serve it). */
export function createPairForward(
  fleet: FleetView,
  fd: ForwardDeps,
  aggregated: ModelForward,
  o: DisaggOptions,
): PairForward {
  const { metrics, log } = fd.observe;
  const { requests, prefillFailures } = disaggCounters(metrics);
  const p: Pairing = {
    fleet,
    fd,
    o,
    requests,
    settle: (decision) =>
      new Settlement(decision, { outcomes: fd.outcomes, metrics, log }, undefined, {
        failures: prefillFailures,
      }),
    rand: o.randomU32 ?? (() => crypto.getRandomValues(new Uint32Array(1))[0]!),
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
    const withLora: ForwardInput = {
      ...input,
      loraName: route.kind === "workers" ? route.loraName : input.loraName,
    };
    if (decode.size === 0)
      throw new RouterError(
        "no_endpoints",
        "no healthy decode worker serves this request (--disagg: prefill workers only prefill)",
      );
    // Hashed once: the estimate, every prefill try and the decode half (forward) reuse them.
    const prepared = promptHashes(withLora, fd.routing);
    const routed: ForwardInput = { ...withLora, prepared };
    if ((await uncachedOnDecode(p, routed, prepared, decode)) < o.minPrefillTokens)
      return local(p, routed, json, decode, "local_short_prompt");
    if (prefill.size === 0) return local(p, routed, json, decode, "fallback_no_prefill_worker");
    return o.protocol === "vllm"
      ? vllmPair(p, routed, json, prepared, prefill, decode)
      : sglangPair(p, routed, json, prepared, prefill, decode);
  };
}

/**
 * The decode worker prefills the whole prompt itself: an ordinary request among decode
 * workers, without any P/D field a client put in its body (those are the router's to set:
 * a client's `kv_transfer_params` or `bootstrap_host` would make an engine pull from where
 * the client says).
 */
function local(
  p: Pairing,
  input: ForwardInput,
  json: Readonly<Record<string, unknown>>,
  decode: ReadonlySet<WorkerId>,
  path: DisaggPath,
): Promise<Response> {
  p.requests.inc([path]);
  const body = PD_FIELDS.some((f) => f in json)
    ? encoder.encode(JSON.stringify(withoutPdFields(json)))
    : input.body;
  return forward({ ...input, body, allowedWorkerIds: decode }, p.fd);
}

/** Uncached tokens on the decode worker the scheduler picks now (its booking released at once). */
async function uncachedOnDecode(
  p: Pairing,
  input: ForwardInput,
  prepared: PromptHashes,
  decode: ReadonlySet<WorkerId>,
): Promise<number> {
  const { routing } = p.fd;
  try {
    const est = await routing.route({
      tokens: input.tokens,
      prepared,
      approximate: input.approximate,
      requestId: routing.nextRequestId(),
      loraName: input.loraName,
      allowedWorkerIds: decode,
    });
    abandon(est);
    return input.tokens.length - est.overlapBlocks * p.o.blockSize;
  } catch {
    return input.tokens.length; // every decode worker busy: decide as for a cold prompt
  }
}

/** Route a prefill worker among `pool` minus `exclude`; undefined when none is left. */
async function routePrefill(
  p: Pairing,
  input: ForwardInput,
  prepared: PromptHashes,
  pool: ReadonlySet<WorkerId>,
  exclude: ReadonlySet<WorkerId>,
): Promise<RouteDecision | undefined> {
  const { routing } = p.fd;
  try {
    return await routing.route({
      tokens: input.tokens,
      prepared,
      approximate: input.approximate,
      requestId: routing.nextRequestId(),
      loraName: input.loraName,
      allowedWorkerIds: pool,
      exclude,
    });
  } catch (e) {
    if (e instanceof RouterError) return undefined;
    throw e;
  }
}

/** vLLM: the prefill request first (retried on the next prefill worker), then the decode request with its kv_transfer_params. */
async function vllmPair(
  p: Pairing,
  input: ForwardInput,
  json: Readonly<Record<string, unknown>>,
  prepared: PromptHashes,
  prefill: ReadonlySet<WorkerId>,
  decode: ReadonlySet<WorkerId>,
): Promise<Response> {
  const { fd } = p;
  const body = encoder.encode(JSON.stringify(vllmPrefillBody(withoutPdFields(json))));
  const exclude = new Set<WorkerId>();
  for (let attempt = 0; attempt <= fd.upstream.maxRetries; attempt++) {
    const decision = await routePrefill(p, input, prepared, prefill, exclude);
    if (decision === undefined) break;
    const id = decision.worker.workerId;
    const s = p.settle(decision);
    const rec = p.fleet.registry.get(id);
    if (rec === undefined) {
      s.retry({ kind: "unlisted" });
      exclude.add(id);
      continue;
    }
    let r: PrefillResult;
    try {
      r = await prefillOnce(fd.upstream, input, s, rec.url, body, {
        keep: true,
        firstTokenIsAnswer: true,
      });
    } catch (e) {
      s.end({ how: "released" });
      throw e;
    }
    if (r.kind === "ok") {
      s.end({ how: "prefilled" });
      p.requests.inc(["disaggregated"]);
      fd.observe.requests?.of(input.request)?.prefillPair(id);
      const decodeBody = vllmDecodeBody(withoutPdFields(json), kvTransferParamsOf(r.json));
      const res = await forward(
        {
          ...input,
          body: encoder.encode(JSON.stringify(decodeBody)),
          allowedWorkerIds: decode,
          prefilledElsewhere: true,
        },
        fd,
      );
      return withPrefillWorker(res, id);
    }
    if (r.kind === "failed") {
      exclude.add(id);
      s.retry({ kind: "failed", reason: r.reason, routerLagged: r.routerLagged });
      continue;
    }
    s.end({ how: r.kind === "client_gone" ? "client_gone" : "released" });
    if (r.kind === "client_gone") return new Response(null, { status: 499 });
    if (r.kind === "client_error") return passOn(r);
    fd.observe.log.warn(
      `disagg: prefill answer of worker ${id} is larger than ${MAX_PREFILL_ANSWER_BYTES} bytes; prefilling on the decode worker`,
    );
    break;
  }
  return local(
    p,
    input,
    json,
    decode,
    exclude.size > 0 || prefill.size > 0 ? "fallback_prefill_failed" : "fallback_no_prefill_worker",
  );
}

/**
 * SGLang: the same body, with a fresh bootstrap room, to both at once, as mini_lb does; the
 * decode answer goes to the client. The prefill answer is read and dropped; its booking is
 * released whatever happens to it. A prefill that fails before the decode answer's first byte
 * gives the pair up (the decode engine is waiting on that room): both are tried again with the
 * next prefill worker and a new room. After that byte the decode engine must cope (the
 * simulated one prefills itself).
 */
async function sglangPair(
  p: Pairing,
  input: ForwardInput,
  json: Readonly<Record<string, unknown>>,
  prepared: PromptHashes,
  prefill: ReadonlySet<WorkerId>,
  decode: ReadonlySet<WorkerId>,
): Promise<Response> {
  const { fd, o } = p;
  const up = fd.upstream;
  const observers = fd.observe.requests;
  // The decode half goes out under its own signal (the client's, or this pair given up),
  // so the server's idle-timeout lift is done here, on the client's request, once.
  up.keepOpen?.(input.request);
  const decodeDeps: ForwardDeps = { ...fd, upstream: { ...up, keepOpen: undefined } };
  const tried = new Set<WorkerId>();
  for (let attempt = 0; attempt <= up.maxRetries; attempt++) {
    const decision = await routePrefill(p, input, prepared, prefill, tried);
    if (decision === undefined) break;
    const id = decision.worker.workerId;
    const s = p.settle(decision);
    const rec = p.fleet.registry.get(id);
    if (rec === undefined) {
      s.retry({ kind: "unlisted" });
      tried.add(id);
      continue;
    }
    const bootstrap = {
      host: bootstrapHostOf(rec.url),
      port: o.roles.bootstrapPortOf(rec.url) ?? o.defaultBootstrapPort,
      room: bootstrapRoom(p.rand),
    };
    const body = encoder.encode(JSON.stringify(sglangBody(withoutPdFields(json), bootstrap)));
    const pair = new AbortController();
    let decodeAnswered = false;
    void prefillOnce(up, input, s, rec.url, body, { keep: false, firstTokenIsAnswer: false })
      .then((r) => {
        if (r.kind === "failed") {
          s.retry({ kind: "failed", reason: r.reason, routerLagged: r.routerLagged });
          if (!decodeAnswered) pair.abort();
        } else if (r.kind === "ok") s.end({ how: "prefilled" });
      })
      .catch((e) => fd.observe.log.warn(`disagg: prefill worker ${id}: ${(e as Error).message}`))
      // Whatever else ended it (the client left, a client error): released, nothing said about the worker.
      .finally(() => s.end({ how: "released" }));
    const signal = AbortSignal.any([input.request.signal, pair.signal]);
    const request = new Request(input.request.url, {
      method: "POST",
      headers: input.request.headers,
      signal,
    });
    observers?.alias(input.request, request);
    observers?.of(input.request)?.prefillPair(id);
    const res = await forward(
      { ...input, request, body, allowedWorkerIds: decode, prefilledElsewhere: true },
      decodeDeps,
    );
    decodeAnswered = true;
    if (pair.signal.aborted && !input.request.signal.aborted && res.status === 499) {
      tried.add(id);
      continue;
    }
    p.requests.inc(["disaggregated"]);
    return withPrefillWorker(res, id);
  }
  return local(
    p,
    input,
    json,
    decode,
    tried.size > 0 ? "fallback_prefill_failed" : "fallback_no_prefill_worker",
  );
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
      prefillFailures: m.registry.counter(
        "switchyard_disagg_prefill_failures_total",
        "Prefill requests that failed before their answer, by prefill worker",
        ["worker"],
      ),
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
