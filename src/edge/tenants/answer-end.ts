/**
 * Tells when an answer is over, how many output tokens it had and how many prompt tokens the
 * engine says it computed (its usage; undefined when it says nothing), without changing a byte:
 * the body is read on demand (nothing is pulled before the client asks, so backpressure
 * still reaches the engine) and passed on as is, while the answer's own `usage`
 * (`completion_tokens`) is read on the side, or an SSE answer's output events are counted
 * when it has none (sse-counter.ts: not the role, usage or empty events).
 * The callback runs exactly once: at the end, on an error, or when the client leaves.
 */
import { SseDataCounter } from "../proxy/sse-counter.ts";
import { UsageSniffer } from "../../protect/usage-sniffer.ts";

/**
 * `res` with `onEnd(outputTokens, promptTokens)` called once its body is done. `outputTokens`: the answer's
 * usage when it reports one, else its SSE events with output, else `fallback` for a success and 0
 * for an error answer.
 */
export function onAnswerEnd(res: Response, fallback: number, onEnd: (outputTokens: number, promptTokens: number | undefined) => void): Response {
  const errorAnswer = res.status >= 400;
  if (res.body === null) {
    onEnd(errorAnswer ? 0 : fallback, undefined);
    return res;
  }
  const usage = new UsageSniffer();
  const sse = new SseDataCounter();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    sse.finish();
    onEnd(usage.completionTokens ?? (sse.events > 0 ? sse.tokens : errorAnswer ? 0 : fallback), usage.promptTokens);
  };
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      start(ctrl) {
        // The answer may end in error while nobody reads (the proxy cuts a client that took
        // nothing for the stream-idle deadline): pass it on at once, so the client's
        // connection is cut and the tenant's share settled, not when the client reads again.
        reader.closed.then(undefined, (e: unknown) => {
          end();
          try {
            ctrl.error(e);
          } catch {
            // already closed or errored by a read
          }
        });
      },
      async pull(ctrl) {
        try {
          const r = await reader.read();
          if (r.done) {
            end();
            ctrl.close();
            return;
          }
          usage.push(r.value);
          sse.push(r.value);
          ctrl.enqueue(r.value);
        } catch (e) {
          end();
          ctrl.error(e);
        }
      },
      cancel(reason) {
        end();
        return reader.cancel(reason);
      },
    },
    // Pull only when the client reads: the engine's stream pauses with the client.
    { highWaterMark: 0 },
  );
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}
