/**
 * The transfer agent's own small HTTP edge: the admin-access middleware (the shared rule of
 * src/protocol/admin-access.ts) and the OpenAI error body, so the agent never imports the
 * router's HTTP edge (src/app). Routes live in agent-app.ts.
 */
import type { MiddlewareHandler } from "hono";
import { adminRefusal } from "../protocol/admin-access.ts";
import { errorResponse } from "../protocol/openai-error.ts";

export { errorResponse };

/** The peer address of a request, or undefined when the runtime cannot tell. */
export type PeerAddress = (req: Request) => string | undefined;

/** Bearer admin token when one is set, else loopback peers only; refusals in OpenAI's shape. */
export function agentAdminAuth(token: string | undefined, peer: PeerAddress): MiddlewareHandler {
  return async (c, next) => {
    const refused = adminRefusal(
      token,
      c.req.header("authorization") ?? "",
      token === undefined ? peer(c.req.raw) : undefined,
    );
    if (refused) return errorResponse(refused.status, refused.code, refused.message);
    return next();
  };
}
