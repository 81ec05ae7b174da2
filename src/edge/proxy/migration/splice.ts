/**
 * Rewrites a continuation's chunks so the client reads one OpenAI stream: the first stream's
 * `id`, `created` and `model`; no second role chunk (chat); usage summed with the prompt counted
 * once (the continuation's prompt is the first prompt plus the `produced` tokens already sent,
 * so those move from prompt_tokens to completion_tokens); a completions choice's logprobs
 * `text_offset` continued from the text already sent; `[DONE]` passed once, from the
 * engine that ends the answer. Every chunk it passes is also added to the transcript, so a
 * second move builds on all that was sent. Pure.
 */
import type { Transcript, WireUsage } from "./transcript.ts";

export type SpliceResult =
  /** The payload to send (rewritten), or undefined to drop the chunk. */
  | { readonly ok: true; readonly payload: string | undefined }
  | { readonly ok: false; readonly why: string };

const DROP: SpliceResult = { ok: true, payload: undefined };

export class Splicer {
  constructor(
    private readonly t: Transcript,
    /** Output tokens sent before this continuation started. */
    private readonly produced: number,
    /**
     * Characters of text sent before it (code points, as vLLM's `len(delta_text)`): an engine
     * starts a stream's completions logprobs `text_offset` at 0 (`initial_text_offset=
     * previous_text_lens[i]`, vllm/entrypoints/openai/completion/serving.py at
     * 030ea52effcb05071543c8c42b8f0145e94cee43), the client's stream goes on from here.
     */
    private readonly sentChars = 0,
  ) {}

  data(payload: string): SpliceResult {
    if (payload === "[DONE]") {
      this.t.done = true;
      return { ok: true, payload };
    }
    let chunk: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(payload);
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
        return { ok: false, why: "a chunk that is not an object" };
      chunk = parsed as Record<string, unknown>;
    } catch {
      return { ok: false, why: "a chunk that is not JSON" };
    }
    if (chunk.error !== undefined || chunk.object === "error")
      return { ok: false, why: "an error event" };
    const t = this.t;
    if (t.id !== undefined) chunk.id = t.id;
    if (t.created !== undefined) chunk.created = t.created;
    if (t.model !== undefined) chunk.model = t.model;
    if (Array.isArray(chunk.choices)) {
      const kept = (chunk.choices as Record<string, unknown>[]).filter((c) => keepChoice(c));
      if (this.sentChars > 0) for (const c of kept) shiftTextOffset(c, this.sentChars);
      if (kept.length === 0 && chunk.usage == null && (chunk.choices as unknown[]).length > 0)
        return DROP;
      chunk.choices = kept;
    }
    if (chunk.usage !== undefined && chunk.usage !== null && typeof chunk.usage === "object")
      chunk.usage = this.#usage(chunk.usage as WireUsage);
    if (!t.chunk(chunk)) return { ok: false, why: "a chunk that is not an OpenAI chunk" };
    return { ok: true, payload: JSON.stringify(chunk) };
  }

  #usage(u: WireUsage): WireUsage {
    const out: WireUsage = { ...u };
    if (typeof u.prompt_tokens === "number")
      out.prompt_tokens = Math.max(0, u.prompt_tokens - this.produced);
    if (typeof u.completion_tokens === "number")
      out.completion_tokens = u.completion_tokens + this.produced;
    if (typeof out.prompt_tokens === "number" && typeof out.completion_tokens === "number")
      out.total_tokens = out.prompt_tokens + out.completion_tokens;
    const details = u.prompt_tokens_details as { cached_tokens?: unknown } | null | undefined;
    if (
      details &&
      typeof details.cached_tokens === "number" &&
      typeof out.prompt_tokens === "number"
    ) {
      out.prompt_tokens_details = {
        ...details,
        cached_tokens: Math.min(details.cached_tokens, out.prompt_tokens),
      };
    }
    return out;
  }
}

/** A chat choice's role announcement goes once, from the first engine: its role is dropped, and a choice left empty with it. */
function keepChoice(c: Record<string, unknown>): boolean {
  const delta = c.delta as Record<string, unknown> | undefined | null;
  if (delta === undefined || delta === null || delta.role === undefined) return true;
  delete delta.role;
  const empty =
    (delta.content === undefined || delta.content === "" || delta.content === null) &&
    delta.tool_calls == null &&
    delta.reasoning_content == null;
  return !(empty && c.finish_reason == null && c.logprobs == null);
}

/** A completions choice's logprobs `text_offset`, moved on by the text sent before the continuation. */
function shiftTextOffset(c: Record<string, unknown>, by: number): void {
  const lp = c.logprobs as { text_offset?: unknown } | null | undefined;
  if (lp === null || typeof lp !== "object" || !Array.isArray(lp.text_offset)) return;
  lp.text_offset = (lp.text_offset as unknown[]).map((o) => (typeof o === "number" ? o + by : o));
}
