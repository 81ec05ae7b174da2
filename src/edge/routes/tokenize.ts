/**
 * POST /tokenize in vLLM's own shapes (vllm/entrypoints/openai/protocol.py, v0.10:
 * TokenizeCompletionRequest {model, prompt, add_special_tokens=true} or TokenizeChatRequest
 * {model, messages, add_generation_prompt=true, add_special_tokens=false, ...} ->
 * TokenizeResponse {count, max_model_len, tokens}), answered by the router from the model's
 * tokenizer, so an operator can diff it with the engine's own /tokenize. Without a tokenizer
 * for the model the request is proxied to a worker serving it (the engine answers).
 */
import { checkPromptSize } from "../prompt-route/prompt-size.ts";
import { RouterError } from "../../core/errors.ts";
import { readJsonRequest } from "../request-json.ts";
import { modelField, modelRoute } from "../prompt-route/model-routing.ts";
import type { FleetView, RequestLimits } from "../deps.ts";
import type { ModelForward } from "../proxy/model-forward.ts";

const TOKENIZE_PROMPT_FIELDS = ["messages", "prompt"] as const;

function addSpecial(body: Record<string, unknown>, dflt: boolean): boolean {
  const v = body.add_special_tokens;
  if (v === undefined || v === null) return dflt;
  if (typeof v !== "boolean")
    throw new RouterError(
      "invalid_request",
      "add_special_tokens: must be a boolean",
      "add_special_tokens",
    );
  return v;
}

/** The request limits, the models and tokenizers (404 and the answer), and the dispatch for a model without a tokenizer. */
export interface TokenizeDeps {
  readonly limits: RequestLimits;
  readonly fleet: FleetView;
  readonly dispatch: ModelForward;
}

export function tokenizeHandler(d: TokenizeDeps) {
  const { fleet } = d;
  return async (req: Request): Promise<Response> => {
    // Both prompt fields are checked off the loop for a large body; in-thread below as before.
    const { body, json } = await readJsonRequest(req, d.limits, TOKENIZE_PROMPT_FIELDS);
    // An unknown model is the same 404 as on every other route.
    const model = modelField(json.model, true);
    modelRoute(model, fleet);
    const tok = fleet.tokenizers?.forModel(json.model);
    if (tok === undefined) {
      return d.dispatch(
        { request: req, path: "/tokenize", body, tokens: Uint32Array.of(0), approximate: true },
        model,
      );
    }
    if (json.messages !== undefined)
      checkPromptSize(json.messages, "messages", d.limits.maxPromptChars);
    else checkPromptSize(json.prompt, "prompt", d.limits.maxPromptChars);
    let tokens: Uint32Array;
    if (json.messages !== undefined) {
      const chat = { add_generation_prompt: true, ...json, messages: json.messages };
      tokens = await tok.encodeChat(chat, addSpecial(json, false));
    } else if (typeof json.prompt === "string") {
      tokens = await tok.encodeText(json.prompt, addSpecial(json, true));
    } else {
      throw new RouterError(
        "invalid_request",
        "prompt: a string `prompt` or `messages` is required",
        "prompt",
      );
    }
    const ids = Array.from(tokens);
    const maxModelLen =
      fleet.tokenizers!.maxModelLen(typeof json.model === "string" ? json.model : undefined) ??
      null;
    return new Response(
      JSON.stringify({ count: ids.length, max_model_len: maxModelLen, tokens: ids }),
      {
        headers: { "content-type": "application/json", "x-switchyard-tokenizer": tok.source },
      },
    );
  };
}
