/**
 * The tokens an answer reports, read from its bytes as they pass: OpenAI's
 * `"completion_tokens": N` and `"prompt_tokens": N` (the `usage` of a whole answer, of an
 * embeddings or score answer, or of a stream's last chunk with `stream_options.include_usage`),
 * SGLang's in `meta_info` too. The last occurrence wins (a stream's usage comes last). A
 * generated text cannot fake one: inside a JSON string its quotes are escaped, so the needle
 * (with both quotes) never matches there. Nothing is decoded or copied beyond a few bytes kept
 * across chunk boundaries. Pure.
 */

const COMPLETION = new TextEncoder().encode('"completion_tokens"');
const PROMPT = new TextEncoder().encode('"prompt_tokens"');

export class UsageSniffer {
  readonly #completion = new NumberAfter(COMPLETION);
  readonly #prompt = new NumberAfter(PROMPT);

  /** The last output count seen, if any. */
  get completionTokens(): number | undefined {
    return this.#completion.value;
  }

  /** The last prompt count seen, if any. */
  get promptTokens(): number | undefined {
    return this.#prompt.value;
  }

  push(chunk: Uint8Array): void {
    this.#completion.push(chunk);
    this.#prompt.push(chunk);
  }
}

/** The last integer after `needle` + `:` in a byte stream. */
class NumberAfter {
  value: number | undefined;
  #tail = new Uint8Array(0);
  /** Bytes kept from a chunk's end, so a needle and its number split across chunks are still read. */
  readonly #keep: number;

  constructor(private readonly needle: Uint8Array) {
    this.#keep = needle.length + 24;
  }

  push(chunk: Uint8Array): void {
    // Look at the kept tail plus this chunk; a needle can only start in the tail if it ends here.
    const buf = this.#tail.length === 0 ? chunk : concat(this.#tail, chunk);
    let from = 0;
    for (;;) {
      const at = indexOf(buf, this.needle, from);
      if (at < 0) break;
      const n = readNumberAfter(buf, at + this.needle.length);
      if (n === "cut") break;
      if (n !== undefined) this.value = n;
      from = at + this.needle.length;
    }
    this.#tail = buf.slice(Math.max(0, buf.length - this.#keep));
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function indexOf(buf: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0]!;
  for (
    let i = buf.indexOf(first, from);
    i >= 0 && i + needle.length <= buf.length;
    i = buf.indexOf(first, i + 1)
  ) {
    let k = 1;
    while (k < needle.length && buf[i + k] === needle[k]) k++;
    if (k === needle.length) return i;
  }
  return -1;
}

/** The integer after `"key"` + optional spaces + `:` + optional spaces; "cut" when the chunk ends first. */
function readNumberAfter(buf: Uint8Array, i: number): number | undefined | "cut" {
  while (i < buf.length && (buf[i] === 32 || buf[i] === 9)) i++;
  if (i >= buf.length) return "cut";
  if (buf[i] !== 58) return undefined;
  i++;
  while (i < buf.length && (buf[i] === 32 || buf[i] === 9)) i++;
  let n = 0;
  let digits = 0;
  while (i < buf.length && buf[i]! >= 48 && buf[i]! <= 57 && digits < 12) {
    n = n * 10 + (buf[i]! - 48);
    digits++;
    i++;
  }
  if (i >= buf.length) return "cut";
  return digits > 0 ? n : undefined;
}
