/**
 * Telling the chosen engine where to pull a prefix from, on llm-d's P2P source contract
 * (llm-d/llm-d-router `pkg/sidecar/proxy/connector_p2p.go` @0545789098a6): the scheduler names the
 * peer in the `x-kv-cache-source-host-port` header, and the sidecar gives the engine
 * `kv_transfer_params.remote_kv_source = {kv_request_id, remote_host, remote_port}`. Switchyard is
 * both, so it sends both: the header for an llm-d sidecar in front of the engine, the body's field
 * for an engine reached directly (the simulated engine, src/mocker/peer-routes.ts). A pull that
 * fails is the engine's to fall back from (it computes the prefix); nothing here waits for it.
 *
 * The client's own header is always dropped: only the router's decision names a pull source. A
 * body that carries `kv_transfer_params` already (a P/D half, or a client's own where
 * --trust-kv-transfer-params lets it through the edge: src/protect/kv-steering.ts) is left as it is.
 */
export const HEADER_KV_SOURCE = "x-kv-cache-source-host-port";

const encoder = new TextEncoder();
const KV_TRANSFER_PARAMS = encoder.encode('"kv_transfer_params"');

export interface KvSource {
  /** The peer engine's URL, as registered. */
  readonly url: string;
  /** Unique per try: names the peer's export (the simulated engine's `sy-p2p-<id>` segment). */
  readonly kvRequestId: string;
}

/** The host and port of a registered engine URL, as llm-d's header and field carry them. */
export function hostPortOf(url: string): { host: string; port: number } | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const port = u.port !== "" ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
  // URL keeps an IPv6 literal's brackets; remote_host is the bare address.
  const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
  return host === "" ? undefined : { host, port };
}

/** llm-d's kv_request_id: letters, digits and '-' only (the simulated engine's rule), at most 64. */
export function kvRequestIdOf(requestId: string, attempt: number): string {
  return `${requestId}-${attempt}`.replace(/[^A-Za-z0-9-]/g, "-").slice(0, 64);
}

/**
 * `headers` (the engine-bound copy, changed in place) and the body to send: with `source`, the
 * header set and the body's JSON object given `kv_transfer_params.remote_kv_source`; without,
 * the header dropped and the body as it was. Returns whether the source was named.
 */
export function withKvSource(
  body: Uint8Array,
  headers: Record<string, string>,
  source: KvSource | undefined,
): { body: Uint8Array; named: boolean } {
  for (const name of Object.keys(headers))
    if (name.toLowerCase() === HEADER_KV_SOURCE) delete headers[name];
  if (source === undefined) return { body, named: false };
  const hp = hostPortOf(source.url);
  const open = firstBrace(body);
  if (hp === undefined || open < 0 || contains(body, KV_TRANSFER_PARAMS))
    return { body, named: false };
  const field = JSON.stringify({
    remote_kv_source: {
      kv_request_id: source.kvRequestId,
      remote_host: hp.host,
      remote_port: hp.port,
    },
  });
  // Spliced in after the object's opening brace: the client's bytes stay as they were.
  const rest = body.subarray(open + 1);
  const head = encoder.encode(`{"kv_transfer_params":${field}${emptyObject(rest) ? "" : ","}`);
  const out = new Uint8Array(head.length + rest.length);
  out.set(head);
  out.set(rest, head.length);
  headers[HEADER_KV_SOURCE] = hp.host.includes(":")
    ? `[${hp.host}]:${hp.port}`
    : `${hp.host}:${hp.port}`;
  return { body: out, named: true };
}

function firstBrace(b: Uint8Array): number {
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (c === 0x7b) return i;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return -1;
  }
  return -1;
}

/** The bytes after an object's `{` close it at once (whitespace, then `}`). */
function emptyObject(rest: Uint8Array): boolean {
  for (const c of rest) if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return c === 0x7d;
  return false;
}

function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}
