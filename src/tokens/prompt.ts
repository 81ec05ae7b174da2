/**
 * Prompt -> token ids for an OpenAI request body, identical on router and engine.
 * Completions: `prompt` is a string, an array of token ids (used as is), or a one-element
 * array of either. Chat: `messages` through the fixed template of tokenize.ts.
 * Throws RouterError("invalid_request") naming the bad field; never does I/O.
 */
import { RouterError } from "../core/errors.ts";
import { type ChatMessage, tokenizeChat, tokenizeText } from "./tokenize.ts";
import { invalid, tokenIds } from "./token-ids.ts";

/** Tokens of a completions `prompt` field. */
export function completionPromptTokens(prompt: unknown): Uint32Array {
  if (typeof prompt === "string") return tokenizeText(prompt);
  if (!Array.isArray(prompt)) invalid("prompt", "must be a string or an array of token ids");
  if (prompt.length === 0) invalid("prompt", "must not be empty");
  const first = prompt[0];
  if (typeof first === "number") return tokenIds(prompt, "prompt");
  // A batch of prompts: strings or token arrays. Only a batch of one is routable.
  if (prompt.length > 1)
    invalid("prompt", `only one prompt per request is supported (got ${prompt.length})`);
  if (typeof first === "string") return tokenizeText(first);
  if (Array.isArray(first)) return tokenIds(first, "prompt[0]");
  return invalid("prompt[0]", "must be a string or an array of token ids");
}

/** Text of one chat message's `content`: a string, null, or an array of `{type:"text", text}` parts. */
function contentText(content: unknown, field: string): string {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  if (!Array.isArray(content)) invalid(field, "must be a string or an array of content parts");
  let text = "";
  content.forEach((part: unknown, i) => {
    const p = part as { type?: unknown; text?: unknown } | null;
    if (p === null || typeof p !== "object" || p.type !== "text" || typeof p.text !== "string") {
      invalid(`${field}[${i}]`, 'only {"type":"text","text":...} parts are supported');
    }
    text += p.text;
  });
  return text;
}

/** Tokens of a chat `messages` field; `continueFinal`: the body's `continue_final_message` (tokenize.ts renderChat). */
export function chatPromptTokens(messages: unknown, continueFinal = false): Uint32Array {
  if (!Array.isArray(messages) || messages.length === 0)
    invalid("messages", "must be a non-empty array");
  const msgs: ChatMessage[] = messages.map((m: unknown, i) => {
    const msg = m as { role?: unknown; content?: unknown } | null;
    if (
      msg === null ||
      typeof msg !== "object" ||
      typeof msg.role !== "string" ||
      msg.role === ""
    ) {
      invalid(`messages[${i}].role`, "must be a non-empty string");
    }
    return { role: msg.role, content: contentText(msg.content, `messages[${i}].content`) };
  });
  return tokenizeChat(msgs, continueFinal);
}

/**
 * Tokens of a completions or chat body: `messages` (chat) wins over `prompt` (completions).
 * The result is never empty.
 */
export function promptTokens(body: unknown): Uint32Array {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new RouterError("invalid_request", "request body must be a JSON object");
  }
  const b = body as { messages?: unknown; prompt?: unknown };
  let tokens: Uint32Array;
  if (b.messages !== undefined) tokens = chatPromptTokens(b.messages);
  else if (b.prompt !== undefined) tokens = completionPromptTokens(b.prompt);
  else
    throw new RouterError(
      "invalid_request",
      "request body needs `prompt` (completions) or `messages` (chat)",
    );
  if (tokens.length === 0) invalid("prompt", "must not be empty");
  return tokens;
}
