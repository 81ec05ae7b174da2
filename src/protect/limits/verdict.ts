/**
 * What a limit check asks and answers, the same for the local counters and the ones shared
 * through Redis: per dimension (requests, prompt tokens, output tokens per minute; concurrent
 * requests) the limit, what remains and when it is whole again, and whether the request may
 * go. Types and the one conversion both stores share.
 */
import type { TenantLimits } from "../tenant.ts";

export const DIMENSIONS = ["requests", "prompt_tokens", "output_tokens", "concurrent"] as const;
export type Dimension = (typeof DIMENSIONS)[number];

/** What one request takes. */
export interface Ask {
  readonly promptTokens: number;
  /** Output tokens booked (max_tokens or the tenant's default); corrected when the answer ends. */
  readonly outputTokens: number;
}

export interface DimensionState {
  readonly limit: number;
  /** Left now (after this request, when it was admitted); may be negative after an answer longer than booked. */
  readonly remaining: number;
  /** Milliseconds until the dimension is whole again (0 when it is). */
  readonly resetMs: number;
}

export interface Verdict {
  readonly allowed: boolean;
  /** The first dimension that refused, when one did. */
  readonly refused?: Dimension;
  /** The request can never pass: it alone asks more than the whole per-minute limit. */
  readonly tooLarge?: boolean;
  /** Milliseconds until the refused request could pass (0 when allowed). */
  readonly retryAfterMs: number;
  /** The limited dimensions only. */
  readonly states: Partial<Record<Dimension, DimensionState>>;
}

/** The limits as one number per dimension, 0 = not limited (the form the Lua script takes). */
export function limitVector(l: TenantLimits): Record<Dimension, number> {
  return {
    requests: l.requestsPerMinute ?? 0,
    prompt_tokens: l.promptTokensPerMinute ?? 0,
    output_tokens: l.outputTokensPerMinute ?? 0,
    concurrent: l.concurrentRequests ?? 0,
  };
}

/** Whether any dimension is limited. */
export function hasLimits(l: TenantLimits): boolean {
  const v = limitVector(l);
  return DIMENSIONS.some((d) => v[d] > 0);
}

/** The limits divided among `routers` routers (each keeps its share; at least 1 each): the local fallback. */
export function shareOf(l: TenantLimits, routers: number): TenantLimits {
  const n = Math.max(1, Math.floor(routers));
  if (n === 1) return l;
  const part = (x: number | undefined) =>
    x === undefined ? undefined : Math.max(1, Math.floor(x / n));
  return {
    requestsPerMinute: part(l.requestsPerMinute),
    promptTokensPerMinute: part(l.promptTokensPerMinute),
    outputTokensPerMinute: part(l.outputTokensPerMinute),
    concurrentRequests: part(l.concurrentRequests),
  };
}
