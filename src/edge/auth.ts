/**
 * Admin endpoints (workers, route, debug, the status page): the guard (guards.ts) over the
 * shared rule of src/protocol/admin-access.ts (bearer admin token, else loopback peers only).
 * Loopback is trusted only at the zero-config local start (`adminOpenness`): behind a reverse
 * proxy or sidecar on the same host every client is loopback, so an address is no identity
 * once the router is exposed (--api-keys, a non-loopback --host); without a token the admin
 * API is then closed. The peer address comes from the server (Bun's requestIP), never from a
 * header a client could forge.
 */
import {
  ADMIN_CHALLENGE,
  adminRefusal,
  isLoopback,
  type AdminRefusal,
} from "../protocol/admin-access.ts";
import { errorResponse } from "./errors.ts";

export { isLoopback } from "../protocol/admin-access.ts";

/** The peer address of a request, or undefined when the runtime cannot tell. */
export type PeerAddress = (req: Request) => string | undefined;

/**
 * Who the admin API answers without a token: loopback peers (`"loopback"`) only when the
 * router listens on loopback and has no client keys; otherwise nobody (`closed`, with why).
 */
export type AdminOpenness =
  | { readonly kind: "token" }
  | { readonly kind: "loopback" }
  | { readonly kind: "closed"; readonly why: string };

/** A listen address on this machine only (what the zero-config start binds). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  return h === "localhost" || isLoopback(h);
}

export function adminOpenness(o: {
  readonly adminToken: string | undefined;
  readonly apiKeys: string | undefined;
  readonly host: string;
}): AdminOpenness {
  if (o.adminToken !== undefined) return { kind: "token" };
  if (o.apiKeys !== undefined) return { kind: "closed", why: "--api-keys is set" };
  if (!isLoopbackHost(o.host)) return { kind: "closed", why: `the router listens on ${o.host}` };
  return { kind: "loopback" };
}

/** The one line the router says at start when its admin API is closed. */
export function adminClosedLine(why: string): string {
  return `admin API closed: ${why} and no --admin-token is configured, so /v1/workers, /v1/route, /debug and /ui answer 403 to every client (set --admin-token to use them)`;
}

function closedRefusal(why: string): AdminRefusal {
  return {
    status: 403,
    code: "forbidden",
    message: `admin endpoint: closed, because ${why} and no --admin-token is configured; set --admin-token and send it as a bearer token`,
  };
}

export function refusalResponse(refused: AdminRefusal): Response {
  const res = errorResponse(refused.status, refused.code, refused.message);
  if (refused.status === 401) res.headers.set("www-authenticate", ADMIN_CHALLENGE);
  return res;
}

/** null when the request may pass the admin door. */
export function adminDoorRefusal(
  token: string | undefined,
  openness: AdminOpenness,
  peer: PeerAddress,
  req: Request,
): AdminRefusal | null {
  if (token === undefined && openness.kind === "closed") return closedRefusal(openness.why);
  return adminRefusal(
    token,
    req.headers.get("authorization") ?? "",
    token === undefined ? peer(req) : undefined,
  );
}

/** The admin check: the handler's answer, or the 401/403 in OpenAI's shape. */
export function adminGuard(
  token: string | undefined,
  peer: PeerAddress,
  openness: AdminOpenness = token !== undefined ? { kind: "token" } : { kind: "loopback" },
): (req: Request, path: string, next: () => Promise<Response>) => Promise<Response> {
  return async (req, _path, next) => {
    const refused = adminDoorRefusal(token, openness, peer, req);
    return refused ? refusalResponse(refused) : next();
  };
}
