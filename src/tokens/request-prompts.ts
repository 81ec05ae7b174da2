/**
 * The prompt tokens of an OpenAI completions / chat request body exactly as vLLM prefills
 * them (vLLM main 2026: serving_completion / serving_chat through the renderer):
 * - chat: messages through the model's chat template (EngineTokenizer.encodeChat), encoded
 *   with the body's add_special_tokens (default false for chat);
 * - completions: `prompt` as a string (encoded with add_special_tokens, default true), token
 *   ids (as is), or a batch of either (one RequestPrompt per element).
 * A chat with image/audio parts is encoded without them, marked `exact: false`.
 * Without a tokenizer, token ids are still exact; text becomes its UTF-8 bytes (tokenize.ts),
 * marked `exact: false` — good for approximate routing only. Bad input: RouterError naming the field.
 */
import { RouterError } from "../core/errors.ts";
import type { ChatTemplateRequest, EngineTokenizer } from "./engine-tokenizer.ts";
import { withoutMediaParts } from "./conversation.ts";
import { chatPromptTokens } from "./prompt.ts";
import { tokenizeText } from "./tokenize.ts";

export interface RequestPrompt {
  tokens: Uint32Array;
  /** true: the engine's token ids (given, or made by the model's tokenizer); false: UTF-8 bytes. */
  exact: boolean;
}

const MAX_TOKEN_ID = 0xffffffff;

function invalid(field: string, message: string): never {
  throw new RouterError("invalid_request", `${field}: ${message}`, field);
}

function tokenIds(arr: readonly unknown[], field: string): Uint32Array {
  if (arr.length === 0) invalid(field, "must not be empty");
  const out = new Uint32Array(arr.length);
  for (let i = 0; i < arr.length; i++) {
    const t = arr[i];
    if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t > MAX_TOKEN_ID) {
      invalid(`${field}[${i}]`, "token ids must be integers in [0, 2^32)");
    }
    out[i] = t;
  }
  return out;
}

function addSpecialTokens(body: Record<string, unknown>, dflt: boolean): boolean {
  const v = body.add_special_tokens;
  if (v === undefined || v === null) return dflt;
  if (typeof v !== "boolean") invalid("add_special_tokens", "must be a boolean");
  return v;
}

function nonEmpty(p: RequestPrompt, field: string): RequestPrompt {
  if (p.tokens.length === 0) invalid(field, "must not be empty (it has no tokens)");
  return p;
}

async function textPrompt(text: string, field: string, add: boolean, tok: EngineTokenizer | undefined): Promise<RequestPrompt> {
  if (tok === undefined) return nonEmpty({ tokens: tokenizeText(text), exact: false }, field);
  return nonEmpty({ tokens: await tok.encodeText(text, add), exact: true }, field);
}

async function completionPrompts(body: Record<string, unknown>, tok: EngineTokenizer | undefined): Promise<RequestPrompt[]> {
  const prompt = body.prompt;
  const add = addSpecialTokens(body, true);
  if (typeof prompt === "string") return [await textPrompt(prompt, "prompt", add, tok)];
  if (!Array.isArray(prompt)) invalid("prompt", "must be a string, an array of token ids, or an array of those");
  if (prompt.length === 0) invalid("prompt", "must not be empty");
  if (typeof prompt[0] === "number") return [{ tokens: tokenIds(prompt, "prompt"), exact: true }];
  const out: RequestPrompt[] = [];
  for (let i = 0; i < prompt.length; i++) {
    const p: unknown = prompt[i];
    const field = `prompt[${i}]`;
    if (typeof p === "string") out.push(await textPrompt(p, field, add, tok));
    else if (Array.isArray(p)) out.push({ tokens: tokenIds(p, field), exact: true });
    else invalid(field, "must be a string or an array of token ids");
  }
  return out;
}

async function chatPrompts(body: Record<string, unknown>, tok: EngineTokenizer | undefined): Promise<RequestPrompt[]> {
  if (body.messages === undefined) invalid("messages", "is required");
  const add = addSpecialTokens(body, false);
  // Image/audio parts: the engine expands them with its processor, which the router does not
  // run; the text around them still routes, approximately.
  const { messages, dropped } = withoutMediaParts(body.messages);
  const req = (dropped ? { ...body, messages } : body) as unknown as ChatTemplateRequest;
  if (tok === undefined) return [nonEmpty({ tokens: chatPromptTokens(req.messages), exact: false }, "messages")];
  return [nonEmpty({ tokens: await tok.encodeChat(req, add), exact: !dropped }, "messages")];
}

export async function requestPrompts(
  body: Record<string, unknown>,
  kind: "completions" | "chat",
  tok: EngineTokenizer | undefined,
): Promise<RequestPrompt[]> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new RouterError("invalid_request", "request body must be a JSON object");
  }
  return kind === "chat" ? await chatPrompts(body, tok) : await completionPrompts(body, tok);
}
