/**
 * The one place that turns errors into HTTP: RouterError codes -> status, and the OpenAI
 * error body {"error":{"message","type","code","param"}} (its shape: src/protocol/openai-error.ts). Anything that is not a
 * RouterError is an internal error (500) whose message stays in the router's log: it may
 * hold an engine's URL or answer, which clients must not see.
 */
import { isRouterError, type RouterErrorCode } from "../core/errors.ts";
import { errorResponse } from "../protocol/openai-error.ts";
import { BodyBudgetFull } from "./body-budget.ts";

export const STATUS_BY_CODE: Readonly<Record<RouterErrorCode, number>> = {
  invalid_request: 400,
  payload_too_large: 413,
  unauthorized: 401,
  not_found: 404,
  model_not_found: 404,
  no_endpoints: 503,
  all_workers_busy: 503,
  queue_full: 429,
  queue_timeout: 429,
  worker_not_found: 404,
  duplicate_request: 409,
  lora_no_capacity: 503,
  upstream_failed: 502,
  parent_block_not_found: 400,
  block_not_found: 400,
  invalid_block_sequence: 400,
  unavailable: 503,
  internal: 500,
};

export { errorResponse } from "../protocol/openai-error.ts";

/** Status and code of any thrown value. */
export function classify(e: unknown): {
  status: number;
  code: string;
  message: string;
  param?: string;
} {
  if (isRouterError(e))
    return { status: STATUS_BY_CODE[e.code], code: e.code, message: e.message, param: e.field };
  return {
    status: 500,
    code: "internal",
    message: "internal error (the router's log has the details)",
  };
}

/** A thrown value for the log: never an empty line (a DOMException's stack can be ""). */
export function describeError(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  return e.stack || `${e.name}: ${e.message}`;
}

export function toErrorResponse(e: unknown): Response {
  const c = classify(e);
  const res = errorResponse(c.status, c.code, c.message, c.param);
  // 429 from the admission queue: tell the client when to come back (RFC 9110 §10.2.3).
  if (isRouterError(e) && e.retryAfterSeconds !== undefined)
    res.headers.set("retry-after", String(Math.max(1, Math.ceil(e.retryAfterSeconds))));
  // A 413, or a 503 for a full body budget, is answered before the body is all read: closing
  // the connection drops the rest unread, where keeping it open would make the server read and
  // discard it on the event loop (RFC 9110 §15.5.14 allows either for a 413).
  if (c.status === 413 || e instanceof BodyBudgetFull) res.headers.set("connection", "close");
  return res;
}

/** 403: the peer may not use admin endpoints at all (no token configured, not loopback). */
export function forbidden(message: string): Response {
  return errorResponse(403, "forbidden", message);
}
