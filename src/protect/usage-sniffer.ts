/**
 * The output tokens an answer reports, read from its bytes as they pass: OpenAI's
 * `"completion_tokens": N` (the `usage` of a whole answer, or of a stream's last chunk with
 * `stream_options.include_usage`), SGLang's `"completion_tokens"` in `meta_info` too. The
 * last occurrence wins (a stream's usage comes last). Nothing is decoded or copied beyond a
 * few bytes kept across chunk boundaries. Pure.
 */

const NEEDLE = new TextEncoder().encode('"completion_tokens"');
/** Bytes kept from a chunk's end, so a needle and its number split across chunks are still read. */
const TAIL = NEEDLE.length + 24;

export class UsageSniffer {
  /** The last count seen, if any. */
  completionTokens: number | undefined;
  #tail = new Uint8Array(0);

  push(chunk: Uint8Array): void {
    // Look at the kept tail plus this chunk; a needle can only start in the tail if it ends here.
    const buf = this.#tail.length === 0 ? chunk : concat(this.#tail, chunk);
    let from = 0;
    for (;;) {
      const at = indexOf(buf, from);
      if (at < 0) break;
      const n = readNumberAfter(buf, at + NEEDLE.length);
      if (n === "cut") break;
      if (n !== undefined) this.completionTokens = n;
      from = at + NEEDLE.length;
    }
    this.#tail = buf.slice(Math.max(0, buf.length - TAIL));
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function indexOf(buf: Uint8Array, from: number): number {
  const first = NEEDLE[0]!;
  for (let i = buf.indexOf(first, from); i >= 0 && i + NEEDLE.length <= buf.length; i = buf.indexOf(first, i + 1)) {
    let k = 1;
    while (k < NEEDLE.length && buf[i + k] === NEEDLE[k]) k++;
    if (k === NEEDLE.length) return i;
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
