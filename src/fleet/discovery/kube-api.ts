/**
 * The two calls discovery makes to the Kubernetes API, on an injected fetch (which carries
 * the TLS settings: the runtime's glue builds it from the KubeConnection): list pods (the
 * items and the list's resourceVersion) and watch pods from a resourceVersion (the
 * newline-delimited `{"type","object"}` events as they arrive). Answers that are not 2xx
 * become a KubeApiError with the HTTP status and the Status object's reason and message. A
 * watch line that is not an event is an error, not skipped: a stream that says something we
 * cannot read is resumed from the last version we did read. It decides nothing and keeps no
 * state; the loop around it is pod-watch.ts.
 */

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

export interface WatchEvent {
  readonly type: WatchEventType;
  /** The object (a Pod, a bookmark's bare metadata, or an ERROR's Status). */
  readonly object: Record<string, unknown>;
}

export interface PodList {
  readonly items: readonly Record<string, unknown>[];
  readonly resourceVersion: string;
}

export interface KubeApiDeps {
  /** The API server's base URL. */
  readonly server: string;
  readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
  readonly token: () => Promise<string | undefined>;
  /** Largest pod-list answer read (default MAX_LIST_BYTES). */
  readonly maxListBytes?: number;
}

/** An answer that is not 2xx, with what the API server said. */
export class KubeApiError extends Error {
  override readonly name = "KubeApiError";
  constructor(
    readonly status: number,
    readonly reason: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** The stream said something that is not a watch event. */
export class WatchProtocolError extends Error {
  override readonly name = "WatchProtocolError";
}

const EVENT_TYPES: ReadonlySet<string> = new Set([
  "ADDED",
  "MODIFIED",
  "DELETED",
  "BOOKMARK",
  "ERROR",
]);
/** One event is one object; a line longer than this is a broken stream, not a pod. */
const MAX_LINE_CHARS = 16 * 1024 * 1024;
/**
 * A pod list's answer is read whole before it is parsed; past this it is refused rather than
 * held (tens of thousands of pods' objects fit in a fraction of it).
 */
export const MAX_LIST_BYTES = 256 * 1024 * 1024;

export function podsPath(namespace: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`;
}

export class KubeApi {
  constructor(private readonly d: KubeApiDeps) {}

  /**
   * A consistent list (no resourceVersion: the most recent state, read from etcd): after a
   * 410 the router must not go back in time to a stale cache's view.
   */
  async listPods(namespace: string, labelSelector: string, signal?: AbortSignal): Promise<PodList> {
    const res = await this.#get(podsPath(namespace), { labelSelector }, signal);
    let body: unknown;
    try {
      body = JSON.parse(await readBounded(res.body, this.d.maxListBytes ?? MAX_LIST_BYTES));
    } catch (e) {
      if (e instanceof WatchProtocolError) throw e;
      throw new WatchProtocolError(`list: the answer is not JSON (${(e as Error).message})`);
    }
    const b = body as { items?: unknown; metadata?: { resourceVersion?: unknown } };
    const rv = b?.metadata?.resourceVersion;
    if (!Array.isArray(b?.items) || typeof rv !== "string" || rv === "") {
      throw new WatchProtocolError("list: the answer has no items or no metadata.resourceVersion");
    }
    return { items: b.items as Record<string, unknown>[], resourceVersion: rv };
  }

  /**
   * Watch from `resourceVersion` (events after it), with bookmarks; `timeoutSeconds` asks the
   * server to end the watch cleanly (the events then end). Resolves once the server answered
   * (so a caller knows the API is up before the first event); abort through `signal`.
   */
  async watchPods(
    namespace: string,
    o: { labelSelector: string; resourceVersion: string; timeoutSeconds: number },
    signal?: AbortSignal,
  ): Promise<AsyncIterable<WatchEvent>> {
    const res = await this.#get(
      podsPath(namespace),
      {
        watch: "1",
        resourceVersion: o.resourceVersion,
        allowWatchBookmarks: "true",
        labelSelector: o.labelSelector,
        timeoutSeconds: String(o.timeoutSeconds),
      },
      signal,
    );
    return readEvents(res.body);
  }

  async #get(path: string, query: Record<string, string>, signal?: AbortSignal): Promise<Response> {
    const qs = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== "")).toString();
    const token = await this.d.token();
    const headers: Record<string, string> = { accept: "application/json" };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    const res = await this.d.fetch(`${this.d.server}${path}${qs ? `?${qs}` : ""}`, {
      headers,
      signal,
    });
    if (res.ok) return res;
    const text = await res.text().catch(() => "");
    let reason: string | undefined;
    let message = text.slice(0, 300);
    try {
      const st = JSON.parse(text) as { reason?: unknown; message?: unknown };
      if (typeof st.reason === "string") reason = st.reason;
      if (typeof st.message === "string") message = st.message;
    } catch {
      // not a Status object: the text itself is the message
    }
    throw new KubeApiError(
      res.status,
      reason,
      `HTTP ${res.status}${reason ? ` ${reason}` : ""}: ${message || res.statusText}`,
    );
  }
}

/** A body's text, refused (WatchProtocolError) once it passes `limit` bytes. */
async function readBounded(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<string> {
  if (body === null) return "";
  const reader = body.getReader();
  const dec = new TextDecoder();
  let text = "";
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (bytes > limit)
        throw new WatchProtocolError(`list: the answer is larger than ${limit} bytes`);
      text += dec.decode(value, { stream: true });
    }
    return text + dec.decode();
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** Newline-delimited JSON events from a response body, as they arrive. */
async function* readEvents(body: ReadableStream<Uint8Array> | null): AsyncGenerator<WatchEvent> {
  if (body === null) return;
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line !== "") yield parseEvent(line);
      }
      if (buf.length > MAX_LINE_CHARS)
        throw new WatchProtocolError(`watch: a line longer than ${MAX_LINE_CHARS} characters`);
    }
    const last = (buf + dec.decode()).trim();
    if (last !== "") yield parseEvent(last);
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function parseEvent(line: string): WatchEvent {
  let x: unknown;
  try {
    x = JSON.parse(line);
  } catch {
    throw new WatchProtocolError(`watch: a line that is not JSON: ${line.slice(0, 120)}`);
  }
  const e = x as { type?: unknown; object?: unknown };
  if (
    typeof e?.type !== "string" ||
    !EVENT_TYPES.has(e.type) ||
    typeof e.object !== "object" ||
    e.object === null
  ) {
    throw new WatchProtocolError(`watch: not an event: ${line.slice(0, 120)}`);
  }
  return { type: e.type as WatchEventType, object: e.object as Record<string, unknown> };
}
