/**
 * Admin endpoints (workers, events, route, debug). With an admin token, they need
 * `Authorization: Bearer <token>` (compared in constant time). Without one, they answer
 * loopback peers only: the peer address comes from the server (Bun's requestIP), never
 * from a header a client could forge.
 */
import type { MiddlewareHandler } from "hono";
import { RouterError } from "../core/errors.ts";
import { forbidden, toErrorResponse } from "./errors.ts";

/** The peer address of a request, or undefined when the runtime cannot tell. */
export type PeerAddress = (req: Request) => string | undefined;

export function isLoopback(addr: string | undefined): boolean {
  if (!addr) return false;
  if (addr === "::1" || addr === "0:0:0:0:0:0:0:1") return true;
  const v4 = addr.startsWith("::ffff:") ? addr.slice(7) : addr;
  return v4.startsWith("127.");
}

/** Compare without an early exit, so response time does not reveal a matching prefix. */
function timingSafeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  if (x.length !== y.length) return false;
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}

const encoder = new TextEncoder();

export function adminAuth(token: string | undefined, peer: PeerAddress): MiddlewareHandler {
  return async (c, next) => {
    if (token !== undefined) {
      const header = c.req.header("authorization") ?? "";
      const m = /^Bearer\s+(.+)$/i.exec(header);
      if (!m) {
        return toErrorResponse(new RouterError("unauthorized", "admin endpoint: send `Authorization: Bearer <admin token>`"));
      }
      if (!timingSafeEqual(m[1]!.trim(), token)) {
        return toErrorResponse(new RouterError("unauthorized", "admin endpoint: the bearer token is not the admin token"));
      }
      return next();
    }
    const addr = peer(c.req.raw);
    if (!isLoopback(addr)) {
      return forbidden(
        `admin endpoint: no --admin-token is configured, so it answers loopback clients only (your address: ${addr ?? "unknown"})`,
      );
    }
    return next();
  };
}
