/**
 * The OpenAI routes: POST /v1/completions and /v1/chat/completions (a single prompt streamed
 * or not, a completions batch, the prefill or decode half of a hand-off) and GET /v1/models.
 * It validates the request and hands it to the engine; how a stream is written lives in
 * completion-stream.ts, how KV is handed off in handoff-routes.ts.
 */
import type { Context } from "hono";
import { isRouterError } from "../core/errors.ts";
import type { WorkerId } from "../core/ids.ts";
import { streamCompletion } from "./completion-stream.ts";
import type { DisaggDirective } from "./disagg-request.ts";
import type { MockEngine } from "./engine.ts";
import { AbortedError } from "./fifo.ts";
import type { HandoffHttp } from "./handoff-routes.ts";
import type { PeerHttp } from "./peer-routes.ts";
import type { RemoteKvSource } from "./peer-pull.ts";
import { answerHeaders, CACHED_TOKENS_HEADER, requestedRank } from "./headers.ts";
import { error, HttpError, json, readJson, type Route } from "./http.ts";
import { completionResponse, type ApiKind, type ResponseMeta } from "./openai.ts";
import { maxModelLen } from "./options.ts";
import { logprobsJson } from "./fake-logprobs.ts";
import { fakeTextOffset } from "./fake-text.ts";
import { parseCompletionRequest, type CompletionRequest } from "./requests.ts";
import type { MockerTokenizer } from "./tokenizer.ts";

export interface OpenAiRouteDeps {
  readonly engine: MockEngine;
  readonly tokenizer: MockerTokenizer;
  readonly workerId: WorkerId;
  /** A response id with this prefix, unique in this process. */
  readonly newId: (prefix: string) => string;
  readonly handoff: HandoffHttp;
  /** Peer pulls: `kv_transfer_params.remote_kv_source` (llm-d's P2P source). */
  readonly peer: PeerHttp;
  readonly log: (line: string) => void;
}

/** vLLM's answer to a model it does not serve: a 404, counted in `mocker_unknown_model_total`. */
export function unknownModelAnswer(engine: MockEngine): (model: string) => Response {
  return (model) => {
    engine.counters.unknownModel++;
    return error(404, `The model \`${model}\` does not exist.`, "NotFoundError", {
      [CACHED_TOKENS_HEADER]: "0",
    });
  };
}

export function openAiRoutes(deps: OpenAiRouteDeps): Route[] {
  const { engine: eng, tokenizer, workerId, newId, handoff } = deps;
  const config = eng.config;
  const unknownModel = unknownModelAnswer(eng);

  function meta(kind: ApiKind, model: string): ResponseMeta {
    return {
      id: newId(kind === "chat" ? "chatcmpl" : "cmpl"),
      created: Math.floor(Date.now() / 1000),
      model,
    };
  }

  async function completions(req: Request, kind: ApiKind): Promise<Response> {
    const zero = { [CACHED_TOKENS_HEADER]: "0" };
    let parsed: CompletionRequest;
    let dpRank: number | undefined;
    let directive: DisaggDirective = { kind: "none" };
    let source: RemoteKvSource | null = null;
    try {
      const body = await readJson(req);
      const b =
        body !== null && typeof body === "object" && !Array.isArray(body)
          ? (body as Record<string, unknown>)
          : undefined;
      const prompts =
        b === undefined
          ? undefined
          : kind === "chat"
            ? b.messages === undefined
              ? undefined
              : [await tokenizer.chatPrompt(b)]
            : b.prompt === undefined
              ? undefined
              : await tokenizer.completionPrompts(b.prompt);
      parsed = parseCompletionRequest(kind, body, prompts);
      if (b !== undefined) directive = handoff.directive(b);
      if (b !== undefined) source = deps.peer.sourceOf(b);
      dpRank = requestedRank(req, eng.ranks.length);
    } catch (e) {
      if (e instanceof HttpError || isRouterError(e))
        return error(400, e.message, "invalid_request_error", zero);
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
      tokens: parsed.tokens,
      maxTokens: parsed.maxTokens,
      seed: parsed.seed,
      loraName,
      dpRank: eng.pickRank(dpRank),
      signal: abort.signal,
      importKv: handoff.importerFor(directive) ?? deps.peer.importerFor(source),
      requestId: req.headers.get("x-request-id") ?? undefined,
    };

    if (handoff.exportsKv(directive)) return handoff.prefillAndExport(kind, m, genReq, directive);
    if (!parsed.stream) {
      try {
        const r = await eng.generate(genReq, { start: () => {}, token: () => {} });
        const lp =
          parsed.logprobs === undefined
            ? undefined
            : logprobsJson(
                kind,
                config.seed,
                parsed.logprobs,
                fakeTextOffset(config.seed, genReq.tokens, genReq.seed),
                0,
                [...r.text],
                0,
              );
        return new Response(completionResponse(kind, m, r.text, r, lp), {
          headers: answerHeaders(r, false, workerId),
        });
      } catch (e) {
        if (e instanceof AbortedError)
          return error(499, "client closed the request", "aborted", zero);
        throw e;
      }
    }
    return streamCompletion(deps, kind, m, genReq, abort, zero, parsed.usage, parsed.logprobs);
  }

  /** A completions batch (several prompts): each one through the engine, one answer with a choice per prompt. */
  async function batch(
    req: Request,
    parsed: CompletionRequest,
    loraName: string | undefined,
    dpRank: number | undefined,
  ): Promise<Response> {
    if (parsed.stream)
      return error(
        400,
        "prompt: streaming a batch of prompts is not simulated",
        "invalid_request_error",
      );
    const rank = eng.pickRank(dpRank);
    const requestId = req.headers.get("x-request-id") ?? undefined;
    const results = await Promise.all(
      parsed.prompts.map((tokens) =>
        eng.generate(
          {
            tokens,
            maxTokens: parsed.maxTokens,
            loraName,
            dpRank: rank,
            signal: req.signal,
            requestId,
          },
          { start: () => {}, token: () => {} },
        ),
      ),
    );
    const m = meta("completions", parsed.model ?? config.model);
    const sum = (f: (r: (typeof results)[number]) => number) =>
      results.reduce((a, r) => a + f(r), 0);
    return json(
      {
        id: m.id,
        object: "text_completion",
        created: m.created,
        model: m.model,
        choices: results.map((r, index) => ({
          index,
          text: r.text,
          logprobs: null,
          finish_reason: "length",
        })),
        usage: {
          prompt_tokens: sum((r) => r.promptTokens),
          completion_tokens: sum((r) => r.completionTokens),
          total_tokens: sum((r) => r.promptTokens + r.completionTokens),
          prompt_tokens_details: { cached_tokens: sum((r) => r.cachedTokens) },
        },
      },
      200,
      {
        [CACHED_TOKENS_HEADER]: String(sum((r) => r.cachedTokens)),
        "x-mocker-dp-rank": String(rank),
        "x-mocker-worker-id": workerId.toString(),
      },
    );
  }

  function models(): unknown {
    const created = Math.floor(Date.now() / 1000);
    // vLLM's shape (serving_models.py show_available_models): base models with parent null,
    // adapters with their base model as parent, each with ModelCard's `max_model_len`
    // (vllm/entrypoints/serve/engine/protocol.py at vllm-project/vllm f1bf7bd0:
    // `max_model_len: int | None = None`, set to the model config's max_model_len).
    const max_model_len = maxModelLen(config);
    const bases = config.models.map((id) => ({
      id,
      object: "model",
      created,
      owned_by: "switchyard",
      root: id,
      parent: null,
      max_model_len,
    }));
    const loras = eng.loras.list().map((id) => ({
      id,
      object: "model",
      created,
      owned_by: "switchyard",
      root: id,
      parent: config.model,
      max_model_len,
    }));
    return { object: "list", data: [...bases, ...loras] };
  }

  return [
    {
      method: "POST",
      path: "/v1/completions",
      handle: (c: Context) => completions(c.req.raw, "completions"),
    },
    {
      method: "POST",
      path: "/v1/chat/completions",
      handle: (c: Context) => completions(c.req.raw, "chat"),
    },
    { method: "GET", path: "/v1/models", handle: () => json(models()) },
  ];
}
