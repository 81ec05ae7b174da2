/**
 * What an admitted request may generate is what its tenant's output limit booked for it, and
 * the engine is told so: the body's generation cap is set to the booking, per choice, in every
 * field the engine reads it from (chat: `max_tokens` and `max_completion_tokens`, since vLLM
 * takes the latter first; completions `max_tokens`; responses `max_output_tokens`; SGLang's
 * `sampling_params.max_new_tokens`). A request that named no cap gets the booked default, so
 * no answer can run past its booking, streamed or whole. Pure; it validates nothing.
 */
import { choicesAsked } from "./output-budget.ts";

export interface OutputBooking {
  /** Output tokens booked for the whole request (every choice). */
  readonly booked: number;
  /** The cap each choice gets (booked ÷ choices); 0 when `booked` is 0. */
  readonly perChoice: number;
}

/**
 * The booking for a request on a route that generates: what it asks (`asked`, already × n),
 * else the tenant's default bounded by the per-minute limit (`limit`, 0 = none). A request that
 * asks more than the limit keeps its ask: the limiter refuses it as too large.
 */
export function outputBooking(
  asked: number | undefined,
  body: Record<string, unknown>,
  defaultTokens: number,
  limit: number,
): OutputBooking {
  const n = choicesAsked(body);
  if (asked !== undefined) return { booked: asked, perChoice: Math.floor(asked / n) };
  const whole = limit > 0 ? Math.min(defaultTokens, limit) : defaultTokens;
  // At least one token a choice: more choices than the limit holds is refused as too large.
  const perChoice = Math.max(1, Math.floor(whole / n));
  return { booked: perChoice * n, perChoice };
}

/** `body` with its generation cap set to `perChoice` in every field `path`'s engine reads it from. */
export function withOutputCap(
  path: string,
  body: Record<string, unknown>,
  perChoice: number,
): Record<string, unknown> {
  switch (path) {
    case "/v1/chat/completions":
      return { ...body, max_tokens: perChoice, max_completion_tokens: perChoice };
    case "/v1/responses":
      return { ...body, max_output_tokens: perChoice };
    case "/generate": {
      const sp = body.sampling_params;
      const params =
        typeof sp === "object" && sp !== null && !Array.isArray(sp)
          ? (sp as Record<string, unknown>)
          : {};
      return { ...body, sampling_params: { ...params, max_new_tokens: perChoice } };
    }
    default:
      return { ...body, max_tokens: perChoice };
  }
}
