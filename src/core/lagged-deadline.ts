/**
 * A deadline judged by the time the router could watch, not by the wall clock. When the router's
 * own event loop is held (a starved CPU, a long task), timers fire late and an answer that came
 * in microseconds waits unread: counted as the peer's, such a "miss" fences a healthy engine, its
 * requests go to the others on the same starved router, and they go the same way. So a deadline
 * that fires takes off the time the loop was held during the wait (the event-loop lag meter,
 * src/observe/process-metrics.ts) and waits for the rest; stretched to LAG_STRETCH_LIMIT times its
 * length, it ends excused. Used by the upstream connect (runtime/bun/upstream/socket-client.ts)
 * and the health checks (fleet/health.ts).
 * PURE: the clock and the lag are the caller's.
 */

/**
 * A wait's deadline is stretched for the router's own lag up to this many times its length;
 * past that it ends, excused, so every wait keeps a bound.
 */
export const LAG_STRETCH_LIMIT = 3;

export type DeadlineVerdict =
  /** The engine had the whole deadline of time the router could watch: a miss, the engine's. */
  | { readonly kind: "missed" }
  /** The router's event loop was held for part of the wait: wait `ms` more, then judge again. */
  | { readonly kind: "wait"; readonly ms: number }
  /** Stretched to the limit and still short of a whole deadline of watched time: ended, not the engine's fault. */
  | { readonly kind: "excused"; readonly lagMs: number };

/** A deadline of `limitMs` fired after `elapsedMs` of waiting, `lagMs` of which the router's event loop was held. */
export function judgeDeadline(limitMs: number, elapsedMs: number, lagMs: number): DeadlineVerdict {
  const watched = elapsedMs - Math.max(0, lagMs);
  if (watched >= limitMs) return { kind: "missed" };
  const more = Math.max(1, Math.ceil(limitMs - watched));
  if (elapsedMs + more <= limitMs * LAG_STRETCH_LIMIT) return { kind: "wait", ms: more };
  return { kind: "excused", lagMs };
}
