/**
 * A tenant's limits as OpenAI tells them, on every answer: `x-ratelimit-limit-requests`,
 * `x-ratelimit-remaining-requests`, `x-ratelimit-reset-requests` and the same for `-tokens`
 * (OpenAI has one token limit; ours are two, so `-tokens` shows whichever of prompt and output
 * tokens has the smaller share left, the one a client should slow down for), plus each
 * token limit by name (`-prompt-tokens`, `-output-tokens`) and `-concurrent`. Resets are
 * durations as OpenAI writes them ("1s", "6m0s", "250ms"). And the 429 itself: OpenAI's
 * body (`rate_limit_exceeded`, type `requests` or `tokens`) with `Retry-After`. Pure.
 */
import { openAiErrorJson } from "../../protocol/openai-error.ts";
import type { Dimension, DimensionState, Verdict } from "./verdict.ts";

/** A duration as OpenAI's headers write it: "250ms" under a second, else "[Nm]S[.fff]s". */
export function formatReset(ms: number): string {
  const t = Math.max(0, Math.ceil(ms));
  if (t === 0) return "0s";
  if (t < 1000) return `${t}ms`;
  const m = Math.floor(t / 60_000);
  const s = Number(((t % 60_000) / 1000).toFixed(3));
  return m > 0 ? `${m}m${s}s` : `${s}s`;
}

/** Headers for `states` (the limited dimensions only; nothing when none is limited). */
export function rateLimitHeaders(states: Verdict["states"]): [string, string][] {
  const out: [string, string][] = [];
  const put = (suffix: string, s: DimensionState, reset: boolean) => {
    out.push(
      [`x-ratelimit-limit-${suffix}`, String(s.limit)],
      [`x-ratelimit-remaining-${suffix}`, String(Math.max(0, s.remaining))],
    );
    if (reset) out.push([`x-ratelimit-reset-${suffix}`, formatReset(s.resetMs)]);
  };
  if (states.requests) put("requests", states.requests, true);
  const tokens = tightest(states.prompt_tokens, states.output_tokens);
  if (tokens) put("tokens", tokens, true);
  if (states.prompt_tokens) put("prompt-tokens", states.prompt_tokens, true);
  if (states.output_tokens) put("output-tokens", states.output_tokens, true);
  if (states.concurrent) put("concurrent", states.concurrent, false);
  return out;
}

function tightest(
  a: DimensionState | undefined,
  b: DimensionState | undefined,
): DimensionState | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  return a.remaining / a.limit <= b.remaining / b.limit ? a : b;
}

const WHAT: Readonly<Record<Dimension, string>> = {
  requests: "requests per minute",
  prompt_tokens: "prompt tokens per minute",
  output_tokens: "output tokens per minute",
  concurrent: "concurrent requests",
};

/** The 429 for a refused request, in OpenAI's shape, with Retry-After and the rate-limit headers. */
export function rateLimitedResponse(tenant: string, v: Verdict): Response {
  const d = v.refused ?? "requests";
  const s = v.states[d];
  const type = d === "prompt_tokens" || d === "output_tokens" ? "tokens" : "requests";
  const message = v.tooLarge
    ? `Request too large for tenant ${tenant} on ${WHAT[d]}: limit ${s?.limit ?? "?"}; this request alone asks more, so it can never pass. ${d === "output_tokens" ? "Ask for fewer output tokens (max_tokens, or fewer choices)." : "Send a shorter prompt."}`
    : `Rate limit reached for tenant ${tenant} on ${WHAT[d]}: limit ${s?.limit ?? "?"}. Please try again in ${formatReset(v.retryAfterMs)}.`;
  const res = new Response(openAiErrorJson(429, message, { code: "rate_limit_exceeded", type }), {
    status: 429,
    headers: { "content-type": "application/json" },
  });
  if (!v.tooLarge)
    res.headers.set("retry-after", String(Math.max(1, Math.ceil(v.retryAfterMs / 1000))));
  for (const [k, val] of rateLimitHeaders(v.states)) res.headers.set(k, val);
  return res;
}
