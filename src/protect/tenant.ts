/**
 * A tenant: who a client API key speaks for, with what the keys file gives it — its limits,
 * its priority band, its weight in fair admission, the models it may use. Types and small
 * pure helpers only.
 */

/** Per-tenant limits; an absent field is not limited. Rates are per minute, as OpenAI states them. */
export interface TenantLimits {
  readonly requestsPerMinute?: number;
  /** Prompt tokens (the tokenizer's, or UTF-8 bytes for text the router has no tokenizer for). */
  readonly promptTokensPerMinute?: number;
  /** Output tokens: booked from `max_tokens` (or the default) at admission, corrected from the answer. */
  readonly outputTokensPerMinute?: number;
  readonly concurrentRequests?: number;
}

export interface Tenant {
  /** A bounded label: letters, digits, `.`, `_`, `-` (at most 64); safe in metrics and logs. */
  readonly name: string;
  readonly limits: TenantLimits;
  /** Its priority band (lower is served first): a request's own `priority` may not go below it. */
  readonly priority?: number;
  /** Its share in fair admission within a band, relative to the others (default 1). */
  readonly weight: number;
  /** Model names it may use (`*` = any run of characters); undefined: every model. */
  readonly models?: readonly string[];
  /** Output tokens booked for a request that names no `max_tokens`. */
  readonly defaultOutputTokens: number;
}

/** Output tokens booked when neither the request nor the keys file says (vLLM answers up to the context length; a minute's typical answer is shorter). */
export const DEFAULT_OUTPUT_TOKENS = 256;

/** The priority a request waits at: its own, but never ahead of its tenant's band. */
export function effectivePriority(
  tenant: Tenant,
  requested: number | undefined,
): number | undefined {
  if (tenant.priority === undefined) return requested;
  return requested === undefined ? tenant.priority : Math.max(tenant.priority, requested);
}

/** Whether `tenant` may use `model` (a name, or undefined for the engine's default). */
export function mayUseModel(tenant: Tenant, model: string): boolean {
  const allowed = tenant.models;
  if (allowed === undefined) return true;
  return allowed.some((p) => globMatch(p, model));
}

/** `*` matches any run of characters; everything else literally. */
function globMatch(pattern: string, name: string): boolean {
  const parts = pattern.split("*");
  if (parts.length === 1) return pattern === name;
  if (!name.startsWith(parts[0]!) || !name.endsWith(parts.at(-1)!)) return false;
  let at = parts[0]!.length;
  const end = name.length - parts.at(-1)!.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const k = name.indexOf(parts[i]!, at);
    if (k < 0 || k + parts[i]!.length > end) return false;
    at = k + parts[i]!.length;
  }
  return at <= end;
}
