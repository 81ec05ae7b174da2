/**
 * Passes an upstream body to the client chunk by chunk, unchanged and unbuffered, while
 * counting SSE data events on the side. Reports the first token, every new token count,
 * and the end of the stream exactly once: "done" (upstream finished), "error" (upstream
 * broke mid-stream; the client sees the error) or "cancelled" (the client went away).
 */
import { SseDataCounter } from "./sse-counter.ts";

export type StreamEnd = "done" | "error" | "cancelled";

/** The part of a stream reader this module uses (structural, so any runtime's reader fits). */
export interface ChunkReader {
  read(): Promise<{ done: boolean; value?: Uint8Array | undefined }>;
  cancel(reason?: unknown): Promise<void>;
}

export interface StreamHooks {
  /** Called with the running count of data events after each chunk that added some. */
  onTokens?(total: number): void;
  /** Called exactly once, whatever ends the stream. */
  onEnd(how: StreamEnd, tokens: number): void;
}

/**
 * @param first a chunk already read from `reader` (the router reads one before answering,
 *   so a failure before the first byte can still be retried elsewhere); may be undefined.
 */
export function observeStream(
  first: Uint8Array | undefined,
  reader: ChunkReader,
  hooks: StreamHooks,
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
  let pending = first;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (pending !== undefined) {
          const chunk = pending;
          pending = undefined;
          see(chunk);
          controller.enqueue(chunk);
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
          if (counter.finish() > 0) hooks.onTokens?.(counter.events);
          end("done");
          controller.close();
          return;
        }
        see(r.value);
        controller.enqueue(r.value);
      },
      cancel(reason) {
        end("cancelled");
        return reader.cancel(reason).catch(() => {});
      },
    },
    // No read-ahead: a chunk is pulled from upstream only when the client took the last.
    { highWaterMark: 0 },
  );
}
