/**
 * The tokens a request is routed on, and whether they are the engine's own.
 * - Token-id prompts are the engine's tokens: exact (precise index, the engines' KV events).
 * - Text (completions `prompt`, chat `messages`, embeddings `input`, responses `input`,
 *   SGLang `text`) is tokenized with the model's tokenizer when the router has one (exact),
 *   else one token per UTF-8 byte and marked approximate: routed on the router's own past
 *   decisions, never matched against the engines' events (they would never match).
 * - Chat content parts other than text (images, audio) are proxied untouched but not hashed:
 *   their placeholder tokens are the engine's business, so only the text is routed on.
 * - A batch of prompts is routed on its first prompt; routes with no readable prompt
 *   (score, rerank, detokenize) get no tokens: least loaded.
 * It reads bodies only; it does not validate the fields it does not route on.
 */
import { RouterError } from "../../core/errors.ts";
import { chatPromptTokens, completionPromptTokens } from "../../tokens/index.ts";

export interface RoutingPrompt {
  readonly tokens: Uint32Array;
  /** True when `tokens` are not the engine's (text without a tokenizer). */
  readonly approximate: boolean;
}

/** What the request's body holds a prompt in. */
export type PromptKind = "completions" | "chat" | "embeddings" | "responses" | "generate" | "none";

/**
 * No readable prompt: one placeholder token, shorter than a block, so nothing is matched or
 * learned and the scheduler (which needs a token) picks by load alone.
 */
const NONE: RoutingPrompt = { tokens: Uint32Array.of(0), approximate: true };

const isText = (p: unknown): boolean => typeof p === "string";

/** The first prompt of a completions `prompt` (a string, token ids, or a batch of either). */
function firstPrompt(prompt: unknown, field: string): unknown {
  if (!Array.isArray(prompt) || prompt.length === 0 || typeof prompt[0] === "number") return prompt;
  const first = prompt[0];
  if (typeof first !== "string" && !Array.isArray(first)) {
    throw new RouterError("invalid_request", `${field}[0]: must be a string or an array of token ids`, `${field}[0]`);
  }
  return first;
}

/** Chat messages with only their text parts (images and audio are not routed on). */
function textOnly(messages: unknown): unknown {
  if (!Array.isArray(messages)) return messages;
  return messages.map((m: unknown) => {
    const msg = m as { content?: unknown } | null;
    if (msg === null || typeof msg !== "object" || !Array.isArray(msg.content)) return m;
    const parts = msg.content as ({ type?: unknown; text?: unknown } | null)[];
    // Responses' `input_text` is chat's `text`.
    const texts = parts.filter((p) => p?.type === "text" || p?.type === "input_text").map((p) => ({ type: "text", text: p!.text }));
    return { ...msg, content: texts };
  });
}

function text(prompt: unknown, field: string): RoutingPrompt {
  const first = firstPrompt(prompt, field);
  try {
    return { tokens: completionPromptTokens(first), approximate: isText(first) };
  } catch (e) {
    throw e instanceof RouterError && field !== "prompt" ? new RouterError("invalid_request", e.message.replace(/^prompt/, field), field) : e;
  }
}

/** The routing prompt of a body; throws RouterError("invalid_request") naming a bad prompt field. */
export function routingPrompt(body: Record<string, unknown>, kind: PromptKind): RoutingPrompt {
  switch (kind) {
    case "completions":
      if (body.prompt === undefined) throw new RouterError("invalid_request", "prompt: is required", "prompt");
      return nonEmpty(text(body.prompt, "prompt"), "prompt");
    case "chat":
      if (body.messages === undefined) throw new RouterError("invalid_request", "messages: is required", "messages");
      return nonEmpty({ tokens: chatPromptTokens(textOnly(body.messages)), approximate: true }, "messages");
    case "embeddings":
      return body.input === undefined ? NONE : text(body.input, "input");
    case "responses":
      if (typeof body.input === "string") return text(body.input, "input");
      if (Array.isArray(body.input) && body.input.length > 0) return { tokens: chatPromptTokens(textOnly(body.input)), approximate: true };
      return NONE;
    case "generate":
      if (typeof body.text === "string") return text(body.text, "text");
      if (Array.isArray(body.input_ids)) return text(body.input_ids, "input_ids");
      return NONE;
    case "none":
      return NONE;
  }
}

function nonEmpty(p: RoutingPrompt, field: string): RoutingPrompt {
  if (p.tokens.length === 0) throw new RouterError("invalid_request", `${field}: must not be empty`, field);
  return p;
}

/**
 * The routing prompt of a request body. Async because the model's tokenizer (when the router
 * has one, issue 11 §1) may be asynchronous.
 */
export async function readPrompt(_d: object, body: Record<string, unknown>, kind: PromptKind): Promise<RoutingPrompt> {
  return routingPrompt(body, kind);
}
