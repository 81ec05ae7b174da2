/**
 * Request bodies: read with a size limit (413 before reading when content-length says so,
 * or as soon as the bytes pass the limit), then JSON with a message naming what is wrong.
 * A body that cannot be read (malformed chunked encoding, the client gone mid-body) is a
 * BodyReadError: a 400 the app logs as what it is (it was an empty "unhandled
 * error"; Bun rejects such a body with a DOMException whose stack is empty).
 */
import { RouterError } from "../core/errors.ts";
import { parseJsonBigintSafe } from "../core/json.ts";

/** The request body could not be read at all; the client usually gets Bun's own 400. */
export class BodyReadError extends RouterError {
  constructor(cause: unknown) {
    const why = cause instanceof Error ? cause.message || cause.name : String(cause);
    super("invalid_request", `request body could not be read (malformed chunked encoding, or the client closed the connection mid-body): ${why}`);
  }
}

/**
 * `limitName`: what the 413 names as the limit (a flag, or how the limit is derived);
 * `field`: the request field the limit is about, when it is derived from one (the prompt).
 */
export async function readBodyLimited(
  req: Request,
  maxBytes: number,
  limitName = "--max-body-bytes",
  field?: string,
): Promise<Uint8Array> {
  try {
    return await readBody(req, maxBytes, limitName, field);
  } catch (e) {
    throw e instanceof RouterError ? e : new BodyReadError(e);
  }
}

async function readBody(req: Request, maxBytes: number, limitName: string, field?: string): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) {
    throw new RouterError("payload_too_large", `request body is ${declared} bytes; the limit is ${maxBytes} (${limitName})`, field);
  }
  if (declared !== null) {
    // Read in one go; touching req.body would build a stream object for nothing.
    const bytes = new Uint8Array(await req.arrayBuffer());
    if (bytes.length > maxBytes) throw tooLarge(maxBytes, limitName, field);
    return bytes;
  }
  if (!req.body) return new Uint8Array(0);
  // Chunked: stop reading once past the limit.
  const reader = req.body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes, limitName, field);
    }
    parts.push(value);
  }
  return concatBytes(parts, total);
}

/** `parts` (of `total` bytes together) as one array; a single part is returned as it is. */
export function concatBytes(parts: readonly Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

function tooLarge(maxBytes: number, limitName: string, field?: string): RouterError {
  return new RouterError("payload_too_large", `request body is larger than ${maxBytes} bytes (${limitName})`, field);
}

const decoder = new TextDecoder("utf-8", { fatal: true });

function decode(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new RouterError("invalid_request", "request body is not valid UTF-8");
  }
}

/** A JSON object body (plain JSON.parse). */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  if (bytes.length === 0) throw new RouterError("invalid_request", "request body is empty; expected a JSON object");
  let value: unknown;
  try {
    value = JSON.parse(decode(bytes));
  } catch (e) {
    throw new RouterError("invalid_request", `request body is not valid JSON: ${(e as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RouterError("invalid_request", "request body must be a JSON object");
  }
  return value as Record<string, unknown>;
}

/** Any JSON body whose long integers (u64 ids, hashes) must keep every bit. */
export function parseJsonExact(bytes: Uint8Array): unknown {
  if (bytes.length === 0) throw new RouterError("invalid_request", "request body is empty; expected JSON");
  try {
    return parseJsonBigintSafe(decode(bytes));
  } catch (e) {
    throw new RouterError("invalid_request", `request body is not valid JSON: ${(e as Error).message}`);
  }
}
