/**
 * Request bodies: read with a size limit (413 before reading when content-length says so,
 * or as soon as the bytes pass the limit), then JSON with a message naming what is wrong.
 * A body that cannot be read (malformed chunked encoding, the client gone mid-body) is a
 * BodyReadError: a 400 the app logs as what it is (it was an empty "unhandled
 * error"; Bun rejects such a body with a DOMException whose stack is empty).
 */
import { RouterError } from "../core/errors.ts";
import { parseJsonBigintSafe } from "../core/json.ts";
import type { BodyHold } from "./body-budget.ts";
import { promptTooLong } from "./prompt-route/prompt-size.ts";
import type { PromptScanner } from "./prompt-route/prompt-scan.ts";

/**
 * A Content-Length body this large is streamed (held against the router's budget, its prompt
 * counted as it comes) rather than read in one go; smaller ones are read whole, as before.
 */
export const STREAMED_MIN_BYTES = 1 << 20;

/**
 * What a prompt route adds to the read: `scan` counts the prompt as the bytes stream (a 413
 * naming the field once it passes --max-prompt-chars); `hold` takes the streamed bytes from
 * the router-wide budget (body-budget.ts). Both apply to streamed bodies only.
 */
export interface StreamedRead {
  readonly scan?: PromptScanner;
  readonly hold?: BodyHold;
}

/** The request body could not be read at all; the client usually gets Bun's own 400. */
export class BodyReadError extends RouterError {
  constructor(cause: unknown) {
    const why = cause instanceof Error ? cause.message || cause.name : String(cause);
    super(
      "invalid_request",
      `request body could not be read (malformed chunked encoding, or the client closed the connection mid-body): ${why}`,
    );
  }
}

/**
 * `limitName`: what the 413 names as the limit (a flag, or how the limit is derived);
 * `field`: the request field the limit is about, when it is derived from one (the prompt).
 */
/** What is read of a request (or of an engine's answer: both are bodies with headers). */
export type LimitedBody = Pick<Request, "headers" | "body" | "arrayBuffer">;

export async function readBodyLimited(
  req: LimitedBody,
  maxBytes: number,
  limitName = "--max-body-bytes",
  field?: string,
  streamed: StreamedRead = {},
): Promise<Uint8Array> {
  try {
    return await readBody(req, maxBytes, limitName, field, streamed);
  } catch (e) {
    throw e instanceof RouterError ? e : new BodyReadError(e);
  }
}

async function readBody(
  req: LimitedBody,
  maxBytes: number,
  limitName: string,
  field: string | undefined,
  streamed: StreamedRead,
): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) {
    throw new RouterError(
      "payload_too_large",
      `request body is ${declared} bytes; the limit is ${maxBytes} (${limitName})`,
      field,
    );
  }
  if (declared !== null && Number(declared) < STREAMED_MIN_BYTES) {
    // Read in one go; touching req.body would build a stream object for nothing.
    const bytes = new Uint8Array(await req.arrayBuffer());
    if (bytes.length > maxBytes) throw tooLarge(maxBytes, limitName, field);
    return bytes;
  }
  if (!req.body) return new Uint8Array(0);
  const length =
    declared === null || !Number.isSafeInteger(Number(declared)) ? undefined : Number(declared);
  if (length !== undefined) streamed.hold?.take(length);
  return readStream(req.body, maxBytes, limitName, field, streamed, length);
}

/**
 * A streamed body, its chunks kept as they come and joined once at the end (a single chunk is
 * used as it is). One buffer grown by doubling allocates about twice the body in all (4 MiB for
 * a body refused at 1 MiB); the parts allocate nothing beyond the chunks the runtime hands
 * over, and one copy of a complete body (under bench/protect/refused-bodies.ts the two gave the
 * same RSS within noise). Stops reading (and cancels the stream) at the limit, at the prompt
 * scanner's 413, or when the budget has no room for a chunked body's next bytes, so a refused
 * body never held more than what was read.
 */
async function readStream(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
  limitName: string,
  field: string | undefined,
  streamed: StreamedRead,
  length: number | undefined,
): Promise<Uint8Array> {
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (total + value.length > maxBytes) throw tooLarge(maxBytes, limitName, field);
      if (length === undefined) streamed.hold?.take(value.length);
      parts.push(value);
      total += value.length;
      const over = streamed.scan?.push(value);
      if (over !== undefined) throw promptTooLong(over, streamed.scan!.limit);
    }
  } catch (e) {
    await reader.cancel().catch(() => {});
    throw e;
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
  return new RouterError(
    "payload_too_large",
    `request body is larger than ${maxBytes} bytes (${limitName})`,
    field,
  );
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
  if (bytes.length === 0)
    throw new RouterError("invalid_request", "request body is empty; expected a JSON object");
  let value: unknown;
  try {
    value = JSON.parse(decode(bytes));
  } catch (e) {
    throw new RouterError(
      "invalid_request",
      `request body is not valid JSON: ${(e as Error).message}`,
    );
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RouterError("invalid_request", "request body must be a JSON object");
  }
  return value as Record<string, unknown>;
}

/** Any JSON body whose long integers (u64 ids, hashes) must keep every bit. */
export function parseJsonExact(bytes: Uint8Array): unknown {
  if (bytes.length === 0)
    throw new RouterError("invalid_request", "request body is empty; expected JSON");
  try {
    return parseJsonBigintSafe(decode(bytes));
  } catch (e) {
    throw new RouterError(
      "invalid_request",
      `request body is not valid JSON: ${(e as Error).message}`,
    );
  }
}
