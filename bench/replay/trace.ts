/**
 * Mooncake FAST'25 trace loading (one JSON object per line: timestamp ms, input_length,
 * output_length, hash_ids — one id per 512-token block; equal ids = equal prefix block),
 * and the deterministic token blocks that stand in for the original text.
 */
import { readFileSync } from "node:fs";

export const TRACE_BLOCK_TOKENS = 512;

export interface TraceRequest {
  readonly index: number;
  /** Arrival time in trace milliseconds. */
  readonly timestamp: number;
  readonly inputLength: number;
  readonly outputLength: number;
  readonly hashIds: readonly number[];
  /** Conversation / task the request belongs to (generated traces), sent as X-Session-ID when asked. */
  readonly sessionId?: string;
}

export function loadTrace(path: string, limit = Infinity): TraceRequest[] {
  const out: TraceRequest[] = [];
  const lines = readFileSync(path, "utf8").split("\n");
  for (const line of lines) {
    if (out.length >= limit) break;
    if (!line.trim()) continue;
    const o = JSON.parse(line) as {
      timestamp: number;
      input_length: number;
      output_length: number;
      hash_ids: number[];
      session_id?: string;
    };
    out.push({
      index: out.length,
      timestamp: o.timestamp,
      inputLength: o.input_length,
      outputLength: Math.max(1, o.output_length),
      hashIds: o.hash_ids,
      ...(o.session_id !== undefined ? { sessionId: o.session_id } : {}),
    });
  }
  return out;
}

/** Full trace blocks of a request: a partial last block can never be served from a block cache. */
export function fullBlockIds(r: TraceRequest): readonly number[] {
  return r.hashIds.slice(0, Math.floor(r.inputLength / TRACE_BLOCK_TOKENS));
}

/**
 * 512 token ids for a trace block id: the same id always gives the same tokens, different ids
 * give different tokens (xorshift32 seeded by the id). Token ids stay below 32000, like a vocab.
 */
export function blockTokens(
  id: number,
  out: Uint32Array,
  offset: number,
  count = TRACE_BLOCK_TOKENS,
): void {
  let x = (id * 2654435761 + 0x9e3779b9) >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[offset + i] = x % 32000;
  }
}

/** The request's prompt as token ids: its blocks' tokens, cut to input_length. */
export function promptTokens(r: TraceRequest): Uint32Array {
  const out = new Uint32Array(r.inputLength);
  for (let b = 0; b * TRACE_BLOCK_TOKENS < r.inputLength; b++) {
    const id = r.hashIds[b] ?? -1 - b - r.index * 4096; // ids missing at the tail: unique filler
    const start = b * TRACE_BLOCK_TOKENS;
    blockTokens(id, out, start, Math.min(TRACE_BLOCK_TOKENS, r.inputLength - start));
  }
  return out;
}

/**
 * The request's prompt as text, one byte per token (the simulated engine without a tokenizer
 * counts one token per UTF-8 byte): each block id becomes 512 deterministic lowercase letters,
 * so equal block ids give equal text and the engine's block boundaries match the trace's.
 */
export function promptText(r: TraceRequest): string {
  return tokensAsText(promptTokens(r));
}

/** Token ids as the text prompt format writes them: one lowercase letter (one byte, one engine token) each. */
export function tokensAsText(tokens: ArrayLike<number>): string {
  let s = "";
  for (let i = 0; i < tokens.length; i++) s += String.fromCharCode(97 + (tokens[i]! % 26));
  return s;
}

export function uniqueFullBlocks(trace: readonly TraceRequest[]): number {
  const s = new Set<number>();
  for (const r of trace) for (const id of fullBlockIds(r)) s.add(id);
  return s.size;
}
