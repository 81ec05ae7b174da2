/**
 * A per-minute limit as a token bucket: it holds at most `limit` and refills at limit per
 * minute, so a tenant may burst up to a minute's worth and then goes at the rate. OpenAI's
 * `x-ratelimit-reset-*` is "time until the limit is back to its initial state", which for a
 * bucket is the time until it is full again. The same arithmetic runs in the Redis script
 * (src/sync/tenant-limit-scripts.ts) so both stores answer alike. Pure: time is passed in.
 */

const MINUTE_MS = 60_000;

export interface Bucket {
  level: number;
  /** When `level` was last brought up to date (ms). */
  at: number;
}

/** A full bucket (a tenant not seen yet has its whole minute). */
export function fullBucket(limit: number, now: number): Bucket {
  return { level: limit, at: now };
}

/** Bring `b` up to `now`: refill for the time passed, never above `limit`. */
export function refill(b: Bucket, limit: number, now: number): void {
  if (now > b.at) b.level = Math.min(limit, b.level + ((now - b.at) * limit) / MINUTE_MS);
  b.at = Math.max(b.at, now);
}

/** Milliseconds until the bucket holds `amount` (0 when it does). */
export function msUntil(b: Bucket, limit: number, amount: number): number {
  return b.level >= amount ? 0 : Math.ceil(((amount - b.level) * MINUTE_MS) / limit);
}
