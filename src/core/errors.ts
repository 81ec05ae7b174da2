/**
 * One error type for the whole router, with a closed set of codes. The HTTP edge maps each
 * code to a status in one place (edge/errors.ts); the pure core never thinks about HTTP. The
 * codes are a list, so what counts errors by code can name them all (metrics start each at 0).
 */
export const ROUTER_ERROR_CODES = [
  "invalid_request", // a field is missing or malformed
  "payload_too_large",
  "unauthorized",
  "not_found",
  "model_not_found", // no worker serves the request's `model` (OpenAI's 404 code)
  "no_endpoints", // no worker can take the request
  "all_workers_busy",
  "queue_full", // every worker busy and the admission queue full (429 + Retry-After)
  "queue_timeout", // every worker stayed busy for the whole --queue-timeout (429 + Retry-After)
  "worker_not_found",
  "duplicate_request",
  "lora_no_capacity",
  "upstream_failed",
  "parent_block_not_found", // KV event errors (Dynamo's RouterEvent)
  "block_not_found",
  "invalid_block_sequence",
  "unavailable", // a dependency (Redis, engine) cannot be reached
  "internal",
] as const;

export type RouterErrorCode = (typeof ROUTER_ERROR_CODES)[number];

export class RouterError extends Error {
  override readonly name = "RouterError";
  constructor(
    readonly code: RouterErrorCode,
    message: string,
    /** The request field the error is about, when there is one. */
    readonly field?: string,
    /** Seconds a client should wait before trying again (HTTP Retry-After), when known. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export function isRouterError(e: unknown): e is RouterError {
  return e instanceof RouterError;
}
