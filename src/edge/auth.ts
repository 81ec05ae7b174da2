/**
 * Admin endpoints (workers, events, route, debug): the guard (guards.ts) over the shared rule
 * of src/protocol/admin-access.ts (bearer admin token, else loopback peers only). The peer
 * address comes from the server (Bun's requestIP), never from a header a client could forge.
 */
import { ADMIN_CHALLENGE, adminRefusal } from "../protocol/admin-access.ts";
import { errorResponse } from "./errors.ts";

export { isLoopback } from "../protocol/admin-access.ts";

/** The peer address of a request, or undefined when the runtime cannot tell. */
export type PeerAddress = (req: Request) => string | undefined;

/** The admin check: the handler's answer, or the 401/403 in OpenAI's shape. */
export function adminGuard(token: string | undefined, peer: PeerAddress): (req: Request, path: string, next: () => Promise<Response>) => Promise<Response> {
  return async (req, _path, next) => {
    const refused = adminRefusal(token, req.headers.get("authorization") ?? "", token === undefined ? peer(req) : undefined);
    if (!refused) return next();
    const res = errorResponse(refused.status, refused.code, refused.message);
    if (refused.status === 401) res.headers.set("www-authenticate", ADMIN_CHALLENGE);
    return res;
  };
}
