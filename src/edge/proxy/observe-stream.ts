/**
 * Passes an upstream body to the client chunk by chunk, unchanged and unbuffered, while
 * counting SSE data events on the side. Reports every new token count, and the end of the
 * stream exactly once: "done" (upstream finished), "error" (upstream broke mid-stream; the
 * client's connection is broken too, so it cannot mistake a cut answer for a whole one),
 * "timeout" (the engine sent nothing for the stream-idle deadline: the engine connection is
 * closed, and an SSE answer ends with an error event in OpenAI's shape, any other is cut) or
 * "cancelled" (the client went away).
 *
 * Two stream flavours with the same behaviour: a standard pull stream (any runtime), and
 * Bun's "direct" stream (write + flush straight into the socket; less per-chunk work).
 */
import { openAiErrorEvent } from "../../protocol/openai-error.ts";
import { DeadlineMissedError } from "./deadlines.ts";
import { SseDataCounter } from "./sse-counter.ts";

export type StreamEnd = "done" | "error" | "timeout" | "cancelled";

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
  /** Called with the running count of data events after each chunk that added some. */
  onTokens?(total: number): void;
  /** Called with every chunk passed on (the request's observation keeps a JSON answer's tail for its usage). */
  onChunk?(chunk: Uint8Array): void;
  /** Called exactly once, whatever ends the stream; `bytes`: the engine's bytes passed on to the client. */
  onEnd(how: StreamEnd, tokens: number, bytes: number): void;
}

export interface StreamLimits {
  /** Milliseconds the engine may stay silent while a read waits; 0 = no limit. */
  readonly idleMs: number;
  /** The answer is SSE: end a timed-out stream with an error event instead of cutting it. */
  readonly sse: boolean;
}

const NO_LIMITS: StreamLimits = { idleMs: 0, sse: false };

/** Bun's direct stream controller (not in the web-standard typings). */
interface DirectController {
  write(chunk: Uint8Array): number | Promise<number>;
  flush(): number | Promise<number>;
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
  const watchdog = limits.idleMs > 0 ? new IdleWatchdog(limits.idleMs, reader) : undefined;
  const end = (how: StreamEnd): void => {
    if (ended) return;
    ended = true;
    watchdog?.stop();
    hooks.onEnd(how, counter.events, bytes);
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
    if (counter.push(chunk) > 0) hooks.onTokens?.(counter.events);
  };
  const finish = (): void => {
    if (counter.finish() > 0) hooks.onTokens?.(counter.events);
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
            if (!last && !counter.done) await controller.flush();
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
            if (!last && !counter.done) await controller.flush();
          }
        } catch (e) {
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
      async pull(controller) {
        if (pending !== undefined) {
          const chunk = pending;
          pending = undefined;
          see(chunk);
          controller.enqueue(chunk);
          if (reader.drained === true) {
            finish();
            controller.close();
          }
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
        }
      },
      cancel,
    },
    // No read-ahead: a chunk is pulled from upstream only when the client took the last.
    { highWaterMark: 0 },
  );
}

/**
 * The stream-idle deadline: one timer per stream, re-armed only when it fires early, so a
 * chunk costs a clock read, not a timer. Only time spent waiting on the engine counts (a
 * client that reads slowly is not the engine's fault). When it fires, the reader is
 * cancelled: the engine connection closes and the pending read returns.
 */
class IdleWatchdog {
  fired = false;
  readonly error: DeadlineMissedError;
  #waitingSince: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly ms: number,
    readonly reader: ChunkReader,
  ) {
    this.error = new DeadlineMissedError("stream_idle", ms);
    this.#arm(ms);
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
    const since = this.#waitingSince;
    const waited = since === undefined ? 0 : performance.now() - since;
    if (waited < this.ms) {
      this.#arm(this.ms - waited);
      return;
    }
    this.fired = true;
    void this.reader.cancel(this.error).catch(() => {});
  }
}
