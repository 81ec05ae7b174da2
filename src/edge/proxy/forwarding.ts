/**
 * What a proxy owes the next hop about the connection it came in on (RFC 9110 §7.6.1,
 * RFC 7239, the de-facto X-Forwarded-For):
 * - every hop-by-hop header is removed, the fixed set and every name the sender's own
 *   `Connection` header lists (a client naming `x-secret` there means "for you only");
 * - the client's address is told: `X-Forwarded-For` and `Forwarded: for=…;proto=…;host=…`.
 *   By default the client's own X-Forwarded-For, Forwarded, X-Forwarded-Host, -Proto and
 *   X-Real-IP are claims nobody checked, so they are REPLACED by what this router saw. With
 *   --trust-forwarded (a trusted proxy in front sets them) the peer is APPENDED to the chain
 *   and the other claims pass as they came;
 * - `Cookie` is dropped unless --forward-cookies: an engine has no use for a client's
 *   browser session, and a log or trace there would keep it.
 */
import type { PeerAddress } from "../auth.ts";

/** Hop-by-hop in every message (RFC 9110 §7.6.1 and the proxy-* pair of RFC 9110 §11.7), plus what the runtime recomputes. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
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

/** Claims about earlier hops a client can make up; replaced unless --trust-forwarded. */
const FORWARDED_CLAIMS: ReadonlySet<string> = new Set([
  "x-forwarded-for",
  "forwarded",
  "x-forwarded-host",
  "x-forwarded-proto",
  "x-real-ip",
]);

/** How the router tells engines about the client (--trust-forwarded, --forward-cookies) and who the peer is. */
export interface ForwardingPolicy {
  /** The peer address of a request (Bun: server.requestIP); undefined when the runtime cannot tell. */
  readonly peer: PeerAddress;
  /** A trusted proxy sets the forwarding headers: append to them instead of replacing them. */
  readonly trustForwarded: boolean;
  /** Pass the client's Cookie header on to the engine. */
  readonly forwardCookies: boolean;
}

/** The header names a `Connection` value lists (comma-separated tokens, any case). */
export function connectionNamed(value: string | null | undefined): ReadonlySet<string> | undefined {
  if (value === null || value === undefined || value === "") return undefined;
  const out = new Set<string>();
  for (const part of value.split(",")) {
    const name = part.trim().toLowerCase();
    if (name !== "") out.add(name);
  }
  return out.size === 0 ? undefined : out;
}

/** True when `name` (lower-case) must not cross this proxy. */
export function isHopByHop(name: string, named: ReadonlySet<string> | undefined): boolean {
  return HOP_BY_HOP.has(name) || (named !== undefined && named.has(name));
}

/** A Forwarded parameter value: a token as it is, anything else a quoted-string (IPv6 in brackets). */
function forwardedValue(v: string, isAddress: boolean): string {
  if (isAddress && v.includes(":")) return `"[${v}]"`;
  return /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(v)
    ? v
    : `"${v.replace(/[\\"]/g, "\\$&").replace(/[\u0000-\u001f\u007f]/g, "")}"`;
}

/** The peer as X-Forwarded-For writes it: the address without an IPv4-mapped prefix, or "unknown". */
function peerAddress(peer: string | undefined): string {
  if (peer === undefined || peer === "") return "unknown";
  return peer.startsWith("::ffff:") && peer.includes(".") ? peer.slice(7) : peer;
}

/**
 * Sets the forwarding headers on `out` (the request headers going upstream, hop-by-hop already
 * removed) for `request`, and drops what the policy says must not pass.
 */
export function applyForwarding(
  out: Record<string, string>,
  request: Request,
  policy: ForwardingPolicy,
): void {
  if (!policy.forwardCookies) delete out.cookie;
  if (!policy.trustForwarded) for (const name of FORWARDED_CLAIMS) delete out[name];
  const addr = peerAddress(policy.peer(request));
  let proto = "http";
  let host = request.headers.get("host");
  try {
    const u = new URL(request.url);
    proto = u.protocol.replace(/:$/, "");
    host ??= u.host;
  } catch {
    // A relative URL (some test harnesses): http, and the Host header if any.
  }
  const xff = out["x-forwarded-for"];
  out["x-forwarded-for"] = xff !== undefined && xff.trim() !== "" ? `${xff}, ${addr}` : addr;
  let element = `for=${forwardedValue(addr, true)};proto=${proto}`;
  if (host !== null && host !== "") element += `;host=${forwardedValue(host, false)}`;
  const fwd = out.forwarded;
  out.forwarded = fwd !== undefined && fwd.trim() !== "" ? `${fwd}, ${element}` : element;
}
