/**
 * Who may call an admin endpoint, the same rule on every service (router, transfer agent):
 * with an admin token, `Authorization: Bearer <token>` (compared in constant time), or HTTP
 * Basic with the token as the password (any user name) — what a browser sends for the
 * status page after asking its user once; without a token, loopback peers only. The peer address comes from the server (e.g. Bun's requestIP),
 * never from a header a client could forge. A decision only: each edge turns a refusal into
 * its own response.
 */

export function isLoopback(addr: string | undefined): boolean {
  if (!addr) return false;
  if (addr === "::1" || addr === "0:0:0:0:0:0:0:1") return true;
  const v4 = addr.startsWith("::ffff:") ? addr.slice(7) : addr;
  return v4.startsWith("127.");
}

const encoder = new TextEncoder();

/** Compare without an early exit, so response time does not reveal a matching prefix. */
function timingSafeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  if (x.length !== y.length) return false;
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}

/** Why a caller is refused: 401 (no or wrong token) or 403 (no token configured, not loopback). */
export interface AdminRefusal {
  readonly status: 401 | 403;
  readonly code: "unauthorized" | "forbidden";
  readonly message: string;
}

/** The challenge a 401 carries (RFC 9110 §11.6.1): a browser asks its user and retries with Basic. */
export const ADMIN_CHALLENGE = 'Basic realm="switchyard", charset="UTF-8"';

/** The password of a Basic credential (`user:password`, base64), or undefined when it is not one. */
function basicPassword(b64: string): string | undefined {
  try {
    const bin = atob(b64.trim());
    const text = new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
    const colon = text.indexOf(":");
    return colon < 0 ? undefined : text.slice(colon + 1);
  } catch {
    return undefined;
  }
}

/** null when the caller may pass. `authorization` is the header's value ("" when absent). */
export function adminRefusal(
  token: string | undefined,
  authorization: string,
  peer: string | undefined,
): AdminRefusal | null {
  if (token !== undefined) {
    const bearer = /^Bearer\s+(.+)$/i.exec(authorization);
    const basic = bearer ? undefined : /^Basic\s+(.+)$/i.exec(authorization);
    const given = bearer ? bearer[1]!.trim() : basic ? basicPassword(basic[1]!) : undefined;
    if (given === undefined)
      return {
        status: 401,
        code: "unauthorized",
        message: "admin endpoint: send `Authorization: Bearer <admin token>`",
      };
    if (!timingSafeEqual(given, token)) {
      return {
        status: 401,
        code: "unauthorized",
        message: `admin endpoint: the ${bearer ? "bearer token" : "password"} is not the admin token`,
      };
    }
    return null;
  }
  if (isLoopback(peer)) return null;
  return {
    status: 403,
    code: "forbidden",
    message: `admin endpoint: no --admin-token is configured, so it answers loopback clients only (your address: ${peer ?? "unknown"})`,
  };
}
