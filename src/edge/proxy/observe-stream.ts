/**
 * Passes an upstream body to the client chunk by chunk, unchanged and unbuffered, while
 * counting SSE data events on the side. Reports every new token count, and the end of the
 * stream exactly once: "done" (upstream finished), "error" (upstream broke mid-stream; the
 * client's connection is broken too, so it cannot mistake a cut answer for a whole one),
 * "timeout" (the engine sent nothing for the stream-idle deadline: the engine connection is
 * closed, and an SSE answer ends with an error event in OpenAI's shape, any other is cut),
 * "client_timeout" (the client took nothing for the same deadline: both connections are cut)
 * or "cancelled" (the client went away).
 *
 * Backpressure: a chunk is read from the engine only once the client's socket took the last
 * one, so a client that stops reading stops the engine's socket too (the upstream client
 * pauses it past its high-water mark) instead of the router buffering the whole answer:
 * buffered, a 1 GB answer to a client that stops reading would grow the router by about 1.4 GB.
 *
 * Two stream flavours with the same behaviour: a standard pull stream (any runtime), and
 * Bun's "direct" stream (write + flush straight into the socket; less per-chunk work).
 */
import { vllmStreamFailure } from "../../protocol/openai-error.ts";
import { ClientStalledError, DeadlineMissedError } from "./deadlines.ts";
import { SseDataCounter } from "./sse-counter.ts";

export type StreamEnd = "done" | "error" | "timeout" | "client_timeout" | "cancelled";

/** The part of a stream reader this module uses (structural, so any runtime's reader fits). */
export interface ChunkReader {
  read(): Promise<{ done: boolean; value?: Uint8Array | undefined }>;
  cancel(reason?: unknown): Promise<void>;
  /**
   * True once the whole body has arrived and been read (the next read() says done), so
   * the stream can end right after the chunk just read, sending it with the end in one
   * write. Readers that cannot tell leave it undefined.
   */
  readonly drained?: boolean;
  /**
   * The engine sent nothing for the stream-idle deadline. A reader that can go on without this
   * engine (migration/moving-reader.ts) answers true and the wait is timed afresh; otherwise the
   * stream ends with the idle deadline's error event.
   */
  engineSilent?(): boolean;
}

export interface StreamHooks {
  /** Called after each chunk that added data events, with the output tokens so far as the engine counts them (sse-counter.ts). */
  onTokens?(total: number): void;
  /** Called with every chunk passed on (the request's observation keeps a JSON answer's tail for its usage). */
  onChunk?(chunk: Uint8Array): void;
  /** Called with what the router adds after the engine's bytes (the idle deadline's error event), before `onEnd`. */
  onTail?(chunk: Uint8Array): void;
  /** Called exactly once, whatever ends the stream; `bytes`: the engine's bytes passed on to the client. */
  onEnd(how: StreamEnd, tokens: number, bytes: number): void;
}

export interface StreamLimits {
  /** Milliseconds the engine may stay silent while a read waits, and the client may take to take a chunk; 0 = no limit. */
  readonly idleMs: number;
  /** The answer is SSE: end a timed-out stream with an error event instead of cutting it. */
  readonly sse: boolean;
}

const NO_LIMITS: StreamLimits = { idleMs: 0, sse: false };

/** Bun's direct stream controller (not in the web-standard typings). */
interface DirectController {
  write(chunk: Uint8Array): number | Promise<number>;
  /**
   * Sends what was written. `flush(true)` returns a promise while the client's socket cannot
   * take more (it settles once it drained), a number when it took everything; plain
   * `flush()` never waits, so the router would buffer whatever the engine sends. A stream
   * read by JavaScript instead of a socket answers undefined: there is no socket to wait for.
   */
  flush(wait?: boolean): number | Promise<number> | undefined;
  close(): void;
}

/**
 * @param first a chunk already read from `reader` (the router reads one before answering,
 *   so a failure before the first byte can still be retried elsewhere); may be undefined.
 * @param direct use Bun's direct stream (only where the runtime is Bun).
 */
export function observeStream(
  first: Uint8Array | undefined,
  reader: ChunkReader,
  hooks: StreamHooks,
  direct = false,
  limits: StreamLimits = NO_LIMITS,
): ReadableStream<Uint8Array> {
  const p = new Passage(first, reader, hooks, limits);
  return direct ? directStream(p) : pullStream(p);
}

/** One stream on its way: what both flavours share (counting what passes, the one end, the idle deadline). */
class Passage {
  readonly counter = new SseDataCounter();
  bytes = 0;
  ended = false;
  /** The chunk read before answering, not yet passed on. */
  pending: Uint8Array | undefined;
  /** Pull flavour: errors the client's stream when the client stalls. */
  failClient: ((e: Error) => void) | undefined;
  readonly watchdog: IdleWatchdog | undefined;

  constructor(
    first: Uint8Array | undefined,
    readonly reader: ChunkReader,
    readonly hooks: StreamHooks,
    readonly limits: StreamLimits,
  ) {
    this.pending = first;
    this.watchdog =
      limits.idleMs > 0
        ? new IdleWatchdog(limits.idleMs, reader, (e) => {
            this.end("client_timeout");
            this.failClient?.(e);
          })
        : undefined;
  }

  end(how: StreamEnd): void {
    if (this.ended) return;
    this.ended = true;
    this.watchdog?.stop();
    this.hooks.onEnd(how, this.counter.tokens, this.bytes);
  }

  /** Direct flavour: send what was written, waiting while the client's socket is full. */
  async flushToClient(controller: DirectController): Promise<void> {
    const f = controller.flush(true);
    if (f === undefined || typeof f === "number") return;
    await (this.watchdog === undefined ? f : this.watchdog.clientTakes(f));
  }

  /** A read, timed by the watchdog while it waits on the engine. */
  read(): Promise<{ done: boolean; value?: Uint8Array | undefined }> {
    return this.watchdog === undefined ? this.reader.read() : this.watchdog.read();
  }

  /** The idle deadline passed: what the client gets last (an SSE error event, or a cut). */
  timedOut(): Uint8Array | undefined {
    const e = this.watchdog!.error;
    // vLLM's own end of a failed stream (the stream's 200 is already sent), so a client written
    // against vLLM meets nothing new; the message says which deadline.
    const tail = this.limits.sse
      ? vllmStreamFailure(
          `stream idle deadline of ${e.ms / 1000} s missed: the engine sent nothing; the answer is incomplete`,
        )
      : undefined;
    // Before the end: what reads the client's bytes at the end has read this too.
    if (tail !== undefined) this.hooks.onTail?.(tail);
    this.end("timeout");
    return tail;
  }

  see(chunk: Uint8Array): void {
    this.bytes += chunk.byteLength;
    this.hooks.onChunk?.(chunk);
    if (this.counter.push(chunk) > 0) this.hooks.onTokens?.(this.counter.tokens);
  }

  finish(): void {
    if (this.counter.finish() > 0) this.hooks.onTokens?.(this.counter.tokens);
    this.end("done");
  }

  readonly cancel = (reason: unknown): Promise<void> => {
    this.end("cancelled");
    return this.reader.cancel(reason).catch(() => {});
  };
}

/** Bun's direct stream: write + flush straight into the client's socket. */
function directStream(p: Passage): ReadableStream<Uint8Array> {
  const { reader, watchdog, counter } = p;
  const source = {
    type: "direct",
    async pull(controller: DirectController) {
      try {
        let last = false;
        if (p.pending !== undefined) {
          p.see(p.pending);
          controller.write(p.pending);
          p.pending = undefined;
          last = reader.drained === true;
          if (!last && !counter.done) await p.flushToClient(controller);
        }
        while (!last) {
          const r = await p.read();
          if (watchdog?.fired) break;
          if (r.done || r.value === undefined) break;
          p.see(r.value);
          controller.write(r.value);
          // The end came with this chunk, or only the end follows [DONE]: let close() send
          // the tail and the end of the stream in one write.
          last = reader.drained === true;
          if (!last && !counter.done) await p.flushToClient(controller);
        }
      } catch (e) {
        if (e instanceof ClientStalledError) throw e; // aborts the client's connection
        if (p.ended) return; // the client left; the read was cut short by our cancel
        if (!watchdog?.fired) {
          p.end("error");
          throw e; // aborts the client's connection
        }
      }
      if (watchdog?.fired) {
        const tail = p.timedOut();
        if (tail === undefined) throw watchdog.error; // not SSE: cut, so it is not mistaken for a whole answer
        controller.write(tail);
        controller.close();
        return;
      }
      p.finish();
      controller.close();
    },
    cancel: p.cancel,
  };
  return new ReadableStream(
    source as unknown as ConstructorParameters<typeof ReadableStream<Uint8Array>>[0],
  );
}

/** A standard pull stream (any runtime). */
function pullStream(p: Passage): ReadableStream<Uint8Array> {
  const { reader, watchdog } = p;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        p.failClient = (e) => controller.error(e);
      },
      async pull(controller) {
        // The client took the last chunk: from here the engine's silence is what is timed.
        watchdog?.clientTook();
        if (p.pending !== undefined) {
          const chunk = p.pending;
          p.pending = undefined;
          p.see(chunk);
          controller.enqueue(chunk);
          if (reader.drained === true) {
            p.finish();
            controller.close();
          } else watchdog?.clientWaiting();
          return;
        }
        let r: Awaited<ReturnType<ChunkReader["read"]>>;
        try {
          r = await p.read();
        } catch (e) {
          if (!watchdog?.fired) {
            p.end("error");
            controller.error(e);
            return;
          }
          r = { done: true };
        }
        if (watchdog?.fired) {
          if (p.ended) return;
          const tail = p.timedOut();
          if (tail === undefined) controller.error(watchdog.error);
          else {
            controller.enqueue(tail);
            controller.close();
          }
          return;
        }
        if (r.done || r.value === undefined) {
          p.finish();
          controller.close();
          return;
        }
        p.see(r.value);
        controller.enqueue(r.value);
        if (reader.drained === true) {
          p.finish();
          controller.close();
        } else watchdog?.clientWaiting();
      },
      cancel: p.cancel,
    },
    // No read-ahead: a chunk is pulled from upstream only when the client took the last.
    { highWaterMark: 0 },
  );
}

/**
 * The stream-idle deadline, both ways: one timer per stream, re-armed only when it fires
 * early, so a chunk costs a clock read, not a timer. Time waiting on the engine and time
 * waiting for the client to take a chunk are timed apart (a client that reads slowly is not
 * the engine's fault, and the engine's silence is not the client's). When the engine is
 * silent too long the reader is cancelled: the engine connection closes and the pending read
 * returns. When the client takes nothing too long, the reader is cancelled as well and
 * `onClientStall` cuts the client: otherwise a client that stopped reading would hold its
 * connection, the engine's and the booking for as long as it liked.
 */
class IdleWatchdog {
  fired = false;
  readonly error: DeadlineMissedError;
  #waitingSince: number | undefined;
  /** Since when a chunk waits for the client to take it. */
  #clientSince: number | undefined;
  /** Rejects the client wait of the direct flavour when the client stalls. */
  #rejectClientWait: ((e: Error) => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly ms: number,
    readonly reader: ChunkReader,
    readonly onClientStall: (e: ClientStalledError) => void,
  ) {
    this.error = new DeadlineMissedError("stream_idle", ms);
    this.#arm(ms);
  }

  /** Pull flavour: a chunk was handed over; the client has to take it. */
  clientWaiting(): void {
    this.#clientSince = performance.now();
  }

  /** Pull flavour: the client took the chunk (the next pull came). */
  clientTook(): void {
    this.#clientSince = undefined;
  }

  /** Direct flavour: wait for the client's socket to drain, at most the deadline. */
  async clientTakes<T>(drained: Promise<T>): Promise<T> {
    this.#clientSince = performance.now();
    try {
      return await new Promise<T>((resolve, reject) => {
        this.#rejectClientWait = reject;
        drained.then(resolve, reject);
      });
    } finally {
      this.#clientSince = undefined;
      this.#rejectClientWait = undefined;
    }
  }

  async read(): Promise<{ done: boolean; value?: Uint8Array | undefined }> {
    this.#waitingSince = performance.now();
    try {
      return await this.reader.read();
    } finally {
      this.#waitingSince = undefined;
    }
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#check(), ms);
  }

  #check(): void {
    this.#timer = undefined;
    const now = performance.now();
    const since = this.#waitingSince;
    const waited = since === undefined ? 0 : now - since;
    const clientSince = this.#clientSince;
    const clientWaited = clientSince === undefined ? 0 : now - clientSince;
    if (clientWaited >= this.ms) {
      const e = new ClientStalledError(this.ms);
      void this.reader.cancel(e).catch(() => {});
      this.onClientStall(e);
      this.#rejectClientWait?.(e);
      return;
    }
    if (waited < this.ms) {
      this.#arm(this.ms - Math.max(waited, clientWaited));
      return;
    }
    if (this.reader.engineSilent?.() === true) {
      this.#waitingSince = now;
      this.#arm(this.ms);
      return;
    }
    this.fired = true;
    void this.reader.cancel(this.error).catch(() => {});
  }
}
