/**
 * Which headers travel between client and engine. Hop-by-hop headers (RFC 9110 §7.6.1)
 * describe one connection and never cross a proxy; content-length is recomputed by the
 * runtime. Upstream is asked for an identity encoding, because the runtime's fetch would
 * decompress a gzip body while the header still said gzip.
 */

const HOP_BY_HOP = new Set([
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
]);

/** Headers the router adds to every proxied response. */
export const HEADER_WORKER = "x-switchyard-worker";
export const HEADER_DP_RANK = "x-switchyard-dp-rank";
export const HEADER_OVERLAP = "x-switchyard-overlap-blocks";
/** Session headers, in order of preference. */
export const SESSION_HEADERS = ["x-session-id", "x-dynamo-session-id"] as const;

/** Request headers to send upstream: the client's minus hop-by-hop, plus the dp rank. */
export function upstreamRequestHeaders(incoming: Headers, dpRank: number): Headers {
  const out = new Headers();
  incoming.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name) && name !== "accept-encoding") out.set(name, value);
  });
  out.set("accept-encoding", "identity");
  out.set(HEADER_DP_RANK, String(dpRank));
  return out;
}

/** Response headers to send the client: upstream's minus hop-by-hop, plus routing headers. */
export function clientResponseHeaders(upstream: Headers, routing: Readonly<Record<string, string>>): Headers {
  const out = new Headers();
  upstream.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) out.set(name, value);
  });
  for (const [k, v] of Object.entries(routing)) out.set(k, v);
  return out;
}
