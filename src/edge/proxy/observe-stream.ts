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
import { openAiErrorEvent } from "../../protocol/openai-error.ts";
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
}

export interface StreamHooks {
  /** Called after each chunk that added data events, with the output tokens so far as the engine counts them (sse-counter.ts). */
  onTokens?(total: number): void;
  /** Called with every chunk passed on (the request's observation keeps a JSON answer's tail for its usage). */
  onChunk?(chunk: Uint8Array): void;
  /** Called exactly once, whatever ends the stream; `tokens`: its output tokens (sse-counter.ts), `bytes`: the engine's bytes passed on to the client. */
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
  const counter = new SseDataCounter();
  let bytes = 0;
  let ended = false;
  /** Pull flavour: errors the client's stream when the client stalls. */
  let failClient: ((e: Error) => void) | undefined;
  const watchdog =
    limits.idleMs > 0
      ? new IdleWatchdog(limits.idleMs, reader, (e) => {
          end("client_timeout");
          failClient?.(e);
        })
      : undefined;
  const end = (how: StreamEnd): void => {
    if (ended) return;
    ended = true;
    watchdog?.stop();
    hooks.onEnd(how, counter.tokens, bytes);
  };
  /** Direct flavour: send what was written, waiting while the client's socket is full. */
  const flushToClient = async (controller: DirectController): Promise<void> => {
    const f = controller.flush(true);
    if (f === undefined || typeof f === "number") return;
    await (watchdog === undefined ? f : watchdog.clientTakes(f));
  };
  /** A read, timed by the watchdog while it waits on the engine. */
  const read = watchdog === undefined ? () => reader.read() : () => watchdog.read();
  /** The idle deadline passed: what the client gets last (an SSE error event, or a cut). */
  const timedOut = (): Uint8Array | undefined => {
    end("timeout");
    if (!limits.sse) return undefined;
    const e = watchdog!.error;
    // 504: the engine, not the client, timed out (the stream's own status is already sent).
    return openAiErrorEvent(504, `the engine sent nothing for ${e.ms / 1000} s; the answer is incomplete`, { code: "stream_idle_timeout" });
  };
  const see = (chunk: Uint8Array): void => {
    bytes += chunk.byteLength;
    hooks.onChunk?.(chunk);
    if (counter.push(chunk) > 0) hooks.onTokens?.(counter.tokens);
  };
  const finish = (): void => {
    if (counter.finish() > 0) hooks.onTokens?.(counter.tokens);
    end("done");
  };
  const cancel = (reason: unknown): Promise<void> => {
    end("cancelled");
    return reader.cancel(reason).catch(() => {});
  };
  let pending = first;

  if (direct) {
    const source = {
      type: "direct",
      async pull(controller: DirectController) {
        try {
          let last = false;
          if (pending !== undefined) {
            see(pending);
            controller.write(pending);
            pending = undefined;
            last = reader.drained === true;
            if (!last && !counter.done) await flushToClient(controller);
          }
          while (!last) {
            const r = await read();
            if (watchdog?.fired) break;
            if (r.done || r.value === undefined) break;
            see(r.value);
            controller.write(r.value);
            // The end came with this chunk, or only the end follows [DONE]: let close() send
            // the tail and the end of the stream in one write.
            last = reader.drained === true;
            if (!last && !counter.done) await flushToClient(controller);
          }
        } catch (e) {
          if (e instanceof ClientStalledError) throw e; // aborts the client's connection
          if (ended) return; // the client left; the read was cut short by our cancel
          if (!watchdog?.fired) {
            end("error");
            throw e; // aborts the client's connection
          }
        }
        if (watchdog?.fired) {
          const tail = timedOut();
          if (tail === undefined) throw watchdog.error; // not SSE: cut, so it is not mistaken for a whole answer
          controller.write(tail);
          controller.close();
          return;
        }
        finish();
        controller.close();
      },
      cancel,
    };
    return new ReadableStream(source as unknown as ConstructorParameters<typeof ReadableStream<Uint8Array>>[0]);
  }

  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        failClient = (e) => controller.error(e);
      },
      async pull(controller) {
        // The client took the last chunk: from here the engine's silence is what is timed.
        watchdog?.clientTook();
        if (pending !== undefined) {
          const chunk = pending;
          pending = undefined;
          see(chunk);
          controller.enqueue(chunk);
          if (reader.drained === true) {
            finish();
            controller.close();
          } else watchdog?.clientWaiting();
          return;
        }
        let r: Awaited<ReturnType<ChunkReader["read"]>>;
        try {
          r = await read();
        } catch (e) {
          if (!watchdog?.fired) {
            end("error");
            controller.error(e);
            return;
          }
          r = { done: true };
        }
        if (watchdog?.fired) {
          if (ended) return;
          const tail = timedOut();
          if (tail === undefined) controller.error(watchdog.error);
          else {
            controller.enqueue(tail);
            controller.close();
          }
          return;
        }
        if (r.done || r.value === undefined) {
          finish();
          controller.close();
          return;
        }
        see(r.value);
        controller.enqueue(r.value);
        if (reader.drained === true) {
          finish();
          controller.close();
        } else watchdog?.clientWaiting();
      },
      cancel,
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
    this.fired = true;
    void this.reader.cancel(this.error).catch(() => {});
  }
}
