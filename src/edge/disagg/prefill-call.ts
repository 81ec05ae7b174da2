/**
 * One prefill request of a P/D pair to one worker, read to its end: the parsed answer (vLLM's,
 * for its kv_transfer_params), or why there is none. It marks the prefill on the worker's
 * settlement (its first token, or the prompt done) and says how the call went; it frees,
 * fences and reports nothing (the caller settles: pair-forward.ts).
 */
import { concatBytes } from "../body.ts";
import type { Upstream } from "../deps.ts";
import type { ForwardInput } from "../proxy/forward.ts";
import { attemptUpstream } from "../proxy/attempt.ts";
import { NO_DEADLINES } from "../proxy/deadlines.ts";
import { upstreamRequestHeaders } from "../proxy/headers.ts";
import type { Settlement } from "../proxy/settlement.ts";
import type { UpstreamBody } from "../proxy/upstream.ts";

/**
 * The largest prefill answer kept (vLLM: one token and the hand-off parameters, but prompt
 * logprobs of a long prompt can make it megabytes). Larger: not the engine's fault, so no fence;
 * the decode engine prefills locally. SGLang's prefill answers are read and dropped, never kept.
 */
export const MAX_PREFILL_ANSWER_BYTES = 16 << 20;

class AnswerTooLarge extends Error {}

export type PrefillResult =
  | { kind: "ok"; json: unknown }
  /** Another worker may prefill it. */
  | { kind: "failed"; reason: string; routerLagged?: boolean }
  /** Not the engine's fault (no fence): the answer is larger than MAX_PREFILL_ANSWER_BYTES. */
  | { kind: "too_large" }
  | { kind: "client_gone" }
  /** A 4xx to pass on as it is. */
  | { kind: "client_error"; status: number; body: Uint8Array; headers: readonly string[] };

export interface PrefillCall {
  /** The answer is parsed (vLLM's, for its kv_transfer_params), else read and dropped. */
  readonly keep: boolean;
  /**
   * The answer comes whole once the engine has sampled its one token (vLLM's prefill request:
   * one token, not streamed), so its arrival is this worker's first token, the TTFT predictor's
   * sample of its prefill speed. SGLang's prefill request is the client's, maybe streamed, whose
   * headers can come before any token: no sample.
   */
  readonly firstTokenIsAnswer: boolean;
}

export async function prefillOnce(
  up: Upstream,
  input: ForwardInput,
  s: Settlement,
  url: string,
  body: Uint8Array,
  o: PrefillCall,
): Promise<PrefillResult> {
  const keep = o.keep;
  const headers = upstreamRequestHeaders(
    input.request,
    s.decision.worker.dpRank,
    input.upstreamAuthorization,
    up.forwarding,
  );
  s.sent(headers, url, input.path);
  const a = await attemptUpstream({
    call: up.call,
    baseUrl: url,
    path: input.path,
    headers,
    body,
    clientSignal: input.request.signal,
    deadlines: up.deadlines ?? NO_DEADLINES,
    stream: false,
    last: false,
  });
  if (a.kind === "client_gone") return a;
  if (a.kind === "failed") return a;
  if (a.kind === "worker_down") return { kind: "failed", reason: a.reason }; // not watched here: cannot happen
  if (o.firstTokenIsAnswer && a.res.status < 300) s.firstToken();
  else s.prefillDone();
  let bytes: Uint8Array;
  try {
    bytes = await readAll(
      a.first?.value,
      a.first?.done === true,
      a.reader,
      keep ? MAX_PREFILL_ANSWER_BYTES : Infinity,
      keep,
    );
  } catch (e) {
    if (e instanceof AnswerTooLarge) return { kind: "too_large" };
    return { kind: "failed", reason: `prefill answer unreadable: ${(e as Error).message}` };
  }
  if (a.res.status >= 500) return { kind: "failed", reason: `HTTP ${a.res.status}` };
  if (a.res.status >= 400)
    return { kind: "client_error", status: a.res.status, body: bytes, headers: a.res.headers };
  if (!keep) return { kind: "ok", json: undefined };
  try {
    return { kind: "ok", json: JSON.parse(new TextDecoder().decode(bytes)) };
  } catch {
    return { kind: "failed", reason: "prefill answer is not JSON" };
  }
}

/** The whole body (first chunk already read), at most `max` bytes; `keep` false: read to the end and drop it. */
async function readAll(
  first: Uint8Array | undefined,
  done: boolean,
  reader: UpstreamBody | undefined,
  max: number,
  keep = true,
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  const add = (c: Uint8Array) => {
    size += c.length;
    if (size > max) throw new AnswerTooLarge(`longer than ${max} bytes`);
    if (keep) parts.push(c);
  };
  try {
    if (first !== undefined) add(first);
    while (!done && reader !== undefined) {
      const r = await reader.read();
      if (r.done) break;
      if (r.value !== undefined) add(r.value);
    }
  } catch (e) {
    // Too large or broken: close the engine connection instead of leaving the rest unread.
    void reader?.cancel().catch(() => {});
    throw e;
  }
  if (!keep) return new Uint8Array(0);
  return concatBytes(parts, size);
}
