/**
 * A proxied request of an authenticated tenant, around the plain dispatch: the model must be
 * one the tenant may use (else 404 as OpenAI answers for a model one has no access to), its
 * limits must have room (else 429 with Retry-After and OpenAI's headers), then it goes on with
 * its priority clamped to the tenant's band, its fair-admission share, and the engine's own
 * `Authorization` in place of the client's key. With an output limit, the engine is told to
 * generate no more than was booked (`max_tokens` or the tenant's default; an ask past the
 * per-minute limit is refused as too large). When the answer is over, the limits get back
 * the request's concurrency slot and the output tokens it really used, and fair admission is
 * corrected the same way; the prompt charge (everything the engine will prefill, bounded where
 * the router cannot count it: src/protect/prompt-charge.ts) is settled to the prompt tokens
 * the answer reports. That end is the request's settlement's (edge/proxy/request-settlement.ts),
 * across a LoRA retry and both halves of a P/D pair: the charge subscribes to it and counts
 * nothing itself.
 */
import { RouterError } from "../../core/errors.ts";
import { rateLimitedResponse } from "../../protect/limits/ratelimit-headers.ts";
import { parseJsonBigintSafe, stringifyBigint } from "../../core/json.ts";
import { generatesNoOutput } from "../../protect/output-budget.ts";
import { outputBooking, withOutputCap, type OutputBooking } from "../../protect/output-cap.ts";
import { requestTenant } from "../../protect/request-tenant.ts";
import { effectivePriority, mayUseModel } from "../../protect/tenant.ts";
import type { TenantShare } from "../../router/index.ts";
import type { ForwardInput } from "../proxy/forward.ts";
import { RequestSettlement } from "../proxy/request-settlement.ts";
import { recordLimitStates } from "./authenticate.ts";
import type { TenantGuard } from "./guard.ts";

/**
 * The output a request books and the body it is parsed from (exactly: long integers keep every
 * bit, so the body rewritten with its cap differs from the client's in the cap alone).
 */
function bookedOutput(
  input: ForwardInput,
  defaultTokens: number,
  limit: number,
): { booking: OutputBooking; json: Record<string, unknown> } {
  const json = parseJsonBigintSafe(new TextDecoder().decode(input.body)) as Record<string, unknown>;
  return { booking: outputBooking(input.maxOutputTokens, json, defaultTokens, limit), json };
}

/**
 * Run `go` for `input` under its tenant's model list, limits and fair share. When the body was
 * rewritten (the output cap), `go` also gets the rewrite, for callers that build engine bodies
 * from the parsed fields (--disagg's split).
 */
export async function tenantCall(
  g: TenantGuard,
  input: ForwardInput,
  model: unknown,
  go: (
    input: ForwardInput,
    recap: ((json: Record<string, unknown>) => Record<string, unknown>) | undefined,
  ) => Promise<Response>,
): Promise<Response> {
  const tenant = requestTenant(input.request);
  // Only the key check sets a tenant; a route it does not cover stays as it was.
  if (tenant === undefined)
    return go({ ...input, upstreamAuthorization: g.engineAuthorization }, undefined);
  if (tenant.models !== undefined) {
    if (typeof model !== "string") {
      throw new RouterError(
        "invalid_request",
        "model: this API key may use only some models; name one",
        "model",
      );
    }
    if (!mayUseModel(tenant, model)) {
      throw new RouterError(
        "model_not_found",
        `The model \`${model}\` does not exist or you do not have access to it.`,
        "model",
      );
    }
  }
  const outputLimit = tenant.limits.outputTokensPerMinute ?? 0;
  // With an output limit the engine is told the booking (output-cap.ts); else only booked.
  const capped =
    outputLimit > 0 && !generatesNoOutput(input.path)
      ? bookedOutput(input, tenant.defaultOutputTokens, outputLimit)
      : undefined;
  const outputTokens =
    capped?.booking.booked ??
    input.maxOutputTokens ??
    (generatesNoOutput(input.path) ? 0 : tenant.defaultOutputTokens);
  // Everything the engine will prefill, not only the routed prompt; settled from the answer's usage.
  const ask = { promptTokens: input.promptCharge?.() ?? input.tokens.length, outputTokens };
  const r = await g.limiter.acquire(tenant, ask, crypto.randomUUID());
  if (!r.allowed) {
    recordLimitStates(input.request, r.verdict.states);
    return rateLimitedResponse(tenant.name, r.verdict);
  }
  const { ticket } = r;
  recordLimitStates(input.request, ticket.verdict.states);
  let recap: ((json: Record<string, unknown>) => Record<string, unknown>) | undefined;
  if (capped !== undefined) {
    const { path } = input;
    const { perChoice } = capped.booking;
    recap = (json) => withOutputCap(path, json, perChoice);
    input = { ...input, body: new TextEncoder().encode(stringifyBigint(recap(capped.json))) };
  }
  const share: TenantShare | undefined = g.fair
    ? { tenant: tenant.name, weight: tenant.weight, ...ask }
    : undefined;
  // A success whose answer reports nothing is charged what was booked.
  const settlement = new RequestSettlement(outputTokens);
  settlement.onEnd((out, prompt) => {
    g.limiter.release(ticket, out, prompt);
    if (share !== undefined) g.settle?.(share, out);
  });
  let res: Response;
  try {
    res = await go(
      {
        ...input,
        priority: effectivePriority(tenant, input.priority),
        share,
        upstreamAuthorization: g.engineAuthorization,
        settlement,
      },
      recap,
    );
  } catch (e) {
    settlement.failed();
    throw e;
  }
  settlement.answered(res);
  return res;
}
