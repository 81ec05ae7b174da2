/**
 * The HTTP edge of the simulated engine (Bun.serve): OpenAI completions/chat (streaming
 * and not), engine info, the KV recovery query, admin routes, LoRA, sessions, metrics.
 * Everything with logic lives in the modules it calls; this file only maps HTTP to them.
 *
 * @example
 * const m = await startMocker({ port: 0, kvBlocks: 1024 });
 * await fetch(`${m.url}/v1/completions`, { method: "POST", body: JSON.stringify({ prompt: "hi" }) });
 * await m.stop();
 */
import { Hono } from "hono";
import { isRouterError } from "../core/errors.ts";
import type { RouterEvent } from "../core/events.ts";
import type { WorkerId } from "../core/ids.ts";
import { stringifyBigint } from "../core/json.ts";
import { workerIdFromUrl } from "../core/worker-id.ts";
import { workerKvQueryResponseToWire } from "../protocol/kv-query-wire.ts";
import { type Clock, type GenerateRequest, type GenerateStart, MockEngine } from "./engine.ts";

type GenerateRequestOf = GenerateRequest & { readonly tokens: Uint32Array; readonly loraName?: string };
import { AbortedError } from "./fifo.ts";
import { renderMetrics } from "./metrics.ts";
import { completionResponse, errorBody, type ApiKind, type ResponseMeta, SseWriter } from "./openai.ts";
import { type MockerOptions, resolveMockerOptions } from "./options.ts";
import { nativeRoutes } from "./native-routes.ts";
import { EventPublisher } from "./publisher.ts";
import {
  dpRankValue,
  parseCompletionRequest,
  parseLoadLora,
  parseSessionClose,
  parseSessionOpen,
  parseUnloadLora,
  u64Param,
  type CompletionRequest,
} from "./requests.ts";
import { DEFAULT_SESSION_TIMEOUT_S } from "./sessions.ts";
import { byteTokenizer, loadMockerTokenizer, type MockerTokenizer } from "./tokenizer.ts";
import { computeBlockHashes } from "../core/block-hash.ts";
import { requireNativeLibrary } from "../transfer/native/library.ts";
import { parseDisaggDirective, type DisaggDirective } from "./disagg-request.ts";
import { engineBlockHashes } from "./engine-hash.ts";
import type { ImportedKv } from "./engine.ts";
import { KvHandoff, type ExportedKv } from "./kv-handoff.ts";

export interface StartMockerOptions extends MockerOptions {
  /** Where to report push failures and the like (default: stderr, rate-limited). */
  log?: (line: string) => void;
  /** Injected for tests (default: global fetch). */
  fetch?: typeof fetch;
}

export interface MockerHandle {
  /** Base URL, e.g. http://127.0.0.1:40123 (no trailing slash). */
  readonly url: string;
  readonly port: number;
  readonly workerId: WorkerId;
  /** The engine itself, for in-process tests and embedding. */
  readonly engine: MockEngine;
  /** Push every pending KV event to every router now (no-op without --router-url). */
  flushEvents(): Promise<void>;
  /**
   * Graceful shutdown: new requests are refused (503, so routers try another engine), GET
   * /health answers 503 "draining", requests in flight (streams included) get up to
   * `timeoutMs` to finish; then stop(). Resolves whether all finished.
   */
  drain(timeoutMs: number): Promise<boolean>;
  stop(): Promise<void>;
}

/** The router's header naming the dp rank it chose. */
export const DP_RANK_HEADER = "x-switchyard-dp-rank";
export const CACHED_TOKENS_HEADER = "x-mocker-cached-tokens";

const realClock: Clock = { now: () => performance.now(), sleep: (ms) => Bun.sleep(ms) };

const JSON_HEADERS = { "content-type": "application/json" };

function json(body: unknown, status = 200, headers?: Record<string, string>): Response {
  return new Response(stringifyBigint(body), { status, headers: { ...JSON_HEADERS, ...headers } });
}

function error(status: number, message: string, type: string, headers?: Record<string, string>): Response {
  return new Response(errorBody(message, type, status), { status, headers: { ...JSON_HEADERS, ...headers } });
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
  ) {
    super(message);
  }
}

async function readJson(req: Request): Promise<unknown> {
  const text = await req.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, `request body is not valid JSON: ${text.slice(0, 80)}`, "invalid_request_error");
  }
}

/** One line per 10 s at most, so a router that is down does not flood the log. */
function rateLimited(log: (line: string) => void): (line: string) => void {
  let last = -Infinity;
  let suppressed = 0;
  return (line) => {
    const now = performance.now();
    if (now - last < 10_000) {
      suppressed++;
      return;
    }
    last = now;
    log(suppressed > 0 ? `${line} (+${suppressed} similar)` : line);
    suppressed = 0;
  };
}

export async function startMocker(opts: StartMockerOptions = {}): Promise<MockerHandle> {
  const config = resolveMockerOptions(opts);
  const log = opts.log ?? ((line: string) => console.error(`[mocker] ${line}`));
  // Loaded once at start, never per request.
  const tokenizer: MockerTokenizer = config.tokenizer !== undefined ? await loadMockerTokenizer(config.tokenizer) : byteTokenizer;
  // One publisher (own queue, own in-flight POST) per router: a slow or absent router
  // delays only its own batches, and every router sees every event.
  const publishers: EventPublisher[] = [];
  let seq = 0;

  const server = Bun.serve({
    port: config.port,
    hostname: config.host,
    // Queued requests may wait long before their first byte; never cut them off.
    idleTimeout: 0,
    fetch: (req) => app.fetch(req),
  });

  const port = server.port!;
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  const workerId = config.workerId ?? workerIdFromUrl(url);
  // Who this process is: a router that sees these change knows the engine restarted and its
  // cache is empty (src/fleet/restart-detector.ts), even when no event says so.
  const instanceId = crypto.randomUUID();
  const startedAt = Date.now();
  for (const routerUrl of config.routerUrls) {
    publishers.push(
      new EventPublisher({
        routerUrl,
        adminToken: config.adminToken,
        batchMs: config.eventBatchMs,
        fetch: opts.fetch,
        onError: rateLimited(log),
      }),
    );
  }
  const emit =
    publishers.length === 0
      ? undefined
      : publishers.length === 1
        ? (e: RouterEvent) => publishers[0]!.push(e)
        : (e: RouterEvent) => {
            for (const p of publishers) p.push(e);
          };
  const eng = new MockEngine({ config, workerId, clock: realClock, emit });
  // Prefill and decode engines move real KV bytes through the native library; an ordinary
  // engine (role both) never loads it.
  const handoff =
    config.role === "both"
      ? null
      : new KvHandoff({
          lib: requireNativeLibrary(),
          workerIdHex: workerId.toString(16),
          blockBytes: config.kvBlockBytes,
          poolBlocks: config.kvPoolBlocks,
          leaseMs: config.kvLeaseMs,
          log,
        });
  const fetchFn = opts.fetch ?? fetch;

  function requireAdmin(req: Request): void {
    if (config.adminToken === undefined) return;
    if (req.headers.get("authorization") !== `Bearer ${config.adminToken}`) {
      throw new HttpError(401, "admin route: missing or wrong Bearer token", "unauthorized");
    }
  }

  function meta(kind: ApiKind, model: string): ResponseMeta {
    return { id: `${kind === "chat" ? "chatcmpl" : "cmpl"}-${workerId.toString(36)}-${++seq}`, created: Math.floor(Date.now() / 1000), model };
  }

  function responseHeaders(start: GenerateStart, streaming: boolean): Record<string, string> {
    return {
      "content-type": streaming ? "text/event-stream" : "application/json",
      ...(streaming ? { "cache-control": "no-cache" } : {}),
      [CACHED_TOKENS_HEADER]: String(start.cachedTokens),
      "x-mocker-dp-rank": String(start.dpRank),
      "x-mocker-worker-id": workerId.toString(),
    };
  }

  async function completions(req: Request, kind: ApiKind): Promise<Response> {
    const zero = { [CACHED_TOKENS_HEADER]: "0" };
    let parsed: CompletionRequest;
    let dpRank: number | undefined;
    let directive: DisaggDirective = { kind: "none" };
    try {
      const body = await readJson(req);
      const b = body !== null && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
      const prompts =
        b === undefined ? undefined
        : kind === "chat" ? (b.messages === undefined ? undefined : [await tokenizer.chatPrompt(b)])
        : b.prompt === undefined ? undefined : await tokenizer.completionPrompts(b.prompt);
      parsed = parseCompletionRequest(kind, body, prompts);
      if (b !== undefined && handoff !== null) directive = parseDisaggDirective(b);
      dpRank = dpRankValue(req.headers.get(DP_RANK_HEADER), eng.ranks.length, DP_RANK_HEADER);
    } catch (e) {
      if (e instanceof HttpError || isRouterError(e)) return error(400, e.message, "invalid_request_error", zero);
      throw e;
    }
    const loraName = eng.resolveModel(parsed.model);
    if (loraName === null) return unknownModel(parsed.model!);
    if (parsed.prompts.length > 1) return batch(req, parsed, loraName, dpRank);
    if (parsed.sessionId !== undefined) eng.sessions.touch(parsed.sessionId, Date.now());
    const m = meta(kind, parsed.model ?? config.model);
    const abort = new AbortController();
    req.signal.addEventListener("abort", () => abort.abort(), { once: true });
    const genReq = {
      tokens: parsed.tokens, maxTokens: parsed.maxTokens, loraName, dpRank: eng.pickRank(dpRank), signal: abort.signal,
      importKv: importerFor(directive),
    };

    if (exportsKv(directive)) return prefillAndExport(kind, m, genReq, directive);
    if (!parsed.stream) {
      try {
        const r = await eng.generate(genReq, { start: () => {}, token: () => {} });
        return new Response(completionResponse(kind, m, r.text, r), { headers: responseHeaders(r, false) });
      } catch (e) {
        if (e instanceof AbortedError) return error(499, "client closed the request", "aborted", zero);
        throw e;
      }
    }

    // Streaming: the response (and its headers) go out when prefill starts, once the cached
    // prefix is known; tokens follow one chunk each.
    const w = new SseWriter(kind, m);
    return new Promise<Response>((resolve, reject) => {
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      let open = true;
      let responded = false;
      const body = new ReadableStream<Uint8Array>({
        start: (c) => {
          controller = c;
        },
        cancel: () => {
          open = false;
          abort.abort();
        },
      });
      const send = (chunk: Uint8Array) => {
        if (!open) return;
        try {
          controller.enqueue(chunk);
        } catch {
          open = false;
          abort.abort();
        }
      };
      const close = () => {
        if (!open) return;
        open = false;
        try {
          controller.close();
        } catch {
          // already closed by the client
        }
      };
      const last = parsed.maxTokens - 1;
      eng
        .generate(genReq, {
          start: (s) => {
            if (w.isChat) send(w.role());
            responded = true;
            resolve(new Response(body, { headers: responseHeaders(s, true) }));
          },
          token: (t, i) => send(w.token(t, i === last)),
        })
        .then(
          (r) => {
            send(w.usage(r));
            send(w.done());
            close();
          },
          (e) => {
            if (!responded) {
              if (e instanceof AbortedError) resolve(error(499, "client closed the request", "aborted", zero));
              else reject(e);
              return;
            }
            if (!(e instanceof AbortedError)) {
              log(`stream failed: ${e instanceof Error ? e.message : String(e)}`);
              send(w.error(e instanceof Error ? e.message : String(e), "internal_error"));
            }
            close();
          },
        );
    });
  }

  /** Whether this request is the prefill half of a hand-off (this engine must write its blocks). */
  function exportsKv(d: DisaggDirective): boolean {
    return d.kind === "vllm-prefill" || (d.kind === "sglang" && config.role === "prefill");
  }

  /**
   * The prefill half: the prompt is prefilled (one output token, as vLLM's proxy asks), its
   * full blocks are written into a shared-memory segment, and the answer names it: vLLM in
   * `kv_transfer_params` (NixlConnector's fields, block ids = segment slots), SGLang under the
   * bootstrap room, which the decode engine asks for. Always a JSON answer, never a stream.
   */
  async function prefillAndExport(kind: ApiKind, m: ResponseMeta, genReq: GenerateRequestOf, d: DisaggDirective): Promise<Response> {
    let r;
    try {
      r = await eng.generate({ ...genReq, maxTokens: 1, importKv: undefined }, { start: () => {}, token: () => {} });
    } catch (e) {
      if (e instanceof AbortedError) return error(499, "client closed the request", "aborted", { [CACHED_TOKENS_HEADER]: "0" });
      throw e;
    }
    const hashes = engineBlockHashes(computeBlockHashes(genReq.tokens, config.blockSize, { loraName: genReq.loraName }));
    let exported: ExportedKv;
    try {
      exported = handoff!.exportBlocks(hashes);
    } catch (e) {
      return error(500, `kv export failed: ${e instanceof Error ? e.message : String(e)}`, "kv_transfer_error");
    }
    const body = JSON.parse(completionResponse(kind, m, r.text, r)) as Record<string, unknown>;
    if (d.kind === "sglang") {
      handoff!.publishRoom(d.room, exported);
    } else {
      body.kv_transfer_params = {
        do_remote_prefill: true,
        do_remote_decode: false,
        remote_block_ids: Array.from({ length: exported.blocks }, (_, i) => i),
        remote_engine_id: workerId.toString(),
        remote_request_id: m.id,
        remote_host: config.host,
        remote_port: port,
        remote_block_size: config.blockSize,
        num_prompt_blocks: Math.ceil(genReq.tokens.length / config.blockSize),
        tp_size: 1,
        switchyard_shm: exported.segment,
      };
    }
    return json(body, 200, { ...responseHeaders(r, false), "x-mocker-kv-exported-blocks": String(exported.blocks) });
  }

  /** The decode half: where this request's prompt blocks come from, if anywhere. */
  function importerFor(d: DisaggDirective): ((h: BigUint64Array, from: number, to: number) => Promise<ImportedKv>) | undefined {
    if (handoff === null) return undefined;
    if (d.kind === "vllm-decode") {
      const segment = d.segment;
      if (segment === null) return undefined; // nothing was exported (a prompt under one block)
      return (h, from, to) => handoff.importBlocks(segment, h, from, to);
    }
    if (d.kind === "sglang" && config.role === "decode") {
      return async (h, from, to) => {
        const room = await askBootstrap(d);
        if (room === null || room.segment === null) return { blocks: 0, bytes: 0 };
        return handoff.importBlocks(room.segment, h, from, to);
      };
    }
    return undefined;
  }

  /** SGLang: the prefill engine's hand-off for the room, once its prefill is done; null if it never comes. */
  async function askBootstrap(d: Extract<DisaggDirective, { kind: "sglang" }>): Promise<ExportedKv | null> {
    const host = d.host.includes(":") && !d.host.startsWith("[") ? `[${d.host}]` : d.host;
    const waitMs = Math.min(config.kvLeaseMs, 30_000);
    try {
      const res = await fetchFn(`http://${host}:${d.port}/v1/kv/bootstrap/${d.room}?wait_ms=${waitMs}`, {
        signal: AbortSignal.timeout(waitMs + 2_000),
      });
      if (!res.ok) {
        log(`kv bootstrap: room ${d.room} at ${host}:${d.port} answered ${res.status}; prefilling here`);
        return null;
      }
      return (await res.json()) as ExportedKv;
    } catch (e) {
      log(`kv bootstrap: room ${d.room} at ${host}:${d.port} failed (${e instanceof Error ? e.message : String(e)}); prefilling here`);
      return null;
    }
  }

  /** GET /v1/kv/bootstrap/:room?wait_ms=N — the prefill engine's hand-off for one room (long-poll). */
  async function bootstrapRoom(req: Request, room: string): Promise<Response> {
    if (handoff === null || config.role !== "prefill") return error(404, "this engine is not a prefill engine", "not_found");
    const wait = Number(new URL(req.url).searchParams.get("wait_ms") ?? "0");
    if (!Number.isFinite(wait) || wait < 0) return error(400, "wait_ms: must be a non-negative number", "invalid_request_error");
    const r = await handoff.waitRoom(room, wait);
    return r === null ? json({ status: "pending", room }, 404) : json(r);
  }

  function unknownModel(model: string): Response {
    eng.counters.unknownModel++;
    return error(404, `The model \`${model}\` does not exist.`, "NotFoundError", { [CACHED_TOKENS_HEADER]: "0" });
  }

  /** A completions batch (several prompts): each one through the engine, one answer with a choice per prompt. */
  async function batch(req: Request, parsed: CompletionRequest, loraName: string | undefined, dpRank: number | undefined): Promise<Response> {
    if (parsed.stream) return error(400, "prompt: streaming a batch of prompts is not simulated", "invalid_request_error");
    const rank = eng.pickRank(dpRank);
    const results = await Promise.all(
      parsed.prompts.map((tokens) => eng.generate({ tokens, maxTokens: parsed.maxTokens, loraName, dpRank: rank, signal: req.signal }, { start: () => {}, token: () => {} })),
    );
    const m = meta("completions", parsed.model ?? config.model);
    const sum = (f: (r: (typeof results)[number]) => number) => results.reduce((a, r) => a + f(r), 0);
    return json(
      {
        id: m.id, object: "text_completion", created: m.created, model: m.model,
        choices: results.map((r, index) => ({ index, text: r.text, logprobs: null, finish_reason: "length" })),
        usage: {
          prompt_tokens: sum((r) => r.promptTokens), completion_tokens: sum((r) => r.completionTokens),
          total_tokens: sum((r) => r.promptTokens + r.completionTokens), prompt_tokens_details: { cached_tokens: sum((r) => r.cachedTokens) },
        },
      },
      200,
      { [CACHED_TOKENS_HEADER]: String(sum((r) => r.cachedTokens)), "x-mocker-dp-rank": String(rank), "x-mocker-worker-id": workerId.toString() },
    );
  }

  const native = nativeRoutes({
    engine: eng,
    tokenizer,
    newId: (prefix) => `${prefix}-${workerId.toString(36)}-${++seq}`,
    unknownModel,
    dpRank: (req) => dpRankValue(req.headers.get(DP_RANK_HEADER), eng.ranks.length, DP_RANK_HEADER),
  });

  function engineInfo(): unknown {
    return {
      worker_id: workerId.toString(),
      instance_id: instanceId,
      started_at: startedAt,
      dp_ranks: config.dpRanks,
      block_size: config.blockSize,
      kv_blocks: config.kvBlocks,
      loras: eng.loras.list(),
      max_loras: config.maxLoras,
      model: config.model,
      models: config.models,
      tokenizer: tokenizer.source,
      max_concurrency: config.maxConcurrency,
      role: config.role,
      ...(config.role !== "both" ? { disagg: config.disagg, bootstrap_port: port, kv_block_bytes: config.kvBlockBytes } : {}),
    };
  }

  function models(): unknown {
    const created = Math.floor(Date.now() / 1000);
    // vLLM's shape (serving_models.py show_available_models): base models with parent null,
    // adapters with their base model as parent.
    const bases = config.models.map((id) => ({ id, object: "model", created, owned_by: "switchyard", root: id, parent: null }));
    const loras = eng.loras.list().map((id) => ({ id, object: "model", created, owned_by: "switchyard", root: id, parent: config.model }));
    return { object: "list", data: [...bases, ...loras] };
  }

  function kvQuery(req: Request): Response {
    const params = new URL(req.url).searchParams;
    const rank = dpRankValue(params.get("dp_rank"), eng.ranks.length, "dp_rank") ?? 0;
    const asked = u64Param(params, "worker_id");
    if (asked !== undefined && asked !== workerId) {
      throw new HttpError(400, `worker_id ${asked} is not this worker (${workerId})`, "invalid_request_error");
    }
    const r = eng.ranks[rank]!.kv.query(u64Param(params, "start_id"), u64Param(params, "end_id"));
    return json(workerKvQueryResponseToWire(r));
  }

  /** Set by drain(): /health says 503 so routers stop sending here. */
  let draining = false;

  /**
   * The routes (Hono, as the router's edge; issue 10 replaced a hand-written switch). Errors:
   * HttpError -> its status, RouterError invalid_request -> 400, anything else 500 (logged).
   * Unknown paths 404, known paths with another method 405, in the engine's error shape.
   */
  const app = new Hono();
  app.onError((e) => {
    if (e instanceof HttpError) return error(e.status, e.message, e.type);
    if (isRouterError(e) && e.code === "invalid_request") return error(400, e.message, "invalid_request_error");
    log(`internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return error(500, e instanceof Error ? e.message : String(e), "internal_error");
  });
  app.notFound((c) => {
    const path = c.req.path;
    const known = KNOWN_PATHS.has(path) || native[path] !== undefined;
    const method = c.req.method;
    return error(known ? 405 : 404, known ? `method ${method} not allowed on ${path}` : `no route ${method} ${path}`, known ? "method_not_allowed" : "not_found");
  });
  // Draining: probes and metrics still answer; everything else is a retryable 503.
  app.use("*", async (c, next) => {
    const key = `${c.req.method} ${c.req.path}`;
    if (draining && key !== "GET /health" && key !== "GET /livez" && key !== "GET /metrics") {
      return error(503, "the engine is shutting down", "service_unavailable");
    }
    await next();
  });
  app.post("/v1/completions", (c) => completions(c.req.raw, "completions"));
  app.post("/v1/chat/completions", (c) => completions(c.req.raw, "chat"));
  app.get("/health", () => (draining ? json({ status: "draining" }, 503) : json({ status: "ok" })));
  app.get("/livez", () => json({ status: "ok" }));
  app.get("/v1/models", () => json(models()));
  app.get("/v1/engine/info", () => json(engineInfo()));
  app.get("/kv/query", (c) => kvQuery(c.req.raw));
  app.post("/kv/clear", (c) => {
    requireAdmin(c.req.raw);
    const rank = dpRankValue(c.req.query("dp_rank") ?? null, eng.ranks.length, "dp_rank");
    eng.clearCache(rank);
    return json({ status: "ok" });
  });
  app.post("/admin/restart-events", (c) => {
    requireAdmin(c.req.raw);
    eng.restartEvents();
    return json({ status: "ok" });
  });
  app.post("/v1/load_lora_adapter", async (c) => {
    const { name, path: loraPath } = parseLoadLora(await readJson(c.req.raw));
    const r = eng.loras.load(name, loraPath);
    return r.ok ? new Response(r.message) : error(r.status, r.message, r.status === 404 ? "NotFoundError" : "BadRequestError");
  });
  app.post("/v1/unload_lora_adapter", async (c) => {
    const { name } = parseUnloadLora(await readJson(c.req.raw));
    const r = eng.loras.unload(name);
    return r.ok ? new Response(r.message) : error(r.status, r.message, r.status === 404 ? "NotFoundError" : "BadRequestError");
  });
  app.post("/v1/sessions/open", async (c) => {
    const { sessionId, timeoutS } = parseSessionOpen(await readJson(c.req.raw), DEFAULT_SESSION_TIMEOUT_S);
    eng.sessions.open(sessionId, timeoutS, Date.now());
    return json({ status: "ok" });
  });
  app.post("/v1/sessions/close", async (c) => {
    const { sessionId } = parseSessionClose(await readJson(c.req.raw));
    eng.sessions.close(sessionId, Date.now());
    return json({ status: "ok" });
  });
  app.get("/v1/sessions", () => json({ sessions: eng.sessions.list(Date.now()) }));
  app.get("/metrics", () => new Response(renderMetrics(eng, publishers, handoff?.stats), { headers: { "content-type": "text/plain; version=0.0.4" } }));
  app.get("/v1/kv/bootstrap/*", (c) => {
    const room = c.req.path.slice("/v1/kv/bootstrap/".length);
    if (!/^\d{1,20}$/.test(room)) return error(400, "bootstrap room: must be a non-negative integer", "invalid_request_error");
    return bootstrapRoom(c.req.raw, room);
  });
  for (const [path, handler] of Object.entries(native)) {
    app.post(path, async (c) => {
      const body = await readJson(c.req.raw);
      if (body === null || typeof body !== "object" || Array.isArray(body)) throw new HttpError(400, "request body must be a JSON object", "invalid_request_error");
      return handler(c.req.raw, body as Record<string, unknown>);
    });
  }

  return {
    url,
    port,
    workerId,
    engine: eng,
    flushEvents: async () => {
      await Promise.all(publishers.map((p) => p.flush()));
    },
    drain: async (timeoutMs) => {
      draining = true;
      // Still listening: routers see 503 on /health and on new requests (and go elsewhere).
      const end = performance.now() + timeoutMs;
      while (server.pendingRequests > 0 && performance.now() < end) await Bun.sleep(25);
      const finished = server.pendingRequests === 0;
      await server.stop(true);
      await Promise.all(publishers.map((p) => p.stop()));
      handoff?.stop();
      return finished;
    },
    stop: async () => {
      await server.stop(true);
      await Promise.all(publishers.map((p) => p.stop()));
      handoff?.stop();
    },
  };
}

const KNOWN_PATHS = new Set([
  "/v1/completions",
  "/v1/chat/completions",
  "/health",
  "/livez",
  "/v1/models",
  "/v1/engine/info",
  "/kv/query",
  "/kv/clear",
  "/admin/restart-events",
  "/v1/load_lora_adapter",
  "/v1/unload_lora_adapter",
  "/v1/sessions/open",
  "/v1/sessions/close",
  "/v1/sessions",
  "/metrics",
]);
