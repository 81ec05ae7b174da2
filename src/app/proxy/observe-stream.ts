/**
 * Passes an upstream body to the client chunk by chunk, unchanged and unbuffered, while
 * counting SSE data events on the side. Reports every new token count, and the end of the
 * stream exactly once: "done" (upstream finished), "error" (upstream broke mid-stream; the
 * client's connection is broken too, so it cannot mistake a cut answer for a whole one) or
 * "cancelled" (the client went away).
 *
 * Two stream flavours with the same behaviour: a standard pull stream (any runtime), and
 * Bun's "direct" stream (write + flush straight into the socket; less per-chunk work).
 */
import { SseDataCounter } from "./sse-counter.ts";

export type StreamEnd = "done" | "error" | "cancelled";

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
  /** Called exactly once, whatever ends the stream. */
  onEnd(how: StreamEnd, tokens: number): void;
}

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
): ReadableStream<Uint8Array> {
  const counter = new SseDataCounter();
  let ended = false;
  const end = (how: StreamEnd): void => {
    if (ended) return;
    ended = true;
    hooks.onEnd(how, counter.events);
  };
  const see = (chunk: Uint8Array): void => {
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
            const r = await reader.read();
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
          end("error");
          throw e; // aborts the client's connection
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
          r = await reader.read();
        } catch (e) {
          end("error");
          controller.error(e);
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
