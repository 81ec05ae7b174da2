/**
 * An incremental HTTP/1.1 response parser (RFC 9112) for the router's upstream client:
 * bytes in as they arrive from the socket, the head and the body's payload out. Body
 * payload is handed on as views of the input (never copied): chunked framing is removed,
 * content-length and read-until-close bodies pass as they are. 1xx interim responses are
 * skipped. It does no I/O: the socket client feeds it and decides what to do with the
 * connection afterwards (`head.keepAlive`).
 *
 * Hot path (once per proxied request): it works on byte offsets into the pushed buffer
 * and makes no view except the payload ones; the head is decoded to one string once.
 * Malformed input throws Http1ParseError; the caller then closes the connection. Malformed
 * includes what a client could not be given as it is: a status outside 100-599, a header
 * name that is not a token or a value with control characters, a head over MAX_HEAD_BYTES
 * even when it arrives in one read. Before, a status of 600-999 or an invalid header ended
 * as an unhandled 500 that kept the booking and the engine's stream, and a status below 100
 * was taken for an interim answer and waited out the 600 s deadline.
 */

export interface ResponseHead {
  readonly status: number;
  readonly statusText: string;
  /** Header fields in arrival order, flat: [name0, value0, name1, value1, ...]; names lower-case, values trimmed. */
  readonly headers: readonly string[];
  /** The connection may carry another request after this response. */
  readonly keepAlive: boolean;
}

export interface ParserSink {
  head(head: ResponseHead): void;
  /** A piece of the payload: a view of the pushed bytes, valid as long as they are. */
  body(chunk: Uint8Array): void;
  /** The whole response has arrived. */
  end(): void;
}

export class Http1ParseError extends Error {
  override readonly name = "Http1ParseError";
}

/** A head, a chunk-size line or the trailers longer than this are refused. */
export const MAX_HEAD_BYTES = 64 * 1024;

const CR = 13;
const LF = 10;

const enum State {
  Head,
  ChunkSize,
  ChunkData,
  ChunkDataCr,
  ChunkDataLf,
  Trailers,
  Fixed,
  UntilClose,
  Done,
}

export class Http1ResponseParser {
  #state = State.Head;
  /** Bytes of an unfinished head or line, kept from earlier pushes. */
  #carry: Uint8Array | undefined;
  #remaining = 0;
  #bytesSeen = 0;

  constructor(private readonly sink: ParserSink) {}

  /** Any byte of a response has arrived. */
  get started(): boolean {
    return this.#bytesSeen > 0;
  }

  /** The response is complete. */
  get done(): boolean {
    return this.#state === State.Done;
  }

  /**
   * Feed the next bytes of the connection. The parser owns them from here on: the payload
   * of consecutive chunks in one push is moved together inside `data` (over the framing
   * between them) and handed on as one view, so a packet of many small chunks (SSE
   * events) costs one view and no copy.
   */
  push(data: Uint8Array): void {
    this.#bytesSeen += data.length;
    let buf = data;
    if (this.#carry !== undefined) {
      buf = concat(this.#carry, data);
      this.#carry = undefined;
    }
    try {
      this.#run(buf);
    } finally {
      this.#flushBody();
    }
  }

  // Chunk payload gathered in place during one push: bytes [#outStart, #outEnd) of #outBuf.
  #outBuf: Uint8Array | undefined;
  #outStart = 0;
  #outEnd = 0;

  #flushBody(): void {
    const b = this.#outBuf;
    if (b === undefined) return;
    this.#outBuf = undefined;
    if (this.#outEnd > this.#outStart) {
      this.sink.body(
        this.#outStart === 0 && this.#outEnd === b.length
          ? b
          : b.subarray(this.#outStart, this.#outEnd),
      );
    }
  }

  #run(buf: Uint8Array): void {
    const n = buf.length;
    let i = 0;
    while (i < n) {
      switch (this.#state) {
        case State.Head: {
          const end = headEnd(buf, i);
          if (end < 0) return this.#keep(buf, i, "response head");
          if (end - i > MAX_HEAD_BYTES)
            throw new Http1ParseError(`response head longer than ${MAX_HEAD_BYTES} bytes`);
          const next = end + 4;
          this.#onHead(parseHead(buf, i, end));
          i = next;
          break;
        }
        case State.ChunkSize: {
          const nl = buf.indexOf(LF, i);
          if (nl < 0) return this.#keep(buf, i, "chunk size line");
          const size = chunkSize(buf, i, nl);
          i = nl + 1;
          if (size === 0) this.#state = State.Trailers;
          else {
            this.#remaining = size;
            this.#state = State.ChunkData;
          }
          break;
        }
        case State.ChunkData: {
          const take = Math.min(this.#remaining, n - i);
          if (this.#outBuf === undefined) {
            this.#outBuf = buf;
            this.#outStart = this.#outEnd = i;
          }
          // Move this chunk's payload next to the previous one's (the framing in between is
          // already parsed); write position <= read position, so nothing unread is overwritten.
          if (this.#outEnd !== i) buf.copyWithin(this.#outEnd, i, i + take);
          this.#outEnd += take;
          i += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#state = State.ChunkDataCr;
          break;
        }
        case State.ChunkDataCr:
          if (buf[i] !== CR) throw new Http1ParseError("missing CRLF after chunk data");
          i++;
          this.#state = State.ChunkDataLf;
          break;
        case State.ChunkDataLf:
          if (buf[i] !== LF) throw new Http1ParseError("missing CRLF after chunk data");
          i++;
          this.#state = State.ChunkSize;
          break;
        case State.Trailers: {
          const nl = buf.indexOf(LF, i);
          if (nl < 0) return this.#keep(buf, i, "trailers");
          // An empty line (CRLF, or a bare LF) ends the trailers and the message.
          const empty = nl === i || (nl === i + 1 && buf[i] === CR);
          i = nl + 1;
          if (empty) this.#finish(n - i);
          break;
        }
        case State.Fixed: {
          const take = Math.min(this.#remaining, n - i);
          this.sink.body(take === n && i === 0 ? buf : buf.subarray(i, i + take));
          i += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#finish(n - i);
          break;
        }
        case State.UntilClose:
          this.sink.body(i === 0 ? buf : buf.subarray(i));
          return;
        case State.Done:
          throw new Http1ParseError("bytes after the end of the response");
      }
    }
  }

  /**
   * The connection closed. Completes a body that runs until close; anywhere else the
   * response is cut short and this throws.
   */
  eof(): void {
    if (this.#state === State.Done) return;
    if (this.#state === State.UntilClose) {
      this.#state = State.Done;
      this.sink.end();
      return;
    }
    throw new Http1ParseError(
      this.#bytesSeen === 0
        ? "connection closed before any response byte"
        : "connection closed before the response was complete",
    );
  }

  /** Keep the unfinished tail for the next push (gathered payload before it is unaffected). */
  #keep(buf: Uint8Array, i: number, what: string): void {
    if (buf.length - i > MAX_HEAD_BYTES)
      throw new Http1ParseError(`${what} longer than ${MAX_HEAD_BYTES} bytes`);
    this.#carry = buf.slice(i);
  }

  #onHead(h: ParsedHead): void {
    // 1xx: an interim response; the real one follows on the same connection.
    if (h.status < 200) {
      if (h.status === 101) throw new Http1ParseError("unexpected protocol switch (101)");
      return;
    }
    let framing: State;
    if (h.status === 204 || h.status === 304) framing = State.Done;
    else if (h.transferEncoding !== "")
      framing = lastCodingIsChunked(h.transferEncoding) ? State.ChunkSize : State.UntilClose;
    else if (h.contentLength >= 0) framing = h.contentLength === 0 ? State.Done : State.Fixed;
    else framing = State.UntilClose;
    const keepAlive = h.keepAlive && framing !== State.UntilClose;
    this.#remaining = framing === State.Fixed ? h.contentLength : 0;
    this.#state = framing;
    this.sink.head({ status: h.status, statusText: h.statusText, headers: h.headers, keepAlive });
    if (framing === State.Done) this.sink.end();
  }

  /** The message is complete; bytes after it (no pipelining here) are an error, after the end is reported. */
  #finish(extraBytes: number): void {
    this.#state = State.Done;
    this.#flushBody();
    this.sink.end();
    if (extraBytes > 0) throw new Http1ParseError("bytes after the end of the response");
  }
}

interface ParsedHead {
  status: number;
  statusText: string;
  headers: string[];
  keepAlive: boolean;
  /** Lower-case transfer-encoding list, "" when absent. */
  transferEncoding: string;
  /** -1 when absent. */
  contentLength: number;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Offset of the CRLFCRLF ending the head that starts at `from`, or -1. */
function headEnd(b: Uint8Array, from: number): number {
  for (let k = b.indexOf(LF, from); k >= 0; k = b.indexOf(LF, k + 1)) {
    // k is an LF; the head ends at an LF preceded by CR LF CR
    if (k >= from + 3 && b[k - 1] === CR && b[k - 2] === LF && b[k - 3] === CR) return k - 3;
  }
  return -1;
}

const ascii = new TextDecoder("utf-8");

/** Bytes [start, end) as a string, one char per byte (header text is latin-1, RFC 9110 §5.5). */
function latin1(b: Uint8Array, start: number, end: number): string {
  for (let i = start; i < end; i++) {
    if (b[i]! >= 0x80) {
      let s = "";
      for (let k = start; k < end; k++) s += String.fromCharCode(b[k]!);
      return s;
    }
  }
  return ascii.decode(b.subarray(start, end));
}

function isOws(c: number): boolean {
  return c === 32 || c === 9;
}

function digit(s: string, k: number): number {
  const d = s.charCodeAt(k) - 48;
  if (!(d >= 0 && d <= 9))
    throw new Http1ParseError(
      `bad status line: ${JSON.stringify(s.slice(0, Math.min(80, s.indexOf("\r") >>> 0)))}`,
    );
  return d;
}

function parseHead(b: Uint8Array, start: number, end: number): ParsedHead {
  const text = latin1(b, start, end);
  const len = text.length;
  let eol = text.indexOf("\r\n");
  if (eol < 0) eol = len;
  // "HTTP/1.x SSS[ reason]"
  if (
    eol < 12 ||
    !text.startsWith("HTTP/1.") ||
    text.charCodeAt(8) !== 32 ||
    (eol > 12 && text.charCodeAt(12) !== 32)
  ) {
    throw new Http1ParseError(
      `bad status line: ${JSON.stringify(text.slice(0, Math.min(eol, 80)))}`,
    );
  }
  const minor = text.charCodeAt(7) - 48;
  if (minor !== 0 && minor !== 1)
    throw new Http1ParseError(`unsupported HTTP version in ${JSON.stringify(text.slice(0, 12))}`);
  const status = digit(text, 9) * 100 + digit(text, 10) * 10 + digit(text, 11);
  if (status < 100 || status > 599)
    throw new Http1ParseError(`bad status ${status} (must be 100-599)`);
  const statusText = eol > 13 ? text.slice(13, eol) : "";
  // Names are compared and handed on in lower case; lowering the whole head once is far
  // cheaper than lowering each name (values are taken from `text`, case kept).
  const lower = text.toLowerCase();
  const headers: string[] = [];
  let connection = "";
  let transferEncoding = "";
  let contentLength = -1;
  let pos = eol + 2;
  while (pos < len) {
    let e = text.indexOf("\r\n", pos);
    if (e < 0) e = len;
    const colon = text.indexOf(":", pos);
    if (colon <= pos || colon > e || isOws(text.charCodeAt(pos))) {
      throw new Http1ParseError(
        `bad header line: ${JSON.stringify(text.slice(pos, Math.min(e, pos + 80)))}`,
      );
    }
    let vs = colon + 1;
    while (vs < e && isOws(text.charCodeAt(vs))) vs++;
    let ve = e;
    while (ve > vs && isOws(text.charCodeAt(ve - 1))) ve--;
    const name = lower.slice(pos, colon);
    const value = text.slice(vs, ve);
    if (!TOKEN.test(name))
      throw new Http1ParseError(`bad header name ${JSON.stringify(name.slice(0, 80))}`);
    if (CONTROL.test(value))
      throw new Http1ParseError(
        `header ${JSON.stringify(name.slice(0, 80))} has a control character in its value`,
      );
    switch (name.length) {
      case 14:
        if (name === "content-length") contentLength = parseContentLength(value, contentLength);
        break;
      case 17:
        if (name === "transfer-encoding")
          transferEncoding += (transferEncoding === "" ? "" : ",") + lower.slice(vs, ve);
        break;
      case 10:
        if (name === "connection")
          connection += (connection === "" ? "" : ",") + lower.slice(vs, ve);
        break;
    }
    headers.push(name, value);
    pos = e + 2;
  }
  const keepAlive =
    minor === 1 ? !hasToken(connection, "close") : hasToken(connection, "keep-alive");
  return { status, statusText, headers, keepAlive, transferEncoding, contentLength };
}

/** RFC 9110 §5.6.2 token characters (lower-case, as names are compared here). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
/** Control characters a field value may not hold (HTAB is whitespace, bytes >= 0x80 are obs-text). */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

function parseContentLength(value: string, previous: number): number {
  if (!/^\d{1,15}$/.test(value))
    throw new Http1ParseError(`bad content-length: ${JSON.stringify(value)}`);
  const n = Number(value);
  if (previous >= 0 && n !== previous)
    throw new Http1ParseError("conflicting content-length values");
  return n;
}

/** Whether a comma list (lower-case) holds `token`. */
function hasToken(list: string, token: string): boolean {
  if (list === "") return false;
  for (const t of list.split(",")) if (t.trim() === token) return true;
  return false;
}

function lastCodingIsChunked(list: string): boolean {
  const k = list.lastIndexOf(",");
  return list.slice(k + 1).trim() === "chunked";
}

/** The hex size at the start of the chunk-size line [start, nl) (extensions ignored). */
function chunkSize(b: Uint8Array, start: number, nl: number): number {
  let size = 0;
  let k = start;
  for (; k < nl; k++) {
    const c = b[k]!;
    const d =
      c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
    if (d < 0) {
      // the size ends at an extension (;), whitespace or the line's CR
      if (c !== 59 && c !== 32 && c !== 9 && c !== CR) throw new Http1ParseError("bad chunk size");
      break;
    }
    if (k - start >= 12) throw new Http1ParseError("chunk size too large");
    size = size * 16 + d;
  }
  if (k === start) throw new Http1ParseError("bad chunk size");
  return size;
}
