/**
 * The one call the proxy makes to an engine: POST a body, get the status, the headers and
 * a chunk reader over the answer. Two implementations: `fetchUpstream` (web standards, any
 * runtime; used by tests with a fake fetch) and, on Bun, src/runtime/bun/upstream/socket-client.ts
 * (HTTP/1.1 over pooled sockets on the main thread, about 20 µs less CPU per request than
 * Bun's fetch, which hands every request and chunk to its own client thread).
 */
import type { ChunkReader } from "./observe-stream.ts";

export interface UpstreamRequestInit {
  /** Request headers; the implementation adds host and content-length. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body, sent as it is. */
  readonly body: Uint8Array;
  /**
   * Aborting it before the answer's head arrived closes the engine connection (the engine
   * sees the close and stops) and rejects with the signal's reason. After the head, the
   * body reader's cancel() does the same.
   */
  readonly signal?: AbortSignal;
}

/**
 * An answer's body as it arrives. `drained` (see ChunkReader) lets the proxy answer a body
 * that is complete by its first read at once, instead of through a stream.
 */
export type UpstreamBody = ChunkReader;

export interface UpstreamResponse {
  readonly status: number;
  readonly statusText: string;
  /** Header fields, flat: [name0, value0, name1, value1, ...], names lower-case. */
  readonly headers: readonly string[];
  /** The answer's bytes as they arrive; null when there is no body. cancel() drops the rest. */
  readonly body: UpstreamBody | null;
}

/**
 * POST `init.body` to `baseUrl + path`. Rejects when no answer head arrives (connection
 * refused or reset, ...): the proxy then tries another worker.
 */
export type UpstreamCall = (
  baseUrl: string,
  path: string,
  init: UpstreamRequestInit,
) => Promise<UpstreamResponse>;

/** An UpstreamCall over a fetch function. */
export function fetchUpstream(
  fetchFn: (url: string, init: RequestInit) => Promise<Response>,
): UpstreamCall {
  return async (baseUrl, path, init) => {
    const res = await fetchFn(baseUrl + path, {
      method: "POST",
      headers: init.headers as Record<string, string>,
      body: init.body,
      // The proxy's signal (client gone, a deadline): fetch aborts the request and the body.
      signal: init.signal,
      // An engine's 3xx goes to the client as it is, as the socket client passes it: following
      // it would POST the prompt to wherever the Location points, outside the fleet.
      redirect: "manual",
    });
    const headers: string[] = [];
    res.headers.forEach((value, name) => headers.push(name, value));
    return {
      status: res.status,
      statusText: res.statusText,
      headers,
      body: res.body?.getReader() ?? null,
    };
  };
}
