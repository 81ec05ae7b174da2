/**
 * The key check of every OpenAI and engine-native route when --api-keys is set: the request
 * must carry `Authorization: Bearer KEY` with a configured key, else 401 in OpenAI's shape
 * (`invalid_api_key`). The answer never repeats the key (nor any part of it). The tenant the
 * key speaks for travels with the request (src/protect/request-tenant.ts); every answer then
 * carries the tenant's rate-limit headers, OpenAI's `x-ratelimit-*`. One guard in the list
 * (guards.ts) the app's middleware and Bun's fast routes share, so both paths check the same way.
 */
import { openAiErrorJson } from "../../protocol/openai-error.ts";
import { bearerKey } from "../../protect/key-set.ts";
import { rateLimitHeaders } from "../../protect/limits/ratelimit-headers.ts";
import type { Verdict } from "../../protect/limits/verdict.ts";
import { requestTenant, setRequestTenant } from "../../protect/request-tenant.ts";
import { mayUseModel, type Tenant } from "../../protect/tenant.ts";
import type { TenantGuard } from "./guard.ts";

/** The limit states a request's own check returned (its answer's headers say those, not older ones). */
const checked = new WeakMap<Request, Verdict["states"]>();

export function recordLimitStates(request: Request, states: Verdict["states"]): void {
  checked.set(request, states);
}

function refusal(message: string): Response {
  return new Response(
    openAiErrorJson(401, message, { code: "invalid_api_key", type: "invalid_request_error" }),
    {
      status: 401,
      headers: {
        "content-type": "application/json",
        "www-authenticate": 'Bearer realm="switchyard"',
      },
    },
  );
}

/** The request's tenant, or the 401 to answer. */
export async function authenticate(req: Request, g: TenantGuard): Promise<Tenant | Response> {
  const key = bearerKey(req.headers.get("authorization"));
  if (key === undefined) {
    g.onAuthFailure?.("missing");
    return refusal("You didn't provide an API key. Send it as `Authorization: Bearer KEY`.");
  }
  const tenant = await g.keys().lookup(key);
  if (tenant === undefined) {
    g.onAuthFailure?.("unknown");
    return refusal("Incorrect API key provided. Ask the operator of this router for a valid key.");
  }
  setRequestTenant(req, tenant);
  return tenant;
}

/** `res` with the tenant's rate-limit headers (a copy when its headers cannot be changed). */
export function withLimitHeaders(req: Request, res: Response, g: TenantGuard): Response {
  const tenant = requestTenant(req);
  if (tenant === undefined) return res;
  const headers = rateLimitHeaders(checked.get(req) ?? g.limiter.states(tenant));
  if (headers.length === 0) return res;
  let out = res;
  try {
    for (const [k, v] of headers) out.headers.set(k, v);
  } catch {
    out = new Response(res.body, res);
    for (const [k, v] of headers) out.headers.set(k, v);
  }
  return out;
}

/** GET /v1/models for a tenant limited to some models: only those are listed. */
async function onlyAllowedModels(res: Response, tenant: Tenant): Promise<Response> {
  if (tenant.models === undefined || !res.ok) return res;
  const body = (await res.json()) as { data?: { id?: unknown }[] };
  if (Array.isArray(body.data))
    body.data = body.data.filter((m) => typeof m.id === "string" && mayUseModel(tenant, m.id));
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  return new Response(JSON.stringify(body), { status: res.status, headers });
}

/** The key check as a guard (guards.ts), for the app's middleware and Bun's fast routes alike. */
export function keyGuard(
  g: TenantGuard,
): (req: Request, path: string, next: () => Promise<Response>) => Promise<Response> {
  return async (req, path, next) => {
    const tenant = await authenticate(req, g);
    if (tenant instanceof Response) return tenant;
    let res = await next();
    if (req.method === "GET" && path === "/v1/models" && tenant.models !== undefined)
      res = await onlyAllowedModels(res, tenant);
    // Headers are set in place where they can be.
    return withLimitHeaders(req, res, g);
  };
}
