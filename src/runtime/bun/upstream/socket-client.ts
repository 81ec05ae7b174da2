/**
 * The proxy's upstream client on Bun: HTTP/1.1 over TCP sockets opened with Bun.connect,
 * kept alive in a pool per origin, everything on the main thread. Bun's fetch hands each
 * request and each body chunk to its own client thread; at thousands of streamed requests a
 * second those hand-offs cost more CPU than the proxying itself (measured in bench/proxy).
 *
 * One request per connection at a time (no pipelining). A pooled connection that the
 * engine closed while it sat idle is noticed when it fails before the first answer byte;
 * the request is then sent once more on a new connection (the engine never saw it: it
 * answered nothing). Failures on a new connection reject, and the proxy tries another
 * worker. Body bytes are passed on as views of what the socket delivered, not copied; the
 * socket is paused while too much of an answer waits unread.
 *
 * URLs other than plain http:// go to the fallback (fetch).
 *
 * @example
 * const client = new SocketHttpClient({ fallback: fetchUpstream(fetch) });
 * const res = await client.request("http://127.0.0.1:8000", "/v1/completions", { headers, body });
 */
import type { Socket, SocketHandler } from "bun";
import { judgeDeadline } from "../../../core/lagged-deadline.ts";
import { ClientGoneError, DeadlineMissedError } from "../../../edge/proxy/deadlines.ts";
import type { LoopLagMeter } from "../../../observe/process-metrics.ts";
import type {
  UpstreamBody,
  UpstreamCall,
  UpstreamRequestInit,
  UpstreamResponse,
} from "../../../edge/proxy/upstream.ts";
import {
  Http1ParseError,
  Http1ResponseParser,
  type ParserSink,
  type ResponseHead,
} from "./http1-parser.ts";

export interface SocketClientOptions {
  /** Idle connections kept per origin (default 256); more are closed when released. */
  readonly maxIdlePerOrigin?: number;
  /** A pooled connection idle longer than this is closed, not reused (default 4000 ms, under common keep-alive timeouts). */
  readonly maxIdleMs?: number;
  /** Unread answer bytes above which the socket stops reading (default 1 MiB). */
  readonly highWaterBytes?: number;
  /** For URLs that are not http:// (https, unix ...). Without one they reject. */
  readonly fallback?: UpstreamCall;
  /** Milliseconds, monotonic (default performance.now). */
  readonly now?: () => number;
  /** A new connection not established within this many ms fails with DeadlineMissedError("connect"); 0 = no deadline (default). */
  readonly connectTimeoutMs?: number;
  /**
   * The router's event-loop lag: the connect deadline counts only time the loop could run
   * (judgeDeadline), so a connect the router itself was too busy to see is not a miss of the
   * engine. Without it, the deadline is plain wall time.
   */
  readonly loopLag?: LoopLagMeter;
}

/** A request failed before any answer byte on a connection that may have been closed while idle. */
class StaleConnectionError extends Error {}

interface Origin {
  readonly hostname: string;
  readonly port: number;
  /** Value of the host header. */
  readonly host: string;
  readonly idle: Conn[];
}

interface Conn {
  readonly origin: Origin;
  readonly client: SocketHttpClient;
  socket: Socket<Conn> | undefined;
  exchange: Exchange | undefined;
  /** Request bytes not yet accepted by the socket, in order. */
  pending: Uint8Array[];
  idleSince: number;
  closed: boolean;
}

const HANDLERS: SocketHandler<Conn, "uint8array"> = {
  binaryType: "uint8array",
  data(socket, data) {
    const conn = socket.data;
    const ex = conn.exchange;
    if (ex === undefined) {
      destroy(conn); // an idle connection must not speak
      return;
    }
    ex.onData(data);
  },
  drain(socket) {
    flushPending(socket.data);
  },
  end(socket) {
    closed(socket.data, undefined);
  },
  close(socket, error) {
    closed(socket.data, error);
  },
  error(socket, error) {
    closed(socket.data, error);
  },
  connectError() {
    // Bun.connect's promise rejects with the error; nothing to clean up.
  },
};

export class SocketHttpClient {
  readonly #origins = new Map<string, Origin | null>();
  readonly #maxIdle: number;
  readonly #maxIdleMs: number;
  readonly highWaterBytes: number;
  readonly #fallback: UpstreamCall | undefined;
  readonly #now: () => number;
  readonly #connectTimeoutMs: number;
  readonly #loopLag: LoopLagMeter | undefined;

  constructor(opts: SocketClientOptions = {}) {
    this.#maxIdle = opts.maxIdlePerOrigin ?? 256;
    this.#maxIdleMs = opts.maxIdleMs ?? 4000;
    this.highWaterBytes = opts.highWaterBytes ?? 1 << 20;
    this.#fallback = opts.fallback;
    this.#now = opts.now ?? (() => performance.now());
    this.#connectTimeoutMs = opts.connectTimeoutMs ?? 0;
    this.#loopLag = opts.loopLag;
  }

  /** The client as an UpstreamCall. */
  readonly call: UpstreamCall = (baseUrl, path, init) => this.request(baseUrl, path, init);

  async request(
    baseUrl: string,
    path: string,
    init: UpstreamRequestInit,
  ): Promise<UpstreamResponse> {
    const origin = this.#origin(baseUrl);
    if (origin === null) {
      if (this.#fallback) return this.#fallback(baseUrl, path, init);
      throw new Error(`unsupported upstream URL ${baseUrl} (only http:// without a fallback)`);
    }
    checkHeaders(init.headers);
    const signal = init.signal;
    if (signal?.aborted) throw signal.reason;
    const pooled = this.#takeIdle(origin);
    if (pooled !== undefined) {
      try {
        return await send(pooled, origin, path, init);
      } catch (e) {
        if (!(e instanceof StaleConnectionError) || signal?.aborted) throw e;
      }
    }
    return send(await this.#connect(origin, signal), origin, path, init);
  }

  /** Close every idle connection (in-flight ones finish). */
  closeIdle(): void {
    for (const o of this.#origins.values()) {
      if (o === null) continue;
      for (const c of o.idle.splice(0)) destroy(c);
    }
  }

  /** Idle connections per origin host (tests, metrics). */
  idleCount(baseUrl: string): number {
    return this.#origin(baseUrl)?.idle.length ?? 0;
  }

  /** Back to the pool after a complete answer, or closed. */
  release(conn: Conn): void {
    const idle = conn.origin.idle;
    if (conn.closed || idle.length >= this.#maxIdle) {
      destroy(conn);
      return;
    }
    conn.idleSince = this.#now();
    conn.socket?.unref(); // idle sockets keep no process alive
    idle.push(conn);
  }

  #takeIdle(origin: Origin): Conn | undefined {
    const idle = origin.idle;
    const now = this.#now();
    while (idle.length > 0) {
      const c = idle.pop()!;
      if (c.closed) continue;
      if (now - c.idleSince > this.#maxIdleMs) {
        // The most recently used one is too old, so are the rest.
        destroy(c);
        for (const old of idle.splice(0)) destroy(old);
        return undefined;
      }
      c.socket?.ref();
      return c;
    }
    return undefined;
  }

  /**
   * A new connection, within the connect deadline and until the signal aborts. Bun.connect
   * takes no timeout or signal, so it is raced; a socket that opens after the race was lost
   * is closed at once.
   */
  async #connect(origin: Origin, signal: AbortSignal | undefined): Promise<Conn> {
    const conn: Conn = {
      origin,
      client: this,
      socket: undefined,
      exchange: undefined,
      pending: [],
      idleSince: 0,
      closed: false,
    };
    const connecting = Bun.connect<Conn>({
      hostname: origin.hostname,
      port: origin.port,
      data: conn,
      socket: HANDLERS as unknown as SocketHandler<Conn>,
    });
    const limit = this.#connectTimeoutMs;
    if (limit <= 0 && signal === undefined) return opened(conn, await connecting);
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    const lost = new Promise<never>((_, reject) => {
      if (limit > 0) {
        const start = this.#now();
        const lag = this.#loopLag;
        const mark = lag?.mark();
        // The deadline counts the time the router could watch: stretched while its loop was
        // held (judgeDeadline), ended without blame past the stretch limit.
        const judge = () => {
          const v =
            lag === undefined
              ? ({ kind: "missed" } as const)
              : judgeDeadline(limit, this.#now() - start, lag.lagSince(mark!));
          if (v.kind === "wait") timer = setTimeout(judge, v.ms);
          else
            reject(
              new DeadlineMissedError("connect", limit, v.kind === "excused" ? v.lagMs : undefined),
            );
        };
        timer = setTimeout(judge, limit);
      }
      if (signal !== undefined) {
        onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
      }
    });
    try {
      return opened(conn, await Promise.race([connecting, lost]));
    } catch (e) {
      connecting.then(
        (s) => s.terminate(),
        () => {},
      );
      throw e;
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
    }
  }

  #origin(baseUrl: string): Origin | null {
    let o = this.#origins.get(baseUrl);
    if (o !== undefined) return o;
    o = null;
    try {
      const u = new URL(baseUrl);
      if (u.protocol === "http:" && u.username === "" && u.password === "") {
        const hostname = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
        o = { hostname, port: u.port === "" ? 80 : Number(u.port), host: u.host, idle: [] };
      }
    } catch {
      o = null;
    }
    this.#origins.set(baseUrl, o);
    return o;
  }
}

function opened(conn: Conn, socket: Socket<Conn>): Conn {
  conn.socket = socket;
  socket.setNoDelay(true);
  return conn;
}

/** Start one request on a connection; resolves at the answer's head. */
function send(
  conn: Conn,
  origin: Origin,
  path: string,
  init: UpstreamRequestInit,
): Promise<UpstreamResponse> {
  const socket = conn.socket;
  if (conn.closed || socket === undefined)
    return Promise.reject(new StaleConnectionError("connection closed"));
  const ex = new Exchange(conn);
  conn.exchange = ex;
  if (init.signal !== undefined) ex.abortHeadOn(init.signal);
  // Encoded into a shared buffer and written at once; only what the socket did not take
  // (rare: a full send buffer) is copied aside for the drain.
  const bytes = encodeRequest(origin.host, path, init);
  const n = socket.write(bytes);
  if (n < bytes.length)
    conn.pending.push(
      bytes === scratch ? bytes.slice(Math.max(n, 0)) : bytes.subarray(Math.max(n, 0)),
    );
  else ex.requestSent();
  return ex.headPromise;
}

function flushPending(conn: Conn): void {
  const socket = conn.socket;
  if (socket === undefined || conn.closed) return;
  const pending = conn.pending;
  while (pending.length > 0) {
    const data = pending[0]!;
    const n = socket.write(data);
    if (n >= data.length) {
      pending.shift();
      continue;
    }
    if (n > 0) pending[0] = data.subarray(n);
    return; // the rest on drain
  }
  conn.exchange?.requestSent();
}

function destroy(conn: Conn): void {
  if (conn.closed) return;
  conn.closed = true;
  removeIdle(conn);
  conn.socket?.terminate();
}

function removeIdle(conn: Conn): void {
  const idle = conn.origin.idle;
  const k = idle.indexOf(conn);
  if (k >= 0) idle.splice(k, 1);
}

/** The socket is gone (peer closed, error, or we closed it). */
function closed(conn: Conn, error: Error | undefined): void {
  conn.closed = true;
  removeIdle(conn);
  conn.pending.length = 0;
  const ex = conn.exchange;
  conn.exchange = undefined;
  ex?.onClosed(error);
}

/** One request/answer on a connection; the answer's body reader once the head is in. */
class Exchange implements UpstreamBody, ParserSink {
  readonly headPromise: Promise<UpstreamResponse>;
  #resolveHead!: (r: UpstreamResponse) => void;
  #rejectHead!: (e: Error) => void;
  readonly #parser = new Http1ResponseParser(this);
  #conn: Conn | undefined;
  #headSeen = false;
  #keepAlive = false;
  #sent = false;
  #ended = false;
  #error: Error | undefined;
  #cancelled = false;
  #queue: Uint8Array[] = [];
  #queuedBytes = 0;
  #paused = false;
  #waiter:
    | { resolve: (r: { done: boolean; value?: Uint8Array }) => void; reject: (e: unknown) => void }
    | undefined;

  constructor(conn: Conn) {
    this.#conn = conn;
    this.headPromise = new Promise<UpstreamResponse>((resolve, reject) => {
      this.#resolveHead = resolve;
      this.#rejectHead = reject;
    });
  }

  /** Until the head arrives, an abort closes the connection (the engine sees it) and rejects the head. */
  abortHeadOn(signal: AbortSignal): void {
    const onAbort = () => {
      if (this.#headSeen || this.#error !== undefined) return;
      this.#fail(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
      const conn = this.#conn;
      this.#conn = undefined;
      if (conn !== undefined) {
        conn.exchange = undefined;
        destroy(conn);
      }
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const off = () => signal.removeEventListener("abort", onAbort);
    this.headPromise.then(off, off);
  }

  // ---- socket side

  onData(data: Uint8Array): void {
    // Taken first: a push that completes the answer detaches (and may pool) the connection.
    const conn = this.#conn;
    try {
      this.#parser.push(data);
    } catch (e) {
      this.#deliver();
      this.#fail(e instanceof Error ? e : new Error(String(e)));
      if (conn) destroy(conn);
      return;
    }
    // Everything this packet held goes to the reader at once: one write to the client.
    this.#deliver();
  }

  onClosed(error: Error | undefined): void {
    this.#conn = undefined;
    if (this.#ended || this.#cancelled) return;
    if (!this.#parser.started) {
      const why = error ? `: ${error.message}` : "";
      this.#fail(
        new StaleConnectionError(`upstream connection closed before any answer byte${why}`),
      );
      return;
    }
    try {
      this.#parser.eof(); // completes a read-until-close body
    } catch (e) {
      this.#fail(error ?? (e as Error));
    }
  }

  requestSent(): void {
    this.#sent = true;
    if (this.#ended) this.#detach();
  }

  // ---- parser side

  head(h: ResponseHead): void {
    this.#headSeen = true;
    this.#keepAlive = h.keepAlive;
    this.#resolveHead({
      status: h.status,
      statusText: h.statusText,
      headers: h.headers,
      body: this,
    });
  }

  body(chunk: Uint8Array): void {
    if (this.#cancelled || chunk.length === 0) return;
    this.#queue.push(chunk);
    this.#queuedBytes += chunk.length;
    const conn = this.#conn;
    if (!this.#paused && conn !== undefined && this.#queuedBytes > conn.client.highWaterBytes) {
      this.#paused = true;
      conn.socket?.pause();
    }
  }

  end(): void {
    this.#ended = true;
    this.#deliver();
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.resolve({ done: true });
    if (this.#sent) this.#detach();
  }

  // ---- reader side (UpstreamBody)

  get drained(): boolean {
    return this.#ended && this.#queue.length === 0;
  }

  read(): Promise<{ done: boolean; value?: Uint8Array }> {
    if (this.#queue.length > 0) return Promise.resolve({ done: false, value: this.#take() });
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#ended || this.#cancelled) return Promise.resolve({ done: true });
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  cancel(): Promise<void> {
    if (this.#ended || this.#cancelled || this.#error !== undefined) return Promise.resolve();
    this.#cancelled = true;
    this.#queue.length = 0;
    this.#queuedBytes = 0;
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.resolve({ done: true });
    const conn = this.#conn;
    this.#conn = undefined;
    if (conn) {
      conn.exchange = undefined;
      destroy(conn); // the rest of the answer is not wanted: the engine sees the close
    }
    return Promise.resolve();
  }

  // ----

  /** A pending read gets everything queued. */
  #deliver(): void {
    const w = this.#waiter;
    if (w === undefined || this.#queue.length === 0) return;
    this.#waiter = undefined;
    w.resolve({ done: false, value: this.#take() });
  }

  /** All queued bytes as one chunk (small pieces, e.g. SSE events, are copied together). */
  #take(): Uint8Array {
    const q = this.#queue;
    let value: Uint8Array;
    if (q.length === 1) value = q[0]!;
    else {
      value = new Uint8Array(this.#queuedBytes);
      let off = 0;
      for (const c of q) {
        value.set(c, off);
        off += c.length;
      }
    }
    q.length = 0;
    this.#queuedBytes = 0;
    const conn = this.#conn;
    if (this.#paused && conn !== undefined) {
      this.#paused = false;
      conn.socket?.resume();
    }
    return value;
  }

  #fail(e: Error): void {
    if (this.#ended || this.#cancelled || this.#error !== undefined) return;
    if (!this.#headSeen) {
      this.#error = e;
      const keep =
        e instanceof Http1ParseError ||
        e instanceof StaleConnectionError ||
        e instanceof DeadlineMissedError ||
        e instanceof ClientGoneError;
      this.#rejectHead(keep ? e : new Error(e.message));
      return;
    }
    this.#error = e;
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.reject(e);
  }

  /** The answer is complete and the request fully sent: the connection is free again. */
  #detach(): void {
    const conn = this.#conn;
    this.#conn = undefined;
    if (conn === undefined) return;
    conn.exchange = undefined;
    if (this.#keepAlive) conn.client.release(conn);
    else destroy(conn);
  }
}

const encoder = new TextEncoder();
/** Request headers the client writes itself. */
const OWN_HEADERS = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
]);

/** Requests up to this size are encoded into one reused buffer (the socket copies what it takes). */
const SCRATCH_MAX = 256 * 1024;
let scratchBuf = new Uint8Array(16 * 1024);
/** The view of scratchBuf the last encodeRequest filled (compared by identity in send). */
let scratch: Uint8Array = scratchBuf;

/**
 * The request's bytes: `POST path HTTP/1.1`, host, content-length, the given headers, the
 * body, in one buffer for one write. Small requests reuse one buffer: valid until the next call.
 */
function encodeRequest(host: string, path: string, init: UpstreamRequestInit): Uint8Array {
  const body = init.body;
  let head = `POST ${path} HTTP/1.1\r\nhost: ${host}\r\ncontent-length: ${body.length}\r\n`;
  const headers = init.headers;
  for (const name in headers) if (!OWN_HEADERS.has(name)) head += `${name}: ${headers[name]}\r\n`;
  head += "\r\n";
  const total = head.length + body.length;
  let out: Uint8Array;
  if (total <= SCRATCH_MAX) {
    if (scratchBuf.length < total) scratchBuf = new Uint8Array(Math.min(SCRATCH_MAX, 2 * total));
    out = scratch = scratchBuf.subarray(0, total);
  } else out = new Uint8Array(total);
  if (NON_ASCII.test(head)) {
    for (let i = 0; i < head.length; i++) out[i] = head.charCodeAt(i) & 0xff; // latin-1 (RFC 9110 §5.5)
  } else encoder.encodeInto(head, out);
  out.set(body, head.length);
  return out;
}

/** Refuse header names or values that would break the request's framing. */
function checkHeaders(headers: Readonly<Record<string, string>>): void {
  for (const name in headers) {
    if (LINE_BREAK.test(headers[name]!) || LINE_BREAK.test(name))
      throw new Error(`header ${JSON.stringify(name)} contains a line break`);
  }
}

const LINE_BREAK = /[\r\n]/;

const NON_ASCII = /[^\x00-\x7f]/;
