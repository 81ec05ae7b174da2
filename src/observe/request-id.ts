/**
 * The request id every access line, error line and span carries, echoed to the client as
 * `x-request-id` and sent to the engine (vLLM takes it with --enable-request-id-headers).
 * A client's id is kept when it is short and made of safe characters, so a caller can find
 * its own request in our logs and the engine's; anything else is replaced by a fresh one and
 * never echoed, because a raw header value can carry log-injection bytes (newlines, quotes)
 * or be large enough to bloat every line it lands in.
 */

export const REQUEST_ID_HEADER = "x-request-id";

/** Longest client id kept: a UUID is 36, a prefixed ULID ~40; 128 leaves room for a caller's own scheme. */
export const MAX_REQUEST_ID_LENGTH = 128;

/** Letters, digits and the separators ids use in practice; no spaces, quotes or control bytes. */
const SAFE_ID = /^[A-Za-z0-9._:@/+=-]+$/;

/** The client's id when it may be kept as it is; undefined means "make a new one". */
export function acceptedRequestId(header: string | null | undefined): string | undefined {
  if (header === null || header === undefined) return undefined;
  if (header.length === 0 || header.length > MAX_REQUEST_ID_LENGTH) return undefined;
  return SAFE_ID.test(header) ? header : undefined;
}

/** A fresh id: a random UUID (web-standard crypto on every runtime we target; ~0.1 µs on Bun). */
export function newRequestId(): string {
  return crypto.randomUUID();
}
