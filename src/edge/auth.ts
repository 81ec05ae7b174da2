/**
 * Admin endpoints (workers, events, route, debug): the Hono middleware over the shared rule
 * of src/protocol/admin-access.ts (bearer admin token, else loopback peers only). The peer
 * address comes from the server (Bun's requestIP), never from a header a client could forge.
 */
import type { MiddlewareHandler } from "hono";
import { ADMIN_CHALLENGE, adminRefusal } from "../protocol/admin-access.ts";
import { errorResponse } from "./errors.ts";

export { isLoopback } from "../protocol/admin-access.ts";

/** The peer address of a request, or undefined when the runtime cannot tell. */
export type PeerAddress = (req: Request) => string | undefined;

export function adminAuth(token: string | undefined, peer: PeerAddress): MiddlewareHandler {
  return async (c, next) => {
    const refused = adminRefusal(token, c.req.header("authorization") ?? "", token === undefined ? peer(c.req.raw) : undefined);
    if (!refused) return next();
    const res = errorResponse(refused.status, refused.code, refused.message);
    if (refused.status === 401) res.headers.set("www-authenticate", ADMIN_CHALLENGE);
    return res;
  };
}
