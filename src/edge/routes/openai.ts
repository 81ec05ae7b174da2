/**
 * The OpenAI-compatible completion routes: POST /v1/completions and /v1/chat/completions
 * (routing prompt, then dispatch: routed and proxied, bodies forwarded byte for byte).
 * GET /v1/models is routes/models.ts.
 */
import { Hono } from "hono";
import { RouterError } from "../../core/errors.ts";
import { readJsonRequest } from "../request-json.ts";
import type { RequestLimits } from "../deps.ts";
import type { PairForward } from "../disagg/pair-forward.ts";
import { SESSION_HEADERS } from "../proxy/headers.ts";
import type { ForwardInput } from "../proxy/forward.ts";
import {
  promptFieldsOf,
  readPrompt,
  type PromptTokenizers,
} from "../prompt-route/prompt-routing.ts";
import { modelField } from "../prompt-route/model-routing.ts";
import { sessionControlOf } from "../../router/index.ts";
import { outputTokensAsked } from "../../protect/output-budget.ts";
import { promptCharge } from "../../protect/prompt-charge.ts";
import { refuseKvSteering } from "../../protect/kv-steering.ts";
import type { ModelForward } from "../proxy/model-forward.ts";
import type { RequestObservers } from "../../observe/request-observers.ts";

export interface CompletionDeps {
  readonly limits: RequestLimits;
  /** The models' tokenizers, for the tokens a request is routed on. */
  readonly tokenizers?: PromptTokenizers;
  readonly dispatch: ModelForward;
  /** --disagg: completions are split into a prefill and a decode request. */
  readonly split?: PairForward;
  /** Each request's observation (src/observe): the tokenize span, the prompt for the access line. */
  readonly requests?: RequestObservers;
}

/** The session header's id; longer than `maxLength`: 400 naming the header (ids are held as keys). */
function sessionIdOf(headers: Headers, maxLength: number | undefined): string | undefined {
  for (const name of SESSION_HEADERS) {
    const v = headers.get(name);
    if (v === null || v.trim() === "") continue;
    const id = v.trim();
    if (maxLength !== undefined && id.length > maxLength) {
      throw new RouterError(
        "invalid_request",
        `${name}: session id is ${id.length} characters; the limit is ${maxLength} (--max-session-id-length)`,
        name,
      );
    }
    return id;
  }
  return undefined;
}

/** A handler of a raw Request; throws RouterError for the app's error mapping. */
export type RequestHandler = (req: Request) => Promise<Response>;

/** The proxied endpoints as plain Request handlers (Hono routes them; Bun.serve may too). */
export function completionHandlers(d: CompletionDeps): {
  completions: RequestHandler;
  chat: RequestHandler;
} {
  const { dispatch, split } = d;

  const handle = (path: string, kind: "completions" | "chat") => async (req: Request) => {
    const { body, json } = await readJsonRequest(req, d.limits, promptFieldsOf(kind));
    // Where an engine fetches KV from is the router's to say (protect/kv-steering.ts).
    refuseKvSteering(json, d.limits.trustKvTransferParams === true);
    const model = modelField(json.model, false);
    if (json.stream !== undefined && typeof json.stream !== "boolean") {
      throw new RouterError("invalid_request", "stream: must be a boolean", "stream");
    }
    // vLLM's `priority` (lower is served first): orders the admission queue; forwarded as is.
    if (
      json.priority !== undefined &&
      (typeof json.priority !== "number" || !Number.isSafeInteger(json.priority))
    ) {
      throw new RouterError(
        "invalid_request",
        "priority: must be an integer (lower is served first)",
        "priority",
      );
    }
    const obs = d.requests?.of(req);
    const prompt = await (obs !== undefined
      ? obs.tokenize(() => readPrompt(d.tokenizers, json, kind, d.limits.maxPromptChars))
      : readPrompt(d.tokenizers, json, kind, d.limits.maxPromptChars));
    const sessionControl = sessionControlOf(json);
    const input: ForwardInput = {
      request: req,
      path,
      body,
      tokens: prompt.tokens,
      approximate: prompt.approximate,
      // nvext.session_control takes the place of the header session.
      sessionId: sessionControl ? undefined : sessionIdOf(req.headers, d.limits.maxSessionIdLength),
      sessionControl,
      priority: json.priority as number | undefined,
      stream: json.stream === true,
      streamOptions: { value: json.stream_options },
      maxOutputTokens: outputTokensAsked(path, json),
      promptCharge: () => promptCharge(path, json, prompt.exactTokens, prompt.tokens.length),
    };
    obs?.prompt({
      model: json.model,
      tokens: prompt.tokens.length,
      sessionId: sessionControl?.sessionId ?? input.sessionId,
    });
    return split !== undefined ? split(input, json, model) : dispatch(input, model);
  };

  return {
    completions: handle("/v1/completions", "completions"),
    chat: handle("/v1/chat/completions", "chat"),
  };
}

export function openAiRoutes(d: CompletionDeps): Hono {
  const app = new Hono();
  const h = completionHandlers(d);
  app.post("/v1/completions", (c) => h.completions(c.req.raw));
  app.post("/v1/chat/completions", (c) => h.chat(c.req.raw));
  return app;
}
