/**
 * How the simulated engine turns prompts into token ids. Without `--tokenizer`: one token per
 * UTF-8 byte and the fixed chat template of src/tokens/tokenize.ts (what the router does
 * without a tokenizer). With one: the model's Hugging Face tokenizer and chat template
 * (src/tokens, the same code the router uses), so KV events carry the model's real token ids.
 * It tokenizes only; it does not validate the rest of a body.
 */
import { RouterError } from "../core/errors.ts";
import { completionPromptTokens, chatPromptTokens } from "../tokens/prompt.ts";
import { tokenizeText } from "../tokens/tokenize.ts";
import { loadEngineTokenizer } from "../tokens/load.ts";
import { requestPrompts } from "../tokens/request-prompts.ts";

export interface MockerTokenizer {
  /** "bytes", or the tokenizer directory. */
  readonly source: string;
  /** Every prompt of a completions `prompt` (a string, token ids, or a batch of either). */
  completionPrompts(prompt: unknown): Promise<Uint32Array[]>;
  /** A chat body's `messages` through the chat template. */
  chatPrompt(body: Record<string, unknown>): Promise<Uint32Array>;
  /** Plain text (embeddings, scores, SGLang's `text`). */
  text(text: string, addSpecialTokens: boolean): Promise<Uint32Array>;
  /** Token ids back to text (/detokenize). */
  decode(ids: readonly number[]): Promise<string>;
}

function invalid(field: string, message: string): never {
  throw new RouterError("invalid_request", `${field}: ${message}`, field);
}

/** A completions `prompt` batch: each element a string or token ids. */
export function batchItems(prompt: unknown): unknown[] {
  if (typeof prompt === "string") return [prompt];
  if (!Array.isArray(prompt) || prompt.length === 0)
    invalid("prompt", "must be a non-empty string, array of token ids, or batch of either");
  if (typeof prompt[0] === "number") return [prompt];
  return prompt;
}

const utf8 = new TextDecoder();

/** Chat messages with their text parts only: a real engine would insert media placeholders here. */
function textParts(messages: unknown): unknown {
  if (!Array.isArray(messages)) return messages;
  return messages.map((m: unknown) => {
    const msg = m as { content?: unknown } | null;
    if (msg === null || typeof msg !== "object" || !Array.isArray(msg.content)) return m;
    return {
      ...msg,
      content: (msg.content as ({ type?: unknown } | null)[]).filter((p) => p?.type === "text"),
    };
  });
}

/** One token per UTF-8 byte (the router's tokenizer-less view). */
export const byteTokenizer: MockerTokenizer = {
  source: "bytes",
  async completionPrompts(prompt) {
    return batchItems(prompt).map((p, i) => {
      try {
        return completionPromptTokens(p);
      } catch (e) {
        // The single-prompt parser names `prompt`; name the batch element instead.
        throw e instanceof RouterError
          ? new RouterError("invalid_request", `prompt[${i}]: ${e.message}`, `prompt[${i}]`)
          : e;
      }
    });
  },
  async chatPrompt(body) {
    return chatPromptTokens(textParts(body.messages), body.continue_final_message === true);
  },
  async text(text) {
    return tokenizeText(text);
  },
  async decode(ids) {
    return utf8.decode(Uint8Array.from(ids, (t) => t & 0xff));
  },
};

/** A Hugging Face tokenizer directory as the engine's tokenizer (vLLM's tokenization, src/tokens). */
export async function loadMockerTokenizer(dir: string): Promise<MockerTokenizer> {
  // The mocker is its own Bun program: the portable tokenizer with Bun's file reader, no worker pool.
  const tok = await loadEngineTokenizer(dir, {
    impl: "pure",
    now: () => Date.now(),
    readText: (path) => Bun.file(path).text(),
  });
  return {
    source: tok.source,
    async completionPrompts(prompt) {
      return (await requestPrompts({ prompt }, "completions", tok)).map((p) => p.tokens);
    },
    async chatPrompt(body) {
      const [p] = await requestPrompts(
        { ...body, messages: textParts(body.messages) },
        "chat",
        tok,
      );
      return p!.tokens;
    },
    text: (text, addSpecialTokens) => tok.encodeText(text, addSpecialTokens),
    decode: (ids) => tok.decode(Uint32Array.from(ids)),
  };
}

/**
 * The fault `--fault-chat-template`: chat prompts get a system preamble a router's template does
 * not add (as an engine started with another `--chat-template`, or another revision's), so every
 * chat prompt is longer and its blocks are not the ones the router hashed.
 */
export function withAnotherTemplate(t: MockerTokenizer): MockerTokenizer {
  return {
    ...t,
    async chatPrompt(body) {
      const own = await t.chatPrompt(body);
      const preamble = await t.text(
        "<|system|>You are served by another template.<|end|>\n",
        false,
      );
      const out = new Uint32Array(preamble.length + own.length);
      out.set(preamble);
      out.set(own, preamble.length);
      return out;
    },
  };
}
