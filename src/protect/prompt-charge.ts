/**
 * What a request is charged against its tenant's prompt-token limit: never less than what the
 * engine will prefill for it. Where the router tokenized the whole of it exactly (every prompt
 * of a batch; a chat rendered through the model's template, tools, documents and names
 * included), that count. Everywhere else an upper bound from the body's text, as the engine
 * reads each route:
 * - text: its UTF-8 bytes (a byte-level tokenizer never makes more tokens than bytes), plus
 *   SPECIAL_PER_SEQUENCE for the special tokens of each sequence; token ids count one each;
 *   structured fields the template renders (tools, documents, Responses items) count their
 *   keys and strings;
 * - chat without the tokenizer: TEMPLATE_PER_CHAT + TEMPLATE_PER_MESSAGE for the template's
 *   own text (role headers, a default system prompt);
 * - media parts (image, audio, video, file): MEDIA_PART_TOKENS each, whatever their bytes;
 * - pairs (score `text_1` × `text_2`, rerank `query` × `documents`): each pair is one
 *   sequence, so a query is counted once per document.
 * The charge is settled to the engine's reported `usage.prompt_tokens` when the answer ends
 * (edge/tenants), so an honest client is over-charged only until then. Pure.
 */

/** Special tokens one sequence may add (BOS, EOS, SEP): an allowance, settled from usage. */
export const SPECIAL_PER_SEQUENCE = 4;
/** A chat template's text around the messages (a default system prompt, a date line). */
export const TEMPLATE_PER_CHAT = 64;
/** A chat template's role header and end marker around one message. */
export const TEMPLATE_PER_MESSAGE = 16;
/**
 * One image, audio clip, video or file part. Vision encoders make 576 (LLaVA-1.5) to 6,400
 * (a tiled Llama 3.2 image) tokens for a typical image; more for large images, audio or video
 * is settled from the engine's usage afterwards.
 */
export const MEDIA_PART_TOKENS = 4096;

/** Content-part types and keys that carry media, not text. */
const MEDIA_TYPES = new Set([
  "image_url",
  "input_image",
  "image",
  "input_audio",
  "audio_url",
  "audio",
  "video_url",
  "video",
  "file",
  "input_file",
]);

/**
 * The charge for a body sent to `path`. `exactTokens`: the engine's tokens for the route's
 * prompt field(s), when the router made them all (absent: bounded from the text).
 * `routedTokens`: the tokens the request was routed on (the charge is never below them).
 */
export function promptCharge(
  path: string,
  body: Record<string, unknown>,
  exactTokens: number | undefined,
  routedTokens: number,
): number {
  return Math.max(routedTokens, Math.ceil(charge(path, body, exactTokens)));
}

function charge(path: string, b: Record<string, unknown>, exact: number | undefined): number {
  switch (path) {
    case "/v1/chat/completions":
      return exact ?? chatBound(b.messages) + textBound(b.tools) + textBound(b.documents);
    case "/v1/completions":
      return exact ?? sequencesBound(b.prompt);
    case "/v1/embeddings":
    case "/pooling":
    case "/classify":
      // vLLM's pooling routes also take a chat (`messages`) in place of `input`.
      return (
        (exact ?? sequencesBound(b.input)) + (b.messages !== undefined ? chatBound(b.messages) : 0)
      );
    case "/v1/responses":
      return (
        chatBound(typeof b.input === "string" ? [b.input] : b.input) +
        textBound(b.instructions) +
        textBound(b.tools)
      );
    case "/generate":
      return exact ?? sequencesBound(b.text) + sequencesBound(b.input_ids);
    case "/score":
    case "/v1/score":
      return (
        pairsBound(b.text_1, b.text_2) +
        pairsBound(b.data_1, b.data_2) +
        pairsBound(b.queries, b.documents ?? b.items)
      );
    case "/rerank":
    case "/v1/rerank":
    case "/v2/rerank":
      return pairsBound(b.query, b.documents);
    default:
      // /detokenize and the like: token ids to text, nothing prefilled.
      return 0;
  }
}

/** A chat (or Responses items) rendered by a template the router did not run. */
function chatBound(messages: unknown): number {
  if (messages === undefined || messages === null) return 0;
  const n = Array.isArray(messages) ? messages.length : 1;
  return TEMPLATE_PER_CHAT + TEMPLATE_PER_MESSAGE * n + textBound(messages);
}

/** A completions-style prompt: one text, one list of ids, or a batch of either. */
function sequencesBound(v: unknown): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === "string") return utf8Bytes(v) + SPECIAL_PER_SEQUENCE;
  if (
    Array.isArray(v) &&
    v.length > 0 &&
    v.every((x) => typeof x === "string" || Array.isArray(x))
  ) {
    let sum = 0;
    for (const x of v) sum += sequencesBound(x);
    return sum;
  }
  return textBound(v) + SPECIAL_PER_SEQUENCE;
}

/** Pairs of `a` (one or a list) with each of `b` (one or a list): each pair a sequence. */
function pairsBound(a: unknown, b: unknown): number {
  if (a === undefined && b === undefined) return 0;
  const as = Array.isArray(a) ? a : [a];
  const bs = Array.isArray(b) ? b : [b];
  let longestA = 0;
  let sumA = 0;
  for (const x of as) {
    const t = textBound(x);
    sumA += t;
    longestA = Math.max(longestA, t);
  }
  let sumB = 0;
  for (const x of bs) sumB += textBound(x);
  const pairs = Math.max(as.length, bs.length);
  // One a against many b repeats it in every pair; a list against a list pairs them in order.
  return sumB + (as.length === 1 ? longestA * pairs : sumA) + SPECIAL_PER_SEQUENCE * pairs;
}

/**
 * Text in a JSON value: strings' UTF-8 bytes, object keys' too (a template renders tools as
 * JSON), one per number (token ids), media parts at MEDIA_PART_TOKENS each, their bytes not
 * walked. Iterative, so a deep nesting costs no stack.
 */
export function textBound(value: unknown): number {
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") total += utf8Bytes(v);
    else if (typeof v === "number" || typeof v === "bigint") total += 1;
    else if (Array.isArray(v)) for (const x of v) stack.push(x);
    else if (v !== null && typeof v === "object") {
      const o = v as Record<string, unknown>;
      if (isMedia(o)) {
        total += MEDIA_PART_TOKENS;
        continue;
      }
      for (const k in o) {
        total += utf8Bytes(k);
        stack.push(o[k]);
      }
    }
  }
  return total;
}

function isMedia(o: Record<string, unknown>): boolean {
  if (typeof o.type === "string") return MEDIA_TYPES.has(o.type);
  for (const k in o) if (MEDIA_TYPES.has(k)) return true;
  return false;
}

/** UTF-8 length of a string without encoding it (a lone surrogate becomes U+FFFD, 3 bytes). */
export function utf8Bytes(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (
      c >= 0xd800 &&
      c <= 0xdbff &&
      i + 1 < s.length &&
      (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00
    ) {
      n += 2; // a pair: 4 bytes for 2 code units
      i++;
    } else n += 2;
  }
  return n;
}
