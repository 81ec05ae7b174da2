/**
 * Reads an SSE answer's bytes as they pass, without decoding them or holding the stream: how
 * many `data:` events it had (the first one marks the first token, for TTFT) and how many
 * output tokens it carried, counted as the engine counts them:
 * - the stream's own `usage.completion_tokens` when it has one (vLLM and SGLang send it only
 *   with `stream_options.include_usage`, on a last chunk with `choices: []`, or on every chunk
 *   with `continuous_usage_stats`; SGLang's /generate in `meta_info`): the last value wins;
 * - otherwise the events that carried output: a non-empty `text`, `content`, `reasoning` or
 *   `reasoning_content` string, or tool calls. A chat stream's role chunk (`"content": ""`), the
 *   usage chunk (`"choices": []`), an empty finish chunk and an error event carry none: counted
 *   as tokens, they made a 32-token answer 33 (completions) or 34 (chat).
 * `data: [DONE]` is no event. A line split across chunks is kept (up to MAX_LINE bytes) until it
 * ends; a line that fits in its chunk is read in place. Keys are matched as `"key"` followed by
 * `:`, which no byte run inside a JSON string can be.
 */

const NL = 10;
const CR = 13;
const QUOTE = 34;
const COLON = 58;
const LBRACKET = 91;
const RBRACKET = 93;
const DATA = [100, 97, 116, 97, 58]; // "data:"
const DONE = [91, 68, 79, 78, 69, 93]; // "[DONE]"
/** A line longer than this is not kept whole: it counts as one event with output, its usage unread. */
const MAX_LINE = 64 * 1024;

const enc = (s: string) => new TextEncoder().encode(`"${s}"`);
const COMPLETION_TOKENS = enc("completion_tokens");
const CHOICES = enc("choices");
const TOOL_CALLS = enc("tool_calls");
/** Keys whose non-empty string value is output. */
const OUTPUT_KEYS = ["text", "content", "reasoning_content", "reasoning"].map(enc);

export class SseDataCounter {
  /** Data events seen so far ([DONE] excluded). */
  events = 0;
  /** Events that carried output (see the module comment). */
  contentEvents = 0;
  /** The last `completion_tokens` an event reported, if any did. */
  usageTokens: number | undefined;
  /** A `data: [DONE]` line was seen: nothing meaningful follows. */
  done = false;
  /** The part of a line that began in an earlier chunk. */
  #line = new Uint8Array(256);
  #lineLen = 0;
  /** The line being kept grew past MAX_LINE. */
  #overflow = false;

  /** Output tokens so far, as the engine counts them: its usage when it reported one, else the events with output. */
  get tokens(): number {
    return this.usageTokens ?? this.contentEvents;
  }

  /** Scan one chunk; returns how many data events ended in it. */
  push(chunk: Uint8Array): number {
    const before = this.events;
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      const nl = chunk.indexOf(NL, i);
      const end = nl < 0 ? n : nl;
      if (nl >= 0 && this.#lineLen === 0 && !this.#overflow) {
        this.#readLine(chunk, i, end); // the common case: a whole line in this chunk
      } else {
        this.#keep(chunk, i, end);
        if (nl < 0) break;
        this.#endKept();
      }
      i = nl + 1;
    }
    return this.events - before;
  }

  /** The stream ended: a last line without a newline still counts. */
  finish(): number {
    if (this.#lineLen === 0 && !this.#overflow) return 0;
    const before = this.events;
    this.#endKept();
    return this.events - before;
  }

  #keep(chunk: Uint8Array, from: number, to: number): void {
    if (this.#overflow) return;
    const len = to - from;
    if (this.#lineLen + len > MAX_LINE) {
      this.#overflow = true;
      return;
    }
    if (this.#lineLen + len > this.#line.length) {
      const grown = new Uint8Array(Math.min(MAX_LINE, Math.max(this.#line.length * 2, this.#lineLen + len)));
      grown.set(this.#line.subarray(0, this.#lineLen));
      this.#line = grown;
    }
    this.#line.set(chunk.subarray(from, to), this.#lineLen);
    this.#lineLen += len;
  }

  #endKept(): void {
    const overflow = this.#overflow;
    const len = this.#lineLen;
    this.#lineLen = 0;
    this.#overflow = false;
    if (overflow) {
      // Too long to read: still an event (a line this long is not an empty chunk) if it is data.
      if (startsWith(this.#line, 0, DATA)) {
        this.events++;
        this.contentEvents++;
      }
      return;
    }
    this.#readLine(this.#line, 0, len);
  }

  /** One whole line, `buf[from, to)` without its newline. */
  #readLine(buf: Uint8Array, from: number, to: number): void {
    if (to > from && buf[to - 1] === CR) to--;
    if (to - from < DATA.length || !startsWith(buf, from, DATA)) return;
    let p = from + DATA.length;
    if (buf[p] === 32) p++;
    if (to - p === DONE.length && startsWith(buf, p, DONE)) {
      this.done = true;
      return;
    }
    this.events++;
    const usage = lastNumberOf(buf, p, to, COMPLETION_TOKENS);
    if (usage !== undefined) this.usageTokens = usage;
    if (carriesOutput(buf, p, to)) this.contentEvents++;
  }
}

function startsWith(buf: Uint8Array, at: number, prefix: readonly number[] | Uint8Array): boolean {
  if (at + prefix.length > buf.length) return false;
  for (let k = 0; k < prefix.length; k++) if (buf[at + k] !== prefix[k]) return false;
  return true;
}

/** Where `"key"` + optional spaces + `:` + optional spaces ends (the value's first byte), from `from`; -1 when absent. */
function valueAfter(buf: Uint8Array, from: number, to: number, key: Uint8Array): number {
  for (let i = buf.indexOf(QUOTE, from); i >= 0 && i + key.length <= to; i = buf.indexOf(QUOTE, i + 1)) {
    if (!startsWith(buf, i, key)) continue;
    let p = skipSpaces(buf, i + key.length, to);
    if (buf[p] !== COLON) continue;
    p = skipSpaces(buf, p + 1, to);
    if (p < to) return p;
  }
  return -1;
}

function skipSpaces(buf: Uint8Array, p: number, to: number): number {
  while (p < to && (buf[p] === 32 || buf[p] === 9 || buf[p] === CR || buf[p] === NL)) p++;
  return p;
}

/** The integer value of the last `"key": N` in the line. */
function lastNumberOf(buf: Uint8Array, from: number, to: number, key: Uint8Array): number | undefined {
  let found: number | undefined;
  for (let p = valueAfter(buf, from, to, key); p >= 0; p = valueAfter(buf, p, to, key)) {
    let n = 0;
    let digits = 0;
    while (p < to && buf[p]! >= 48 && buf[p]! <= 57 && digits < 15) {
      n = n * 10 + (buf[p]! - 48);
      digits++;
      p++;
    }
    if (digits > 0) found = n;
  }
  return found;
}

/** The event carries output: choices not empty, and some output key with a non-empty string, or tool calls. */
function carriesOutput(buf: Uint8Array, from: number, to: number): boolean {
  const choices = valueAfter(buf, from, to, CHOICES);
  if (choices >= 0 && buf[choices] === LBRACKET && buf[skipSpaces(buf, choices + 1, to)] === RBRACKET) return false;
  for (const key of OUTPUT_KEYS) {
    for (let p = valueAfter(buf, from, to, key); p >= 0; p = valueAfter(buf, p, to, key)) {
      if (buf[p] === QUOTE && p + 1 < to && buf[p + 1] !== QUOTE) return true;
    }
  }
  const tools = valueAfter(buf, from, to, TOOL_CALLS);
  return tools >= 0 && buf[tools] === LBRACKET && buf[skipSpaces(buf, tools + 1, to)] !== RBRACKET;
}
