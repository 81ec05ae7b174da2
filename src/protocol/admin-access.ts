/**
 * Who may call an admin endpoint, the same rule on every service (router, transfer agent):
 * with an admin token, `Authorization: Bearer <token>` (compared in constant time); without
 * one, loopback peers only. The peer address comes from the server (e.g. Bun's requestIP),
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

/** null when the caller may pass. `authorization` is the header's value ("" when absent). */
export function adminRefusal(token: string | undefined, authorization: string, peer: string | undefined): AdminRefusal | null {
  if (token !== undefined) {
    const m = /^Bearer\s+(.+)$/i.exec(authorization);
    if (!m) return { status: 401, code: "unauthorized", message: "admin endpoint: send `Authorization: Bearer <admin token>`" };
    if (!timingSafeEqual(m[1]!.trim(), token)) {
      return { status: 401, code: "unauthorized", message: "admin endpoint: the bearer token is not the admin token" };
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
