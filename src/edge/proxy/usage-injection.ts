/**
 * Every answer's usage, read for the cache check (src/fleet/cache-truth), without changing what
 * the client sees.
 *
 * A streamed answer carries usage only when the body asks for it (`stream_options.include_usage`).
 * Where the client did not ask, the engine is asked for it here (`prepareBody`) and the one chunk it
 * adds is taken out of the client's stream (`tapUsage`, strip mode). Byte-exact otherwise, because
 * of how vLLM writes that chunk (vllm/entrypoints/openai/serving_chat.py,
 * chat_completion_stream_generator, at 003fe59): its other chunks are dumped with
 * `exclude_unset=True` and `usage` is only set on them with `continuous_usage_stats` (which we never
 * add), so asking for usage changes nothing but one extra event, `data: {..."choices":[],
 * "usage":{...}}\n\n`, sent after the last token and before `data: [DONE]`. A client that asked for
 * `continuous_usage_stats` without `include_usage` would see usage on every chunk if we added it, so
 * such a body is left alone (no check for that answer). Completions streams are the same
 * (serving_completion.py).
 *
 * Where the client asked itself, or the answer is not streamed, nothing is changed: the usage is
 * read from the last bytes as they pass. Pure: bytes in, bytes out.
 */

export interface PreparedBody {
  /** What the engine gets. */
  readonly body: Uint8Array;
  /** include_usage was added here: take the usage chunk out of the client's stream. */
  readonly strip: boolean;
  /** The answer will carry usage (false: a body we could not or would not touch). */
  readonly checked: boolean;
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const STREAM_OPTIONS = enc.encode('"stream_options"');
const INSERT = enc.encode('"stream_options":{"include_usage":true}');

/** A body's `stream_options` as its route parsed it (`value` undefined: the body has none). */
export interface ParsedStreamOptions {
  readonly value: unknown;
}

/**
 * The body to send upstream for a request with `stream` as given. `known`: the body's
 * `stream_options` as the route read it, when it did (then the body is not scanned for it).
 */
export function prepareBody(
  body: Uint8Array,
  stream: boolean,
  known?: ParsedStreamOptions,
): PreparedBody {
  if (!stream) return { body, strip: false, checked: true };
  if (known !== undefined ? known.value === undefined : indexOfBytes(body, STREAM_OPTIONS, 0) < 0) {
    // The common case: splice the option in after the opening brace, no parse, no re-encoding.
    let i = 0;
    while (i < body.length && isSpace(body[i]!)) i++;
    if (body[i] !== 0x7b /* { */) return { body, strip: false, checked: false };
    let j = i + 1;
    while (j < body.length && isSpace(body[j]!)) j++;
    const comma = body[j] === 0x7d /* } */ ? 0 : 1;
    const out = new Uint8Array(body.length + INSERT.length + comma);
    // The opening brace and the blanks before it (one byte as a rule): no view made for them.
    for (let k = 0; k <= i; k++) out[k] = body[k]!;
    out.set(INSERT, i + 1);
    if (comma) out[i + 1 + INSERT.length] = 0x2c;
    out.set(body.subarray(i + 1), i + 1 + INSERT.length + comma);
    return { body: out, strip: true, checked: true };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(dec.decode(body));
  } catch {
    return { body, strip: false, checked: false };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    return { body, strip: false, checked: false };
  const o = parsed as Record<string, unknown>;
  const so = o.stream_options;
  if (so !== null && typeof so === "object" && !Array.isArray(so)) {
    const opts = so as Record<string, unknown>;
    if (opts.include_usage === true) return { body, strip: false, checked: true };
    // Adding include_usage would turn continuous usage on for every chunk: not ours to change.
    if (opts.continuous_usage_stats === true) return { body, strip: false, checked: false };
    o.stream_options = { ...opts, include_usage: true };
  } else if (so === undefined || so === null) {
    o.stream_options = { include_usage: true };
  } else return { body, strip: false, checked: false }; // the engine answers 400 for it anyway
  return { body: enc.encode(JSON.stringify(o)), strip: true, checked: true };
}

/** What an answer's usage says. */
export interface ReportedUsage {
  readonly promptTokens: number;
  /** `prompt_tokens_details.cached_tokens`; undefined: the answer does not say (vLLM omits it at 0). */
  readonly cachedTokens: number | undefined;
  /** `completion_tokens`: the output as the engine counted it (undefined: not reported). */
  readonly completionTokens: number | undefined;
}

/** The part of a stream reader the proxy uses (observe-stream.ts's ChunkReader). */
export interface TapReader {
  read(): Promise<{ done: boolean; value?: Uint8Array | undefined }>;
  cancel(reason?: unknown): Promise<void>;
  readonly drained?: boolean;
}

/** Bytes of the answer's end kept to read usage from when nothing is stripped. */
const TAIL_BYTES = 4096;
/** Inside the usage event of an include_usage stream: no choices (the other chunks have one each). */
const NO_CHOICES = Buffer.from('"choices":[]', "latin1");
const EVENT_END = Buffer.from("\n\n", "latin1");
const DONE_EVENT = Buffer.from("data: [DONE]", "latin1");
const K_USAGE = Buffer.from('"usage"', "latin1");
const K_PROMPT = Buffer.from('"prompt_tokens"', "latin1");
const K_CACHED = Buffer.from('"cached_tokens"', "latin1");
const K_COMPLETION = Buffer.from('"completion_tokens"', "latin1");
/**
 * The longest partial event held back in strip mode. vLLM's usage event is a few hundred bytes
 * (ids, model name, four counts); an unfinished event longer than this is some other event.
 */
export const MAX_USAGE_EVENT_BYTES = 64 * 1024;

/**
 * Watches (and in strip mode filters) an answer's bytes. `push` returns what goes to the client;
 * `finish` what is left at the end, and then `usage` holds what the answer reported.
 *
 * Cost per chunk (it runs on every chunk of every checked answer; about 0.1 µs): native searches
 * only, and only of the chunk's last event or two, since only `data: [DONE]` may follow the usage
 * event; nothing allocated for a chunk that ends on an event's end and holds no usage event.
 */
export class UsageTap {
  usage: ReportedUsage | undefined;
  #carry: Uint8Array | undefined = undefined;
  /** Strip mode: the current event outgrew MAX_USAGE_EVENT_BYTES and passes until its end. */
  #passing = false;
  /** The last chunks seen (references, not copies), at least TAIL_BYTES of them when there are. */
  #tail: Uint8Array[] = [];
  #tailBytes = 0;

  constructor(readonly strip: boolean) {}

  push(chunk: Uint8Array): Uint8Array {
    if (!this.strip) {
      this.#keepTail(chunk);
      return chunk;
    }
    if (this.#passing) {
      // Inside an event already too long to be the usage event: it goes on as it comes.
      const end = find(chunk, EVENT_END, 0);
      if (end < 0) return chunk;
      this.#passing = false;
      const upTo = end + EVENT_END.length;
      if (upTo === chunk.length) return chunk;
      const rest = this.push(chunk.subarray(upTo));
      return rest.length === 0 ? chunk.subarray(0, upTo) : concat(chunk.subarray(0, upTo), rest);
    }
    // Only whole events go on, so the usage event can be cut out even when split across chunks.
    const buf = this.#carry === undefined ? chunk : concat(this.#carry, chunk);
    const n = buf.length;
    // The common chunk ends on an event's end: no search for it, nothing held back.
    const cut =
      n >= 2 && buf[n - 1] === 0x0a && buf[n - 2] === 0x0a
        ? n - 2
        : findLast(buf, EVENT_END, n - 1);
    if (cut < 0) {
      if (buf.length > MAX_USAGE_EVENT_BYTES) {
        // Holding it would buffer an endless event in the router (the engine's socket is only
        // stopped while the client reads nothing): it is not the usage event, so pass it on.
        this.#carry = undefined;
        this.#passing = true;
        return buf;
      }
      this.#carry = buf;
      return EMPTY;
    }
    const whole = cut + EVENT_END.length;
    this.#carry = whole < n ? buf.slice(whole) : undefined;
    // The last whole event, or the one before it when that is [DONE]: where the usage event can be.
    let to = cut;
    let from = eventStart(buf, to);
    if (to - from === DONE_EVENT.length && find(buf, DONE_EVENT, from) === from) {
      if (from === 0) return whole === n ? buf : buf.subarray(0, whole);
      to = from - EVENT_END.length;
      from = eventStart(buf, to);
    }
    const at = find(buf, NO_CHOICES, from);
    if (at < 0 || at >= to) return whole === n ? buf : buf.subarray(0, whole);
    this.usage = usageIn(buf, from, to);
    const after = to + EVENT_END.length;
    if (from === 0 && after === whole) return EMPTY;
    if (after === whole) return buf.subarray(0, from);
    // What follows it ([DONE]) moves up over it, in place: these bytes are the tap's alone (the
    // reader's chunk, or the tap's own carry), and nothing is allocated for the common last chunk.
    buf.copyWithin(from, after, whole);
    return buf.subarray(0, from + whole - after);
  }

  /** The end of the answer: bytes still held, and the usage read from the tail. */
  finish(): Uint8Array {
    if (!this.strip) {
      const t = this.#tail;
      const last = t.length > 0 ? t[t.length - 1]! : undefined;
      // Usually the last chunk holds it all (a whole answer, or the usage event with [DONE]).
      this.usage = last !== undefined ? usageIn(last, 0, last.length) : undefined;
      if (this.usage === undefined && t.length > 1) {
        const all = joined(t, this.#tailBytes);
        this.usage = usageIn(all, 0, all.length);
      }
      return EMPTY;
    }
    const rest = this.#carry ?? EMPTY;
    this.#carry = undefined;
    return rest;
  }

  /** Bytes held back (strip mode): a partial event. */
  get holding(): boolean {
    return this.#carry !== undefined;
  }

  #keepTail(chunk: Uint8Array): void {
    const tail = chunk.length > TAIL_BYTES ? chunk.subarray(chunk.length - TAIL_BYTES) : chunk;
    this.#tail.push(tail);
    this.#tailBytes += tail.length;
    while (this.#tail.length > 1 && this.#tailBytes - this.#tail[0]!.length >= TAIL_BYTES)
      this.#tailBytes -= this.#tail.shift()!.length;
  }
}

const EMPTY = new Uint8Array(0);

/**
 * An answer's reader through a tap: what it yields is what the client gets; `onEnd` runs once
 * with the usage when the engine's body ended (not when it broke or the client left).
 */
export function tappedReader(
  first: Uint8Array | undefined,
  reader: TapReader,
  tap: UsageTap,
  onEnd: (u: ReportedUsage | undefined) => void,
): { first: Uint8Array | undefined; reader: TapReader } {
  let ended = false;
  const end = (): Uint8Array => {
    const rest = tap.finish();
    if (!ended) {
      ended = true;
      onEnd(tap.usage);
    }
    return rest;
  };
  let out = first !== undefined ? tap.push(first) : undefined;
  let finished = false;
  if (first !== undefined && reader.drained === true) {
    const rest = end();
    finished = true;
    if (rest.length > 0) out = concat(out!, rest);
  }
  const wrapped: TapReader = {
    async read() {
      if (finished) return { done: true };
      for (;;) {
        const r = await reader.read();
        if (r.done || r.value === undefined) {
          finished = true;
          const rest = end();
          return rest.length > 0 ? { done: false, value: rest } : { done: true };
        }
        const v = tap.push(r.value);
        if (reader.drained === true) {
          finished = true;
          const rest = end();
          return { done: false, value: rest.length > 0 ? concat(v, rest) : v };
        }
        if (v.length > 0) return { done: false, value: v };
      }
    },
    cancel: (reason) => reader.cancel(reason),
    get drained() {
      return finished || (reader.drained === true && !tap.holding);
    },
  };
  return { first: out, reader: wrapped };
}

/** The last usage object in an answer's tail (a whole JSON answer, or a stream's usage chunk). */
export function usageOfTail(tail: Uint8Array): ReportedUsage | undefined {
  return usageIn(tail, 0, tail.length);
}

/** The last usage object in `b[from, to)`. Keys are matched as `"key"` then `:`, which no run of bytes inside a JSON string can be. */
function usageIn(b: Uint8Array, from: number, to: number): ReportedUsage | undefined {
  const at = findLast(b, K_USAGE, to - K_USAGE.length);
  if (at < from) return undefined;
  const promptTokens = numberAfter(b, K_PROMPT, at, to);
  if (promptTokens === undefined) return undefined;
  return {
    promptTokens,
    cachedTokens: numberAfter(b, K_CACHED, at, to),
    completionTokens: numberAfter(b, K_COMPLETION, at, to),
  };
}

/** The integer after the first `"name":` in `b[from, to)`. */
function numberAfter(
  b: Uint8Array,
  name: Uint8Array,
  from: number,
  to: number,
): number | undefined {
  for (let k = find(b, name, from); k >= 0 && k < to; k = find(b, name, k + 1)) {
    let p = k + name.length;
    while (p < to && isSpace(b[p]!)) p++;
    if (b[p] !== 0x3a /* : */) continue;
    p++;
    while (p < to && isSpace(b[p]!)) p++;
    let n = 0;
    let digits = 0;
    while (p < to && b[p]! >= 0x30 && b[p]! <= 0x39 && digits < 15) {
      n = n * 10 + (b[p]! - 0x30);
      digits++;
      p++;
    }
    return digits > 0 ? n : undefined;
  }
  return undefined;
}

/** Where the event that ends at `end` (its "\n\n" at `end`) starts. */
function eventStart(b: Uint8Array, end: number): number {
  if (end < EVENT_END.length) return 0;
  const prev = findLast(b, EVENT_END, end - EVENT_END.length);
  return prev < 0 ? 0 : prev + EVENT_END.length;
}

/** Buffer's native byte-string searches, run on any Uint8Array in place (no Buffer view made per chunk). */
const nativeIndexOf = Buffer.prototype.indexOf;
const nativeLastIndexOf = Buffer.prototype.lastIndexOf;
function find(hay: Uint8Array, needle: Uint8Array, from: number): number {
  return nativeIndexOf.call(hay, needle, from);
}
function findLast(hay: Uint8Array, needle: Uint8Array, from: number): number {
  return from < 0 ? -1 : nativeLastIndexOf.call(hay, needle, from);
}

function joined(parts: readonly Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

export function indexOfBytes(hay: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0]!;
  const last = hay.length - needle.length;
  for (let i = hay.indexOf(first, from); i >= 0 && i <= last; i = hay.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}
