/**
 * The simulated engine's routes besides completions and chat, minimal but shape-correct, so
 * the router's pass-through of every client route can be tested end to end. Shapes follow
 * vLLM's vllm/entrypoints/openai/protocol.py (v0.10: TokenizeResponse {count, max_model_len,
 * tokens}, DetokenizeResponse {prompt}, EmbeddingResponse, PoolingResponse, ClassificationResponse, ScoreResponse,
 * RerankResponse, ResponsesResponse) and SGLang's /generate (python/sglang/srt/entrypoints/
 * http_server.py, v0.4: {text, meta_info}).
 *
 * /v1/responses and /generate run through the engine (prefix cache, KV events, timing), non
 * streaming only; embeddings, pooling, score and rerank answer at once with deterministic
 * numbers from the tokens (pooling models do not use the prefix cache). It decides no routing.
 */
import { RouterError } from "../core/errors.ts";
import { xxh3_64 } from "../core/xxh3.ts";
import type { MockEngine } from "./engine.ts";
import { HttpError, readJson, type Route } from "./http.ts";
import type { MockerTokenizer } from "./tokenizer.ts";
import { maxModelLen } from "./options.ts";

export interface NativeRouteContext {
  readonly engine: MockEngine;
  readonly tokenizer: MockerTokenizer;
  /** A response id with this prefix (cmpl, embd, resp, ...). */
  readonly newId: (prefix: string) => string;
  /** The engine's answer to an unknown model (404, like vLLM). */
  readonly unknownModel: (model: string) => Response;
  readonly dpRank: (req: Request) => number | undefined;
}

export type NativeHandler = (req: Request, body: Record<string, unknown>) => Promise<Response>;

const EMBEDDING_DIM = 8;

function invalid(field: string, message: string): never {
  throw new RouterError("invalid_request", `${field}: ${message}`, field);
}

function json(value: unknown): Response {
  return new Response(JSON.stringify(value), { headers: { "content-type": "application/json" } });
}

const now = () => Math.floor(Date.now() / 1000);

/** A deterministic unit-ish vector for a token sequence (same tokens, same vector). */
function embeddingOf(tokens: Uint32Array): number[] {
  const seed = xxh3_64(new Uint8Array(tokens.buffer, tokens.byteOffset, tokens.byteLength), 0n);
  return Array.from(
    { length: EMBEDDING_DIM },
    (_, i) => Number((seed >> BigInt(i * 8)) & 0xffn) / 255 - 0.5,
  );
}

/** Deterministic relevance in [0, 1) of a pair of token sequences. */
function scoreOf(a: Uint32Array, b: Uint32Array): number {
  let shared = 0;
  const set = new Set(a);
  for (const t of b) if (set.has(t)) shared++;
  return b.length === 0 ? 0 : shared / (b.length + 1);
}

function stringOrList(value: unknown, field: string): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.length > 0 && value.every((x) => typeof x === "string"))
    return value as string[];
  return invalid(field, "must be a string or a non-empty array of strings");
}

/** Every native route is a POST whose body must be a JSON object; the handler gets it parsed. */
function postWithObject(path: string, handler: NativeHandler): Route {
  return {
    method: "POST",
    path,
    handle: async (c) => {
      const body = await readJson(c.req.raw);
      if (body === null || typeof body !== "object" || Array.isArray(body))
        throw new HttpError(400, "request body must be a JSON object", "invalid_request_error");
      return handler(c.req.raw, body as Record<string, unknown>);
    },
  };
}

export function nativeRoutes(ctx: NativeRouteContext): Route[] {
  const { engine, tokenizer } = ctx;
  const modelOf = (body: Record<string, unknown>): string => {
    const m = body.model;
    if (m !== undefined && m !== null && typeof m !== "string")
      invalid("model", "must be a string");
    return typeof m === "string" ? m : engine.config.model;
  };
  /** The adapter (or undefined for a base model); null: unknown model. */
  const resolve = (model: string) => engine.resolveModel(model);

  /** `input` of embeddings / pooling: text, token ids, or a batch of either. */
  const inputs = async (value: unknown): Promise<Uint32Array[]> => {
    if (value === undefined) invalid("input", "is required");
    const items = await tokenizer.completionPrompts(value).catch((e: unknown) => {
      throw e instanceof RouterError
        ? new RouterError("invalid_request", e.message.replace(/^prompt/, "input"), "input")
        : e;
    });
    return items;
  };

  const pooled =
    (object: "embedding" | "pooling") => async (_req: Request, body: Record<string, unknown>) => {
      const model = modelOf(body);
      if (resolve(model) === null) return ctx.unknownModel(model);
      const prompts = await inputs(body.input);
      const tokens = prompts.reduce((a, p) => a + p.length, 0);
      const data = prompts.map((p, index) =>
        object === "embedding"
          ? { index, object, embedding: embeddingOf(p) }
          : { index, object, data: embeddingOf(p) },
      );
      return json({
        id: ctx.newId(object === "embedding" ? "embd" : "pool"),
        object: "list",
        created: now(),
        model,
        data,
        usage: { prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0 },
      });
    };

  /** vLLM's ClassificationResponse: one label per input, from its vector. */
  const classify: NativeHandler = async (_req, body) => {
    const model = modelOf(body);
    if (resolve(model) === null) return ctx.unknownModel(model);
    const prompts = await inputs(body.input);
    const tokens = prompts.reduce((a, p) => a + p.length, 0);
    const data = prompts.map((p, index) => {
      const v = embeddingOf(p).slice(0, 2);
      const e = v.map(Math.exp);
      const probs = e.map((x) => x / (e[0]! + e[1]!));
      return {
        index,
        label: probs[0]! >= probs[1]! ? "LABEL_0" : "LABEL_1",
        probs,
        num_classes: 2,
      };
    });
    return json({
      id: ctx.newId("classify"),
      object: "list",
      created: now(),
      model,
      data,
      usage: { prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0 },
    });
  };

  const score: NativeHandler = async (_req, body) => {
    const model = modelOf(body);
    if (resolve(model) === null) return ctx.unknownModel(model);
    const left = stringOrList(body.text_1 ?? body.queries, "text_1");
    const right = stringOrList(body.text_2 ?? body.documents ?? body.items, "text_2");
    if (left.length !== 1 && left.length !== right.length)
      invalid("text_1", "must be one text or as many as text_2");
    const a = await Promise.all(left.map((t) => tokenizer.text(t, true)));
    const b = await Promise.all(right.map((t) => tokenizer.text(t, true)));
    const data = b.map((bt, index) => ({
      index,
      object: "score",
      score: scoreOf(a[a.length === 1 ? 0 : index]!, bt),
    }));
    const tokens = [...a, ...b].reduce((s, t) => s + t.length, 0);
    return json({
      id: ctx.newId("score"),
      object: "list",
      created: now(),
      model,
      data,
      usage: { prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0 },
    });
  };

  const rerank: NativeHandler = async (_req, body) => {
    const model = modelOf(body);
    if (resolve(model) === null) return ctx.unknownModel(model);
    if (typeof body.query !== "string") invalid("query", "must be a string");
    const docs = stringOrList(body.documents, "documents");
    const q = await tokenizer.text(body.query, true);
    const scored = await Promise.all(
      docs.map(async (text, index) => ({
        index,
        document: { text },
        relevance_score: scoreOf(q, await tokenizer.text(text, true)),
      })),
    );
    scored.sort((x, y) => y.relevance_score - x.relevance_score || x.index - y.index);
    const topN = typeof body.top_n === "number" && body.top_n > 0 ? body.top_n : scored.length;
    return json({
      id: ctx.newId("rerank"),
      model,
      usage: { total_tokens: q.length },
      results: scored.slice(0, topN),
    });
  };

  /** One request through the engine (cache, events, timing), non streaming. */
  const run = async (
    req: Request,
    tokens: Uint32Array,
    maxTokens: number,
    loraName: string | undefined,
  ) => {
    if (tokens.length === 0) invalid("input", "must not be empty");
    const abort = new AbortController();
    req.signal.addEventListener("abort", () => abort.abort(), { once: true });
    return engine.generate(
      {
        tokens,
        maxTokens,
        loraName,
        dpRank: engine.pickRank(ctx.dpRank(req)),
        signal: abort.signal,
      },
      { start: () => {}, token: () => {} },
    );
  };

  const maxTokensOf = (value: unknown, field: string): number => {
    if (value === undefined || value === null) return 16;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 1 << 20)
      invalid(field, "must be an integer in [1, 1048576]");
    return value;
  };

  const responses: NativeHandler = async (req, body) => {
    const model = modelOf(body);
    const lora = resolve(model);
    if (lora === null) return ctx.unknownModel(model);
    if (body.stream === true) invalid("stream", "streaming /v1/responses is not simulated");
    const input = body.input;
    let tokens: Uint32Array;
    if (typeof input === "string") tokens = await tokenizer.text(input, true);
    else if (Array.isArray(input))
      tokens = await tokenizer.chatPrompt({ ...body, messages: input });
    else invalid("input", "must be a string or an array of messages");
    const r = await run(
      req,
      tokens,
      maxTokensOf(body.max_output_tokens, "max_output_tokens"),
      lora,
    );
    const id = ctx.newId("resp");
    return json({
      id,
      object: "response",
      created_at: now(),
      model,
      status: "completed",
      output: [
        {
          type: "message",
          id: `msg_${id}`,
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: r.text, annotations: [] }],
        },
      ],
      usage: {
        input_tokens: r.promptTokens,
        input_tokens_details: { cached_tokens: r.cachedTokens },
        output_tokens: r.completionTokens,
        total_tokens: r.promptTokens + r.completionTokens,
      },
    });
  };

  const generate: NativeHandler = async (req, body) => {
    const model = modelOf(body);
    const lora = resolve(typeof body.lora_path === "string" ? body.lora_path : model);
    if (lora === null) return ctx.unknownModel(model);
    if (body.stream === true) invalid("stream", "streaming /generate is not simulated");
    let tokens: Uint32Array;
    if (typeof body.text === "string") tokens = await tokenizer.text(body.text, true);
    else if (body.input_ids !== undefined)
      tokens = (await tokenizer.completionPrompts(body.input_ids))[0]!;
    else invalid("text", "one of text or input_ids is required");
    const sp = (body.sampling_params ?? {}) as Record<string, unknown>;
    const r = await run(
      req,
      tokens,
      maxTokensOf(sp.max_new_tokens, "sampling_params.max_new_tokens"),
      lora,
    );
    return json({
      text: r.text,
      meta_info: {
        id: ctx.newId("gen"),
        prompt_tokens: r.promptTokens,
        completion_tokens: r.completionTokens,
        cached_tokens: r.cachedTokens,
        finish_reason: { type: "length", length: r.completionTokens },
      },
    });
  };

  const tokenize: NativeHandler = async (_req, body) => {
    const model = modelOf(body);
    if (resolve(model) === null) return ctx.unknownModel(model);
    let tokens: Uint32Array;
    if (body.messages !== undefined) tokens = await tokenizer.chatPrompt(body);
    else if (typeof body.prompt === "string")
      tokens = await tokenizer.text(body.prompt, body.add_special_tokens !== false);
    else invalid("prompt", "a string prompt or messages is required");
    const ids = Array.from(tokens);
    return json({ count: ids.length, max_model_len: maxModelLen(engine.config), tokens: ids });
  };

  const detokenize: NativeHandler = async (_req, body) => {
    const model = modelOf(body);
    if (resolve(model) === null) return ctx.unknownModel(model);
    const t = body.tokens;
    if (
      !Array.isArray(t) ||
      !t.every((x) => typeof x === "number" && Number.isInteger(x) && x >= 0)
    )
      invalid("tokens", "must be an array of token ids");
    return json({ prompt: await tokenizer.decode(t as number[]) });
  };

  const byPath: Record<string, NativeHandler> = {
    "/tokenize": tokenize,
    "/detokenize": detokenize,
    "/v1/embeddings": pooled("embedding"),
    "/pooling": pooled("pooling"),
    "/classify": classify,
    "/score": score,
    "/v1/score": score,
    "/rerank": rerank,
    "/v1/rerank": rerank,
    "/v2/rerank": rerank,
    "/v1/responses": responses,
    "/generate": generate,
  };
  return Object.entries(byPath).map(([path, handler]) => postWithObject(path, handler));
}
