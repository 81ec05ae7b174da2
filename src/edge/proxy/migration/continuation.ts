/**
 * The request a stream continues with on another engine, built from the client's body and what
 * was already sent (transcript.ts). Pure.
 *
 * - completions: the prompt plus the text so far (a token-id prompt plus the engine's token ids,
 *   when it returned them, so nothing is tokenized differently);
 * - chat: the messages plus the partial assistant message, with `continue_final_message: true`
 *   and `add_generation_prompt: false`. vLLM: ChatCompletionRequest's two fields
 *   (vllm/entrypoints/openai/chat_completion/protocol.py at d5dba2d7b0ab9b98096560c69db7126b54b14d79:
 *   "the final message in the chat is open-ended ... The model will continue this message";
 *   both true is refused). SGLang reads the same request field: with it and a final assistant
 *   message, serving_chat.py (python/sglang/srt/entrypoints/openai/serving_chat.py at
 *   0c078e6f42685e4918bd79a94a025261c7f38942) takes that message off, applies the template with
 *   the generation prompt and appends its content as the assistant prefix: the same prompt.
 * - `max_tokens` (`max_completion_tokens`) less the tokens produced, `min_tokens` likewise; seed,
 *   stop sequences and every sampling parameter as the client sent them.
 *
 * Logprobs go on (one entry per token; a completions stream's `text_offset` continued by the
 * splice, splice.ts); `prompt_logprobs` cannot (the continuation's prompt is not the client's).
 *
 * Not continued (the stream ends as it would without migration): n > 1, best_of > 1, echo,
 * prompt_logprobs,
 * guided decoding (its grammar state cannot be resumed from text), a tool call half-sent, and a
 * prompt that is not one text or one list of token ids.
 */
import { textOf, type Transcript } from "./transcript.ts";

export type ApiKind = "completions" | "chat";

export type ContinuationPlan =
  /** The body to send, and the output tokens produced before it (usage adds them back). */
  | {
      readonly kind: "continue";
      readonly body: Uint8Array;
      readonly produced: number;
      /** Characters (code points) of text sent: a completions stream's logprobs `text_offset` goes on from here. */
      readonly sentChars: number;
    }
  /** Nothing is left to write (the budget of output tokens is spent): the stream ends here. */
  | { readonly kind: "finished"; readonly produced: number }
  | { readonly kind: "refused"; readonly why: string };

/** Guided-decoding fields of vLLM and SGLang: a grammar's state cannot be rebuilt from text. */
const GUIDED = [
  "guided_json",
  "guided_regex",
  "guided_choice",
  "guided_grammar",
  "structured_outputs",
  "regex",
  "ebnf",
  "json_schema",
] as const;

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** The API a proxied path speaks, when it is one a stream can be continued on. */
export function apiKindOf(path: string): ApiKind | undefined {
  if (path === "/v1/completions") return "completions";
  if (path === "/v1/chat/completions") return "chat";
  return undefined;
}

/** Why the client's body itself rules a continuation out (read once, on the first failure). */
export function refusedByBody(b: Record<string, unknown>): string | undefined {
  if (typeof b.n === "number" && b.n > 1) return "n > 1";
  if (typeof b.best_of === "number" && b.best_of > 1) return "best_of > 1";
  if (b.echo === true) return "echo";
  // The continuation's prompt holds the text so far: its prompt logprobs would not be the client's prompt's.
  if (b.prompt_logprobs !== undefined && b.prompt_logprobs !== null) return "prompt_logprobs";
  for (const f of GUIDED) if (b[f] !== undefined && b[f] !== null) return `guided decoding (${f})`;
  const rf = b.response_format as { type?: unknown } | undefined;
  if (rf !== undefined && rf !== null && rf.type !== "text")
    return "guided decoding (response_format)";
  return undefined;
}

export function planContinuation(
  kind: ApiKind,
  original: Uint8Array,
  t: Transcript,
): ContinuationPlan {
  if (t.refused !== undefined) return { kind: "refused", why: t.refused };
  let b: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(decoder.decode(original));
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
      return { kind: "refused", why: "the body is not an object" };
    b = { ...(parsed as Record<string, unknown>) };
  } catch {
    return { kind: "refused", why: "the body is not JSON" };
  }
  const byBody = refusedByBody(b);
  if (byBody !== undefined) return { kind: "refused", why: byBody };
  if (t.choices.size > 1) return { kind: "refused", why: "more than one choice" };
  const choice = t.choices.get(0);
  if (choice !== undefined && choice.toolCalls)
    return { kind: "refused", why: "a tool call was half-sent" };
  const text = choice !== undefined ? textOf(choice) : "";
  const produced = choice === undefined ? 0 : (choice.tokenIds?.length ?? choice.outputChunks);

  const maxField =
    kind === "chat" && typeof b.max_completion_tokens === "number"
      ? "max_completion_tokens"
      : "max_tokens";
  const max = b[maxField];
  if (typeof max === "number") {
    if (max - produced <= 0) return { kind: "finished", produced };
    b[maxField] = max - produced;
  }
  if (typeof b.min_tokens === "number") b.min_tokens = Math.max(0, b.min_tokens - produced);

  if (text !== "" || (choice?.tokenIds?.length ?? 0) > 0) {
    if (kind === "completions") {
      const prompt = continuedPrompt(b.prompt, text, choice?.tokenIds);
      if (typeof prompt === "string" && prompt.startsWith("!"))
        return { kind: "refused", why: prompt.slice(1) };
      b.prompt = prompt;
    } else {
      if (!Array.isArray(b.messages)) return { kind: "refused", why: "messages is not a list" };
      const messages = [...(b.messages as unknown[])];
      const last = messages[messages.length - 1] as
        | { role?: unknown; content?: unknown }
        | undefined;
      if (
        b.continue_final_message === true &&
        last?.role === "assistant" &&
        typeof last.content === "string"
      ) {
        // The client asked to continue its own final message: the text so far extends it.
        messages[messages.length - 1] = { ...last, content: last.content + text };
      } else {
        messages.push({ role: "assistant", content: text });
      }
      b.messages = messages;
      b.continue_final_message = true;
      b.add_generation_prompt = false;
    }
  }
  let sentChars = 0;
  for (const _ of text) sentChars++;
  return { kind: "continue", body: encoder.encode(JSON.stringify(b)), produced, sentChars };
}

/** The prompt plus the text so far; a string starting with "!" says why it cannot be built. */
function continuedPrompt(
  prompt: unknown,
  text: string,
  ids: readonly number[] | undefined,
): unknown {
  if (typeof prompt === "string") return prompt + text;
  if (Array.isArray(prompt)) {
    if (prompt.length === 1 && typeof prompt[0] === "string") return [prompt[0] + text];
    if (prompt.every((x) => typeof x === "number")) {
      if (ids === undefined)
        return "!a token-id prompt, and the engine did not return its output's token ids";
      return [...(prompt as number[]), ...ids];
    }
  }
  return "!a prompt that is not one text or one list of token ids";
}
