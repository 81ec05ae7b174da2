/**
 * The tokens a request is routed on, and whether they are the engine's own.
 * - Token-id prompts are the engine's tokens: exact (precise index, the engines' KV events).
 * - Text (completions `prompt`, chat `messages`, embeddings `input`, responses `input`,
 *   SGLang `text`) goes through the model's tokenizer when the router has one
 *   (src/tokens requestPrompts: vLLM's template and add_special_tokens defaults): exact. Without
 *   one it is one token per UTF-8 byte, marked approximate: routed on the router's own past
 *   decisions, never matched against the engines' events (they would never match).
 * - Chat content parts other than text (images, audio) are proxied untouched but not tokenized:
 *   their placeholder tokens are the engine's business, so such a chat is routed on its text
 *   only, approximately.
 * - A batch of prompts is routed on its first prompt; routes with no readable prompt
 *   (score, rerank, detokenize) are routed by load alone.
 * It reads bodies only; it does not validate the fields it does not route on.
 */
import { RouterError } from "../../core/errors.ts";
import { chatPromptTokens, requestPrompts, type EngineTokenizer } from "../../tokens/index.ts";
import { checkPromptSize } from "./prompt-size.ts";

export interface RoutingPrompt {
  readonly tokens: Uint32Array;
  /** True when `tokens` are not the engine's (text without a tokenizer, media parts). */
  readonly approximate: boolean;
  /**
   * The engine's tokens for the whole prompt field (every prompt of a batch; a chat with its
   * tools and documents as the template renders them), when the router made them all; what
   * a tenant is charged (src/protect/prompt-charge.ts). Absent: not known exactly.
   */
  readonly exactTokens?: number;
}

/** What the request's body holds a prompt in. */
export type PromptKind = "completions" | "chat" | "embeddings" | "responses" | "generate" | "none";

/** The models' tokenizers, as a prompt needs them: the one for a request's `model` (prompt-route/tokenizers.ts). */
export interface PromptTokenizers {
  forModel(model: unknown): EngineTokenizer | undefined;
}

/**
 * No readable prompt: one placeholder token, shorter than a block, so nothing is matched or
 * learned and the scheduler (which needs a token) picks by load alone.
 */
const NONE: RoutingPrompt = { tokens: Uint32Array.of(0), approximate: true };

const MEDIA_FREE = Symbol("media-free");

/** Chat messages with only their text parts, or MEDIA_FREE when there was nothing else. */
function withoutMedia(messages: unknown): unknown {
  if (!Array.isArray(messages)) return MEDIA_FREE;
  let media = false;
  const out = messages.map((m: unknown) => {
    const msg = m as { content?: unknown } | null;
    if (msg === null || typeof msg !== "object" || !Array.isArray(msg.content)) return m;
    const parts = msg.content as ({ type?: unknown; text?: unknown } | null)[];
    // Responses' `input_text` is chat's `text`.
    const texts = parts.filter((p) => p?.type === "text" || p?.type === "input_text");
    if (texts.length !== parts.length || texts.some((p) => p!.type !== "text")) media = true;
    return { ...msg, content: texts.map((p) => ({ type: "text", text: p!.text })) };
  });
  return media ? out : MEDIA_FREE;
}

/** Rename the completions field in an error to the route's own (`input`, `text`). */
function renamed<T>(p: Promise<T>, field: string): Promise<T> {
  if (field === "prompt") return p;
  return p.catch((e: unknown) => {
    if (e instanceof RouterError && e.field?.startsWith("prompt")) {
      const f = field + e.field.slice("prompt".length);
      throw new RouterError("invalid_request", e.message.replace(/^prompt/, field), f);
    }
    throw e;
  });
}

/** A completions-style field (text, token ids, or a batch of either): its first prompt. */
async function firstOf(
  value: unknown,
  field: string,
  tok: EngineTokenizer | undefined,
): Promise<RoutingPrompt> {
  const prompts = await renamed(requestPrompts({ prompt: value }, "completions", tok), field);
  const first = prompts[0]!;
  let all = 0;
  for (const p of prompts) all += p.tokens.length;
  return {
    tokens: first.tokens,
    approximate: !first.exact,
    exactTokens: prompts.every((p) => p.exact) ? all : undefined,
  };
}

async function chat(
  body: Record<string, unknown>,
  messages: unknown,
  tok: EngineTokenizer | undefined,
): Promise<RoutingPrompt> {
  const stripped = withoutMedia(messages);
  if (stripped === MEDIA_FREE && messages === body.messages) {
    const [p] = await requestPrompts(body, "chat", tok);
    return {
      tokens: p!.tokens,
      approximate: !p!.exact,
      exactTokens: p!.exact ? p!.tokens.length : undefined,
    };
  }
  const msgs = stripped === MEDIA_FREE ? messages : stripped;
  // Media (or a Responses input): the text alone, never taken for the engine's tokens.
  const tokens =
    tok !== undefined
      ? await tok.encodeChat({ ...body, messages: msgs }, false)
      : chatPromptTokens(msgs);
  if (tokens.length === 0)
    throw new RouterError(
      "invalid_request",
      "messages: must not be empty (it has no tokens)",
      "messages",
    );
  return { tokens, approximate: true };
}

/** The fields each kind of body holds its prompt in. */
const PROMPT_FIELDS: Record<Exclude<PromptKind, "none">, readonly string[]> = {
  completions: ["prompt"],
  chat: ["messages"],
  embeddings: ["input"],
  responses: ["input"],
  generate: ["text", "input_ids"],
};

/** The fields a kind of body holds its prompt in (none for a route without one). */
export function promptFieldsOf(kind: PromptKind): readonly string[] {
  return kind === "none" ? [] : PROMPT_FIELDS[kind];
}

/**
 * The routing prompt of a request body; throws RouterError("invalid_request") naming a bad
 * prompt field, and a 413 naming it when it holds more than `maxPromptChars` characters
 * (--max-prompt-chars; prompt-size.ts; undefined: no limit).
 */
export async function readPrompt(
  tokenizers: PromptTokenizers | undefined,
  body: Record<string, unknown>,
  kind: PromptKind,
  maxPromptChars?: number,
): Promise<RoutingPrompt> {
  if (kind === "none") return NONE;
  // Before any work on it: tokenizing, hashing and booking all grow with the prompt.
  for (const field of PROMPT_FIELDS[kind]) checkPromptSize(body[field], field, maxPromptChars);
  const tok = tokenizers?.forModel(body.model);
  switch (kind) {
    case "completions":
      if (body.prompt === undefined)
        throw new RouterError("invalid_request", "prompt: is required", "prompt");
      return firstOf(body.prompt, "prompt", tok);
    case "chat":
      if (body.messages === undefined)
        throw new RouterError("invalid_request", "messages: is required", "messages");
      return chat(body, body.messages, tok);
    case "embeddings":
      return body.input === undefined ? NONE : firstOf(body.input, "input", tok);
    case "responses":
      // Routed on the input alone; `instructions` and `tools` are prefilled too (no exact count).
      if (typeof body.input === "string")
        return { ...(await firstOf(body.input, "input", tok)), exactTokens: undefined };
      // Responses items are not all chat messages (tool outputs, reasoning): route on what reads as one, else by load.
      if (Array.isArray(body.input) && body.input.length > 0)
        return chat(body, body.input, undefined).catch(() => NONE);
      return NONE;
    case "generate":
      if (typeof body.text === "string") return firstOf(body.text, "text", tok);
      if (Array.isArray(body.input_ids)) return firstOf(body.input_ids, "input_ids", tok);
      return NONE;
  }
}
