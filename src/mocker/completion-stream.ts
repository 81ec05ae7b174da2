/**
 * A streamed completion answer (SSE): the response and its headers go out when prefill
 * starts, once the cached prefix is known; then one chunk per token (a chat stream's role chunk
 * with the first of them), the usage chunk only when the request asked for it
 * (`stream_options.include_usage`, openai.ts SseWriter), and `[DONE]`. A client that leaves aborts the request in the engine; an error after the first
 * byte becomes an error chunk. It parses nothing and decides nothing about the request.
 */
import type { WorkerId } from "../core/ids.ts";
import type { GenerateRequest, MockEngine } from "./engine.ts";
import { AbortedError } from "./fifo.ts";
import { answerHeaders } from "./headers.ts";
import { error } from "./http.ts";
import { type ApiKind, type ResponseMeta, SseWriter } from "./openai.ts";
import type { StreamUsage } from "./requests.ts";
import { logprobsJson, type LogprobsAsk } from "./fake-logprobs.ts";
import { fakeTextOffset } from "./fake-text.ts";

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
  usage: StreamUsage = { include: false, continuous: false },
  logprobs?: LogprobsAsk,
): Promise<Response> {
  const { engine: eng, workerId, log } = deps;
  const w = new SseWriter(
    kind,
    m,
    usage.continuous ? { promptTokens: genReq.tokens.length } : undefined,
    logprobs === undefined ? undefined : tokenLogprobs(kind, eng.config.seed, genReq, logprobs),
  );
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
        // Headers go out at admission (Starlette sends them before the body); the role chunk
        // goes with the first token, as vLLM's chat stream sends it when the engine's first
        // output arrives (vllm/entrypoints/openai/serving_chat.py, chat_completion_stream_generator,
        // `if first_iteration:` inside `async for res in result_generator`, at 003fe59): a client (or the router's TTFT predictor) reading the first data
        // event of a chat stream must see the end of the prefill, not the admission.
        start: (s) => {
          responded = true;
          resolve(new Response(body, { headers: answerHeaders(s, true, workerId) }));
        },
        token: (t, i) => {
          if (i === 0 && w.isChat) send(w.role());
          send(w.token(t, i, i === last));
        },
      })
      .then(
        (r) => {
          if (usage.include) send(w.usage(r));
          send(w.done());
          close();
        },
        (e) => {
          if (!responded) {
            if (e instanceof AbortedError)
              resolve(error(499, "client closed the request", "aborted", zero));
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

/** Each token's logprobs for a stream that asked (fake-logprobs.ts). */
function tokenLogprobs(
  kind: ApiKind,
  seed: number,
  genReq: GenerateRequest,
  ask: LogprobsAsk,
): (text: string, index: number, textOffset: number) => string {
  const offset = fakeTextOffset(seed, genReq.tokens, genReq.seed);
  return (t, i, sent) => logprobsJson(kind, seed, ask, offset, i, [t], sent);
}
