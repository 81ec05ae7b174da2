/**
 * Every other route a client uses, proxied to a worker serving the body's
 * `model`: OpenAI's /v1/embeddings and /v1/responses, vLLM's native /detokenize, /pooling,
 * /classify, /score, /v1/score, /rerank, /v1/rerank, /v2/rerank, SGLang's /generate. Routed
 * on the prompt's cache where the body has a readable prompt (embeddings/responses `input`,
 * SGLang `text`/`input_ids`), least loaded otherwise; bodies and answers pass unchanged.
 * /tokenize is the router's own when it has the model's tokenizer (routes/tokenize.ts), else proxied.
 */
import { Hono } from "hono";
import { RouterError } from "../../core/errors.ts";
import { readJsonRequest } from "../request-json.ts";
import type { FleetView, RequestLimits } from "../deps.ts";
import { promptFieldsOf, readPrompt, type PromptKind } from "../prompt-route/prompt-routing.ts";
import { modelField } from "../prompt-route/model-routing.ts";
import { outputTokensAsked } from "../../protect/output-budget.ts";
import { promptCharge } from "../../protect/prompt-charge.ts";
import { refuseKvSteering } from "../../protect/kv-steering.ts";
import type { ModelForward } from "../proxy/model-forward.ts";
import type { RequestObservers } from "../../observe/request-observers.ts";
import { tokenizeHandler } from "./tokenize.ts";

/** What the pass-through routes (and /tokenize) use. */
export interface PassthroughDeps {
  readonly limits: RequestLimits;
  /** Tokenizers for the routing prompt; models for /tokenize's 404 and its own answer. */
  readonly fleet: FleetView;
  readonly dispatch: ModelForward;
  /** Each request's observation (src/observe): the tokenize span, the prompt for the access line. */
  readonly requests?: RequestObservers;
}

/** Path -> where its body keeps a prompt. */
export const PASSTHROUGH_ROUTES: Readonly<Record<string, PromptKind>> = {
  "/v1/embeddings": "embeddings",
  "/v1/responses": "responses",
  "/pooling": "embeddings",
  "/classify": "embeddings",
  "/generate": "generate",
  "/detokenize": "none",
  "/score": "none",
  "/v1/score": "none",
  "/rerank": "none",
  "/v1/rerank": "none",
  "/v2/rerank": "none",
};

/** Proxy one JSON body to `path` on a worker serving its model. */
export function proxyJson(d: PassthroughDeps, path: string, kind: PromptKind) {
  return async (req: Request): Promise<Response> => {
    const { body, json } = await readJsonRequest(req, d.limits, promptFieldsOf(kind));
    // Where an engine fetches KV from is the router's to say (protect/kv-steering.ts).
    refuseKvSteering(json, d.limits.trustKvTransferParams === true);
    const obs = d.requests?.of(req);
    const prompt = await (obs !== undefined
      ? obs.tokenize(() => readPrompt(d.fleet.tokenizers, json, kind, d.limits.maxPromptChars))
      : readPrompt(d.fleet.tokenizers, json, kind, d.limits.maxPromptChars));
    obs?.prompt({ model: json.model, tokens: prompt.tokens.length });
    const priority = json.priority;
    if (
      priority !== undefined &&
      (typeof priority !== "number" || !Number.isSafeInteger(priority))
    ) {
      throw new RouterError(
        "invalid_request",
        "priority: must be an integer (lower is served first)",
        "priority",
      );
    }
    const maxOutputTokens = outputTokensAsked(path, json);
    const charge = () => promptCharge(path, json, prompt.exactTokens, prompt.tokens.length);
    return d.dispatch(
      {
        request: req,
        path,
        body,
        tokens: prompt.tokens,
        approximate: prompt.approximate,
        priority,
        stream: json.stream === true,
        streamOptions: { value: json.stream_options },
        maxOutputTokens,
        promptCharge: charge,
      },
      modelField(json.model, true),
    );
  };
}

export function passthroughRoutes(d: PassthroughDeps): Hono {
  const app = new Hono();
  for (const [path, kind] of Object.entries(PASSTHROUGH_ROUTES)) {
    const handler = proxyJson(d, path, kind);
    app.post(path, (c) => handler(c.req.raw));
  }
  const tokenize = tokenizeHandler(d);
  app.post("/tokenize", (c) => tokenize(c.req.raw));
  return app;
}
