/**
 * A proxied request of an authenticated tenant, around the plain dispatch: the model must be
 * one the tenant may use (else 404 as OpenAI answers for a model one has no access to), its
 * limits must have room (else 429 with Retry-After and OpenAI's headers), then it goes on with
 * its priority clamped to the tenant's band, its fair-admission share, and the engine's own
 * `Authorization` in place of the client's key. When the answer is over, the limits get back
 * the request's concurrency slot and the output tokens it really used (booked from
 * `max_tokens` or the tenant's default), and fair admission is corrected the same way.
 */
import { RouterError } from "../../core/errors.ts";
import { rateLimitedResponse } from "../../protect/limits/ratelimit-headers.ts";
import { generatesNoOutput } from "../../protect/output-budget.ts";
import { requestTenant } from "../../protect/request-tenant.ts";
import { effectivePriority, mayUseModel } from "../../protect/tenant.ts";
import type { TenantShare } from "../../router/index.ts";
import type { ForwardInput } from "../proxy/forward.ts";
import { onAnswerEnd } from "./answer-end.ts";
import { recordLimitStates } from "./authenticate.ts";
import type { TenantGuard } from "./guard.ts";

/** Run `go` for `input` under its tenant's model list, limits and fair share. */
export async function tenantCall(g: TenantGuard, input: ForwardInput, model: unknown, go: (input: ForwardInput) => Promise<Response>): Promise<Response> {
  const tenant = requestTenant(input.request);
  // Only the key check sets a tenant; a route it does not cover stays as it was.
  if (tenant === undefined) return go({ ...input, upstreamAuthorization: g.engineAuthorization });
  if (tenant.models !== undefined) {
    if (typeof model !== "string") {
      throw new RouterError("invalid_request", "model: this API key may use only some models; name one", "model");
    }
    if (!mayUseModel(tenant, model)) {
      throw new RouterError("model_not_found", `The model \`${model}\` does not exist or you do not have access to it.`, "model");
    }
  }
  const outputTokens = input.maxOutputTokens ?? (generatesNoOutput(input.path) ? 0 : tenant.defaultOutputTokens);
  const ask = { promptTokens: input.tokens.length, outputTokens };
  const r = await g.limiter.acquire(tenant, ask, crypto.randomUUID());
  if (!r.allowed) {
    recordLimitStates(input.request, r.verdict.states);
    return rateLimitedResponse(tenant.name, r.verdict);
  }
  const { ticket } = r;
  recordLimitStates(input.request, ticket.verdict.states);
  const share: TenantShare | undefined = g.fair ? { tenant: tenant.name, weight: tenant.weight, ...ask } : undefined;
  let settled = false;
  const settle = (out: number) => {
    if (settled) return;
    settled = true;
    g.limiter.release(ticket, out);
    if (share !== undefined) g.settle?.(share, out);
  };
  let res: Response;
  try {
    // onAnswerEnd reads the body for its usage: the proxy then hands it a pull stream.
    res = await go({ ...input, priority: effectivePriority(tenant, input.priority), share, upstreamAuthorization: g.engineAuthorization, bodyReadByCaller: true });
  } catch (e) {
    settle(0);
    throw e;
  }
  return onAnswerEnd(res, outputTokens, settle);
}
