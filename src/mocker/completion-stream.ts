/**
 * A streamed completion answer (SSE): the response and its headers go out when prefill
 * starts, once the cached prefix is known; then one chunk per token, the usage chunk and
 * `[DONE]`. A client that leaves aborts the request in the engine; an error after the first
 * byte becomes an error chunk. It parses nothing and decides nothing about the request.
 */
import type { WorkerId } from "../core/ids.ts";
import type { GenerateRequest, MockEngine } from "./engine.ts";
import { AbortedError } from "./fifo.ts";
import { answerHeaders } from "./headers.ts";
import { error } from "./http.ts";
import { type ApiKind, type ResponseMeta, SseWriter } from "./openai.ts";

export interface StreamDeps {
  readonly engine: MockEngine;
  readonly workerId: WorkerId;
  readonly log: (line: string) => void;
}

/**
 * `abort` is the controller behind `genReq.signal`: cancelling the body aborts the request.
 * `zero` are the headers of an answer that never started (no cached tokens).
 */
export function streamCompletion(
  deps: StreamDeps,
  kind: ApiKind,
  m: ResponseMeta,
  genReq: GenerateRequest,
  abort: AbortController,
  zero: Record<string, string>,
): Promise<Response> {
  const { engine: eng, workerId, log } = deps;
  const w = new SseWriter(kind, m);
  return new Promise<Response>((resolve, reject) => {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    let open = true;
    let responded = false;
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        controller = c;
      },
      cancel: () => {
        open = false;
        abort.abort();
      },
    });
    const send = (chunk: Uint8Array) => {
      if (!open) return;
      try {
        controller.enqueue(chunk);
      } catch {
        open = false;
        abort.abort();
      }
    };
    const close = () => {
      if (!open) return;
      open = false;
      try {
        controller.close();
      } catch {
        // already closed by the client
      }
    };
    const last = genReq.maxTokens - 1;
    eng
      .generate(genReq, {
        start: (s) => {
          if (w.isChat) send(w.role());
          responded = true;
          resolve(new Response(body, { headers: answerHeaders(s, true, workerId) }));
        },
        token: (t, i) => send(w.token(t, i === last)),
      })
      .then(
        (r) => {
          send(w.usage(r));
          send(w.done());
          close();
        },
        (e) => {
          if (!responded) {
            if (e instanceof AbortedError) resolve(error(499, "client closed the request", "aborted", zero));
            else reject(e);
            return;
          }
          if (!(e instanceof AbortedError)) {
            log(`stream failed: ${e instanceof Error ? e.message : String(e)}`);
            send(w.error(e instanceof Error ? e.message : String(e), "internal_error"));
          }
          close();
        },
      );
  });
}
