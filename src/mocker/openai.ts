/**
 * OpenAI-format bodies of the simulated engine: whole responses, SSE chunks, errors.
 * Streaming writes one chunk per token, so each chunk is a precomputed prefix + the
 * token's JSON string + a precomputed suffix, with no object built per token.
 */
import { openAiErrorEvent, openAiErrorJson } from "../protocol/openai-error.ts";

export type ApiKind = "completions" | "chat";

export interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  /** Disaggregated decode: KV blocks pulled from a prefill engine (absent or 0: none). */
  readonly transferredBlocks?: number;
  readonly transferredBytes?: number;
}

export function usageToWire(u: Usage): unknown {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedTokens },
    ...(u.transferredBlocks
      ? { kv_transfer_blocks: u.transferredBlocks, kv_transfer_bytes: u.transferredBytes ?? 0 }
      : {}),
  };
}

/**
 * vLLM's error body (ErrorResponse: {error: {message, type, param, code}}, `code` the HTTP
 * status as an int), which this engine imitates; `type` is the engine's own name for it.
 */
export function errorBody(status: number, message: string, type: string): string {
  return openAiErrorJson(status, message, { type, codeIsStatus: true });
}

export interface ResponseMeta {
  readonly id: string;
  /** Unix seconds. */
  readonly created: number;
  readonly model: string;
}

/** A non-streaming response. */
export function completionResponse(
  kind: ApiKind,
  m: ResponseMeta,
  text: string,
  usage: Usage,
  /** The answer's `logprobs` object as JSON (fake-logprobs.ts), when the request asked. */
  logprobs?: string,
): string {
  const lp: unknown = logprobs === undefined ? null : JSON.parse(logprobs);
  const choice =
    kind === "chat"
      ? {
          index: 0,
          message: { role: "assistant", content: text },
          logprobs: lp,
          finish_reason: "length",
        }
      : { index: 0, text, logprobs: lp, finish_reason: "length" };
  return JSON.stringify({
    id: m.id,
    object: kind === "chat" ? "chat.completion" : "text_completion",
    created: m.created,
    model: m.model,
    choices: [choice],
    usage: usageToWire(usage),
  });
}

const encoder = new TextEncoder();

/**
 * SSE chunks of one streaming response, as bytes ready to enqueue, shaped as vLLM's stream
 * generators shape them (vllm/entrypoints/openai/completion/serving.py
 * `completion_stream_generator` at vllm-project/vllm 030ea52e;
 * vllm/entrypoints/openai/chat_completion/serving.py `chat_completion_stream_generator` at
 * 006c49d4):
 * - a chat stream starts with the role chunk `delta: {role: "assistant", content: ""}`, sent
 *   when the engine's first output arrives (`if first_iteration:`), i.e. with the first token;
 * - with `continuous_usage_stats` every chunk carries `usage` {prompt_tokens,
 *   completion_tokens (so far), total_tokens} (`if include_continuous_usage: chunk.usage =
 *   UsageInfo(...)`), the role chunk with 0 completion tokens;
 * - with `include_usage` the stream ends with one more chunk, `choices: []` and the whole
 *   usage (`if include_usage: ... final_usage_chunk = ...(choices=[], usage=final_usage_info)`);
 *   without it there is no usage anywhere.
 */
export class SseWriter {
  private readonly head: string;
  private readonly tokenOpen: string;
  private readonly tokenClose: string;
  private readonly tokenCloseLast: string;

  constructor(
    private readonly kind: ApiKind,
    m: ResponseMeta,
    /** Every chunk carries the usage so far (`continuous_usage_stats`); needs the prompt's length. */
    private readonly continuous?: { readonly promptTokens: number },
    /** Each token's `logprobs` (JSON), when the request asked: `index` and the characters before it. */
    private readonly logprobs?: (text: string, index: number, textOffset: number) => string,
  ) {
    const object = kind === "chat" ? "chat.completion.chunk" : "text_completion";
    this.head = `data: {"id":${JSON.stringify(m.id)},"object":"${object}","created":${m.created},"model":${JSON.stringify(m.model)},"choices":[`;
    // The closes stop after the choices array: the chunk's usage (or none) and `}` follow.
    if (kind === "chat") {
      this.tokenOpen = `${this.head}{"index":0,"delta":{"content":`;
      this.tokenClose = `},"logprobs":null,"finish_reason":null}]`;
      this.tokenCloseLast = `},"logprobs":null,"finish_reason":"length"}]`;
    } else {
      this.tokenOpen = `${this.head}{"index":0,"text":`;
      this.tokenClose = `,"logprobs":null,"finish_reason":null}]`;
      this.tokenCloseLast = `,"logprobs":null,"finish_reason":"length"}]`;
    }
  }

  /** The end of a chunk: its running usage with continuous_usage_stats, else nothing. */
  private tail(completionTokens: number): string {
    const c = this.continuous;
    if (c === undefined) return "}\n\n";
    return `,"usage":{"prompt_tokens":${c.promptTokens},"completion_tokens":${completionTokens},"total_tokens":${c.promptTokens + completionTokens}}}\n\n`;
  }

  /** Chat only: the first chunk announces the assistant role (as vLLM does). */
  role(): Uint8Array {
    return encoder.encode(
      `${this.head}{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]${this.tail(0)}`,
    );
  }

  /** Characters of text sent (vLLM's `previous_text_lens`: a stream's text_offset starts there). */
  private sentChars = 0;

  /** Token `index` (0-based) of the answer; `last`: it ends the answer. */
  token(text: string, index: number, last: boolean): Uint8Array {
    let close = last ? this.tokenCloseLast : this.tokenClose;
    if (this.logprobs !== undefined) {
      close = close.replace(
        '"logprobs":null',
        `"logprobs":${this.logprobs(text, index, this.sentChars)}`,
      );
      this.sentChars += [...text].length;
    }
    return encoder.encode(this.tokenOpen + JSON.stringify(text) + close + this.tail(index + 1));
  }

  /** The closing usage chunk (`stream_options.include_usage`): no choices, the whole usage. */
  usage(u: Usage): Uint8Array {
    return encoder.encode(`${this.head}],"usage":${JSON.stringify(usageToWire(u))}}\n\n`);
  }

  done(): Uint8Array {
    return encoder.encode("data: [DONE]\n\n");
  }

  /** An error after the stream started (headers already sent): the engine failed, so a 500's body. */
  error(message: string, type: string): Uint8Array {
    return openAiErrorEvent(500, message, { type, codeIsStatus: true });
  }

  get isChat(): boolean {
    return this.kind === "chat";
  }
}
