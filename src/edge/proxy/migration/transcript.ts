/**
 * What one streamed answer has passed to the client, in the engine's units where it gives
 * them: per choice its text, its token ids (vLLM's `token_ids` with `return_token_ids`), its
 * finish reason and whether a role or a tool-call delta went out; the stream's id, created and
 * model; the last SSE event id. Built from the OpenAI chunks (completions and chat) of the
 * events the client got, in order. Pure: it reads parsed chunks and keeps counts.
 *
 * It is what a continuation on another engine is built from (continuation.ts) and what its
 * chunks are spliced onto (splice.ts). It keeps nothing of whole answers: only streams are
 * migrated.
 */

export interface ChoiceSent {
  /** The text passed so far, in pieces (joined once, when a continuation is built). */
  readonly parts: string[];
  /** UTF-16 units of `parts`. */
  chars: number;
  /** Token ids the engine returned for that text; undefined once a chunk came without them. */
  tokenIds: number[] | undefined;
  /** Output tokens: token ids, or logprobs entries, where the engine sends them; else chunks that carried text (one token each). */
  outputChunks: number;
  finish: string | null;
  /** A tool-call delta went out: a half-sent call cannot be continued by another engine. */
  toolCalls: boolean;
  /** Logprobs went out for this choice. */
  logprobs: boolean;
}

/** The usage object of an OpenAI chunk, as far as the splice reads it. */
export interface WireUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  [k: string]: unknown;
}

export class Transcript {
  id: string | undefined;
  created: number | undefined;
  model: string | undefined;
  /** The last `id:` field of an event passed on (SSE's Last-Event-ID). */
  lastEventId: string | undefined;
  /** The engine's `[DONE]` passed on: the answer is whole. */
  done = false;
  /** Why this stream cannot be continued elsewhere (set once; later chunks change nothing). */
  refused: string | undefined;
  readonly choices = new Map<number, ChoiceSent>();
  /** UTF-16 units of text kept over every choice (the per-request bound is the caller's). */
  chars = 0;

  /** One `data:` payload that went to the client. False: it is not an OpenAI chunk (malformed). */
  data(payload: string): boolean {
    if (payload === "[DONE]") {
      this.done = true;
      return true;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(payload);
    } catch {
      return false;
    }
    return this.chunk(chunk);
  }

  /** One parsed chunk that went to the client. */
  chunk(chunk: unknown): boolean {
    if (chunk === null || typeof chunk !== "object" || Array.isArray(chunk)) return false;
    const c = chunk as {
      id?: unknown;
      created?: unknown;
      model?: unknown;
      choices?: unknown;
      error?: unknown;
    };
    if (c.error !== undefined) return false;
    if (this.id === undefined && typeof c.id === "string") this.id = c.id;
    if (this.created === undefined && typeof c.created === "number") this.created = c.created;
    if (this.model === undefined && typeof c.model === "string") this.model = c.model;
    if (c.choices === undefined) return true;
    if (!Array.isArray(c.choices)) return false;
    for (const raw of c.choices) {
      if (raw === null || typeof raw !== "object") return false;
      const ch = raw as {
        index?: unknown;
        text?: unknown;
        delta?: { content?: unknown; tool_calls?: unknown; reasoning_content?: unknown } | null;
        finish_reason?: unknown;
        token_ids?: unknown;
        logprobs?: unknown;
      };
      const index = typeof ch.index === "number" ? ch.index : 0;
      const s = this.#choice(index);
      const text =
        typeof ch.text === "string"
          ? ch.text
          : typeof ch.delta?.content === "string"
            ? ch.delta.content
            : "";
      if (ch.delta?.tool_calls !== undefined && ch.delta.tool_calls !== null) s.toolCalls = true;
      // Reasoning text is not part of the message a continuation could send back.
      if (typeof ch.delta?.reasoning_content === "string" && ch.delta.reasoning_content !== "")
        this.refuse("reasoning deltas were sent");
      if (ch.logprobs !== undefined && ch.logprobs !== null) s.logprobs = true;
      const ids = Array.isArray(ch.token_ids) ? (ch.token_ids as number[]) : undefined;
      if (text !== "") {
        s.parts.push(text);
        s.chars += text.length;
        this.chars += text.length;
      }
      if (ids !== undefined && s.tokenIds !== undefined) for (const t of ids) s.tokenIds.push(t);
      else if (text !== "") s.tokenIds = undefined;
      if (text !== "" || (ids !== undefined && ids.length > 0))
        s.outputChunks += ids !== undefined ? ids.length : (logprobEntries(ch.logprobs) ?? 1);
      if (typeof ch.finish_reason === "string") s.finish = ch.finish_reason;
    }
    return true;
  }

  /** An `id:` field went to the client. */
  eventId(id: string): void {
    this.lastEventId = id;
  }

  refuse(why: string): void {
    this.refused ??= why;
  }

  /** Every choice that started has finished (a finish reason went out). */
  get finished(): boolean {
    if (this.choices.size === 0) return false;
    for (const c of this.choices.values()) if (c.finish === null) return false;
    return true;
  }

  #choice(index: number): ChoiceSent {
    let s = this.choices.get(index);
    if (s === undefined) {
      s = {
        parts: [],
        chars: 0,
        tokenIds: [],
        outputChunks: 0,
        finish: null,
        toolCalls: false,
        logprobs: false,
      };
      this.choices.set(index, s);
    }
    return s;
  }
}

/** One choice's text so far. */
export function textOf(c: ChoiceSent): string {
  if (c.parts.length > 1) c.parts.splice(0, c.parts.length, c.parts.join(""));
  return c.parts[0] ?? "";
}

/** Tokens a chunk's logprobs describe (completions: `tokens`; chat: `content`), when it has them. */
function logprobEntries(lp: unknown): number | undefined {
  if (lp === null || typeof lp !== "object") return undefined;
  const l = lp as { tokens?: unknown; content?: unknown };
  const list = Array.isArray(l.tokens)
    ? l.tokens
    : Array.isArray(l.content)
      ? l.content
      : undefined;
  return list !== undefined && list.length > 0 ? list.length : undefined;
}
