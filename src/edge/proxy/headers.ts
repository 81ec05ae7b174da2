/**
 * Which headers travel between client and engine. Hop-by-hop headers (RFC 9110 §7.6.1: the
 * fixed set and every name a `Connection` header lists; forwarding.ts) describe one connection
 * and never cross a proxy; content-length is recomputed by the runtime. Upstream is asked for an identity encoding, because the runtime's fetch would
 * decompress a gzip body while the header still said gzip.
 *
 * Hot path: both directions are plain objects (cheaper to hand to fetch or Response than a
 * Headers built entry by entry).
 */

import {
  applyForwarding,
  connectionNamed,
  isHopByHop,
  type ForwardingPolicy,
} from "./forwarding.ts";

/** Headers the router adds to every proxied response. */
export const HEADER_WORKER = "x-switchyard-worker";
export const HEADER_DP_RANK = "x-switchyard-dp-rank";
export const HEADER_OVERLAP = "x-switchyard-overlap-blocks";
/**
 * The rank header both engines read: vLLM's OpenAI server takes the target rank from
 * `X-data-parallel-rank` (`OpenAIServing._get_data_parallel_rank`, vllm/entrypoints/openai/
 * serving_engine.py, v0.10–0.11; engine/serving.py later), SGLang from `x-data-parallel-rank`,
 * ahead of the body's `routed_dp_rank` (`extract_routed_dp_rank_from_header`,
 * python/sglang/srt/entrypoints/openai/serving_base.py, v0.5). HTTP header names are
 * case-insensitive. The router always sets it to its own choice (a client's value is replaced).
 */
export const HEADER_ENGINE_DP_RANK = "x-data-parallel-rank";
/** Session headers, in order of preference. */
export const SESSION_HEADERS = ["x-session-id", "x-dynamo-session-id"] as const;

/**
 * Request headers to send upstream: the client's minus hop-by-hop, plus the dp rank and, with
 * a forwarding policy, the client's address (X-Forwarded-For, Forwarded) and its Cookie only
 * when configured (forwarding.ts). `authorization`: undefined keeps the client's, null drops
 * it, a string replaces it (a client's key to this router stays here:
 * ForwardInput.upstreamAuthorization).
 */
export function upstreamRequestHeaders(
  request: Request,
  dpRank: number,
  authorization?: string | null,
  forwarding?: ForwardingPolicy,
): Record<string, string> {
  const incoming = request.headers;
  const named = connectionNamed(incoming.get("connection"));
  const out: Record<string, string> = {};
  incoming.forEach((value, name) => {
    if (!isHopByHop(name, named)) out[name] = value;
  });
  if (forwarding !== undefined) applyForwarding(out, request, forwarding);
  if (authorization !== undefined) {
    delete out.authorization;
    if (authorization !== null) out.authorization = authorization;
  }
  out["accept-encoding"] = "identity";
  out[HEADER_DP_RANK] = String(dpRank);
  out[HEADER_ENGINE_DP_RANK] = String(dpRank);
  return out;
}

const ROUTING_HEADERS: ReadonlySet<string> = new Set([
  HEADER_WORKER,
  HEADER_DP_RANK,
  HEADER_OVERLAP,
]);

/**
 * Response headers to send the client: upstream's (flat [name, value, ...], names lower-case)
 * minus hop-by-hop, plus the routing headers. A plain object, which Response takes more
 * cheaply than a Headers; a list of pairs when a name repeats (set-cookie, ...).
 */
export function clientResponseHeaders(
  upstream: readonly string[],
  worker: string,
  dpRank: number,
  overlapBlocks: number,
): Record<string, string> | [string, string][] {
  // No prototype: any header name (even "__proto__") is just a key.
  const out: Record<string, string> = Object.create(null);
  let pairs: [string, string][] | undefined;
  let named: ReadonlySet<string> | undefined;
  for (let i = 0; i < upstream.length; i += 2)
    if (upstream[i] === "connection") named = connectionNamed(upstream[i + 1]);
  for (let i = 0; i < upstream.length; i += 2) {
    const name = upstream[i]!;
    if (isHopByHop(name, named) || ROUTING_HEADERS.has(name)) continue;
    if (pairs === undefined && name in out) pairs = Object.entries(out);
    if (pairs !== undefined) pairs.push([name, upstream[i + 1]!]);
    else out[name] = upstream[i + 1]!;
  }
  const dp = String(dpRank);
  const overlap = String(overlapBlocks);
  if (pairs !== undefined) {
    pairs.push([HEADER_WORKER, worker], [HEADER_DP_RANK, dp], [HEADER_OVERLAP, overlap]);
    return pairs;
  }
  out[HEADER_WORKER] = worker;
  out[HEADER_DP_RANK] = dp;
  out[HEADER_OVERLAP] = overlap;
  return out;
}
