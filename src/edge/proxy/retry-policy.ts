/**
 * Which engine answers are tried again on another worker before anything reached the client,
 * and what such an answer says about the worker. 502/503/504 mean "this worker cannot serve
 * now": it is fenced until its next good health check, as a refused connection is. A 500 may
 * be this one engine's fault or this request's (a prompt that crashes any engine): the next
 * worker gets a chance, the 500 counts towards outlier ejection, but one 500 fences nothing,
 * so one bad prompt cannot take the fleet out of rotation. A 429 is an engine shedding load:
 * tried elsewhere, counted against nobody. Every such retry takes from the retry budget.
 */
import type { RetryBudget } from "./retry-budget.ts";

export interface RetryPolicy {
  /** Statuses retried on another worker (--retry-on). */
  readonly statuses: ReadonlySet<number>;
  /** Bounds the retries fleet-wide; without one every retryable status is retried. */
  readonly budget?: RetryBudget;
}

/** Without a policy (tests, embedders): the statuses the proxy always retried, no budget. */
export const GATEWAY_RETRIES_ONLY: RetryPolicy = { statuses: new Set([502, 503, 504]) };

/** Statuses that say the worker cannot take requests now: fenced until a health check passes. */
export function fencesWorker(status: number): boolean {
  return status === 502 || status === 503 || status === 504;
}

/** Statuses that count as the worker failing (outlier ejection): server errors, not load shedding. */
export function countsAsFailure(status: number): boolean {
  return status >= 500;
}
