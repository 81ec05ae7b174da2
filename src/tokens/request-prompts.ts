/**
 * The prompt tokens of an OpenAI completions / chat request body exactly as vLLM prefills
 * them (vLLM main 2026: serving_completion / serving_chat through the renderer):
 * - chat: messages through the model's chat template (EngineTokenizer.encodeChat), encoded
 *   with the body's add_special_tokens (default false for chat);
 * - completions: `prompt` as a string (encoded with add_special_tokens, default true), token
 *   ids (as is), or a batch of either (one RequestPrompt per element).
 * A chat with image/audio parts is encoded without them, marked `exact: false`.
 * `truncate_prompt_tokens` keeps the last N tokens, as vLLM does.
 * Without a tokenizer, token ids are still exact; text becomes its UTF-8 bytes (tokenize.ts),
 * marked `exact: false` — good for approximate routing only. Bad input: RouterError naming the field.
 */
import { RouterError } from "../core/errors.ts";
import type { ChatTemplateRequest, EngineTokenizer } from "./engine-tokenizer.ts";
import { withoutMediaParts } from "./conversation.ts";
import { chatPromptTokens } from "./prompt.ts";
import { tokenizeText } from "./tokenize.ts";
import { invalid, tokenIds } from "./token-ids.ts";

export interface RequestPrompt {
  tokens: Uint32Array;
  /** true: the engine's token ids (given, or made by the model's tokenizer); false: UTF-8 bytes. */
  exact: boolean;
}

function addSpecialTokens(body: Record<string, unknown>, dflt: boolean): boolean {
  const v = body.add_special_tokens;
  if (v === undefined || v === null) return dflt;
  if (typeof v !== "boolean") invalid("add_special_tokens", "must be a boolean");
  return v;
}

/**
 * vLLM's `truncate_prompt_tokens` (serving_engine `_normalize_prompt_*_to_input`): keep the
 * last N tokens (the tokenizer is loaded with truncation_side "left"); -1 means the model's
 * max length, which the router does not know (treated as no truncation: a longer prompt is
 * rejected by the engine anyway). undefined: none.
 */
function truncation(body: Record<string, unknown>): number | undefined {
  const v = body.truncate_prompt_tokens;
  if (v === undefined || v === null || v === -1) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1)
    invalid("truncate_prompt_tokens", "must be an integer >= 1, or -1");
  return v;
}

function lastN(tokens: Uint32Array, n: number | undefined): Uint32Array {
  return n === undefined || tokens.length <= n ? tokens : tokens.slice(tokens.length - n);
}

/**
 * HF truncation with special tokens: the text is cut from the left to leave room for what
 * the post-processor adds (BOS...), which stays. Exact when the specials are a prefix.
 */
async function truncatedText(
  text: string,
  n: number,
  tok: EngineTokenizer,
): Promise<RequestPrompt> {
  const full = await tok.encodeText(text, true);
  if (full.length <= n) return { tokens: full, exact: true };
  const plain = await tok.encodeText(text, false);
  const k = full.length - plain.length;
  const prefixOnly = k >= 0 && k < n && full.subarray(k).every((t, i) => t === plain[i]);
  if (!prefixOnly) return { tokens: lastN(full, n), exact: false };
  const out = new Uint32Array(n);
  out.set(full.subarray(0, k));
  out.set(plain.subarray(plain.length - (n - k)), k);
  return { tokens: out, exact: true };
}

function nonEmpty(p: RequestPrompt, field: string): RequestPrompt {
  if (p.tokens.length === 0) invalid(field, "must not be empty (it has no tokens)");
  return p;
}

async function textPrompt(
  text: string,
  field: string,
  add: boolean,
  tok: EngineTokenizer | undefined,
  truncate: number | undefined,
): Promise<RequestPrompt> {
  if (tok === undefined)
    return nonEmpty({ tokens: lastN(tokenizeText(text), truncate), exact: false }, field);
  if (truncate !== undefined && add)
    return nonEmpty(await truncatedText(text, truncate, tok), field);
  return nonEmpty({ tokens: lastN(await tok.encodeText(text, add), truncate), exact: true }, field);
}

async function completionPrompts(
  body: Record<string, unknown>,
  tok: EngineTokenizer | undefined,
): Promise<RequestPrompt[]> {
  const prompt = body.prompt;
  const add = addSpecialTokens(body, true);
  const truncate = truncation(body);
  if (typeof prompt === "string") return [await textPrompt(prompt, "prompt", add, tok, truncate)];
  if (!Array.isArray(prompt))
    invalid("prompt", "must be a string, an array of token ids, or an array of those");
  if (prompt.length === 0) invalid("prompt", "must not be empty");
  if (typeof prompt[0] === "number")
    return [{ tokens: lastN(tokenIds(prompt, "prompt"), truncate), exact: true }];
  const out: RequestPrompt[] = [];
  for (let i = 0; i < prompt.length; i++) {
    const p: unknown = prompt[i];
    const field = `prompt[${i}]`;
    if (typeof p === "string") out.push(await textPrompt(p, field, add, tok, truncate));
    else if (Array.isArray(p))
      out.push({ tokens: lastN(tokenIds(p, field), truncate), exact: true });
    else invalid(field, "must be a string or an array of token ids");
  }
  return out;
}

async function chatPrompts(
  body: Record<string, unknown>,
  tok: EngineTokenizer | undefined,
): Promise<RequestPrompt[]> {
  if (body.messages === undefined) invalid("messages", "is required");
  const add = addSpecialTokens(body, false);
  const truncate = truncation(body);
  // Image/audio parts: the engine expands them with its processor, which the router does not
  // run; the text around them still routes, approximately.
  const { messages, dropped } = withoutMediaParts(body.messages);
  const req = (dropped ? { ...body, messages } : body) as unknown as ChatTemplateRequest;
  if (tok === undefined)
    return [
      nonEmpty(
        { tokens: lastN(chatPromptTokens(req.messages), truncate), exact: false },
        "messages",
      ),
    ];
  const ids = await tok.encodeChat(req, add);
  // With add_special_tokens the post-processor's tokens would survive the cut; rare: approximate.
  const exact = !dropped && !(add && truncate !== undefined && ids.length > truncate);
  return [nonEmpty({ tokens: lastN(ids, truncate), exact }, "messages")];
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
