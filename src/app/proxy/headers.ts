/**
 * Which headers travel between client and engine. Hop-by-hop headers (RFC 9110 §7.6.1)
 * describe one connection and never cross a proxy; content-length is recomputed by the
 * runtime. Upstream is asked for an identity encoding, because the runtime's fetch would
 * decompress a gzip body while the header still said gzip.
 *
 * Hot path: upstream headers are a plain object (cheaper for fetch than a Headers built
 * entry by entry), and response headers are a native copy with a few deletions.
 */

const HOP_BY_HOP = [
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
] as const;
const HOP_BY_HOP_SET: ReadonlySet<string> = new Set(HOP_BY_HOP);

/** Headers the router adds to every proxied response. */
export const HEADER_WORKER = "x-switchyard-worker";
export const HEADER_DP_RANK = "x-switchyard-dp-rank";
export const HEADER_OVERLAP = "x-switchyard-overlap-blocks";
/** Session headers, in order of preference. */
export const SESSION_HEADERS = ["x-session-id", "x-dynamo-session-id"] as const;

/** Request headers to send upstream: the client's minus hop-by-hop, plus the dp rank. */
export function upstreamRequestHeaders(incoming: Headers, dpRank: number): Record<string, string> {
  const out: Record<string, string> = {};
  incoming.forEach((value, name) => {
    if (!HOP_BY_HOP_SET.has(name)) out[name] = value;
  });
  out["accept-encoding"] = "identity";
  out[HEADER_DP_RANK] = String(dpRank);
  return out;
}

/** Response headers to send the client: upstream's minus hop-by-hop, plus routing headers. */
export function clientResponseHeaders(upstream: Headers, worker: string, dpRank: number, overlapBlocks: number): Headers {
  const out = new Headers(upstream);
  for (const name of HOP_BY_HOP) if (out.has(name)) out.delete(name);
  out.set(HEADER_WORKER, worker);
  out.set(HEADER_DP_RANK, String(dpRank));
  out.set(HEADER_OVERLAP, String(overlapBlocks));
  return out;
}
