/**
 * OpenAI's error body, {"error":{"message","type","code","param"}}, as every service here
 * answers it (router, transfer agent). Shape only: which status an error gets is the
 * caller's business (src/edge/errors.ts for the router). Uses only the web-standard Response.
 */

/** OpenAI's `type` field: what kind of problem, from the status. */
export function openAiErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status === 413 || (status >= 400 && status < 500)) return "invalid_request_error";
  if (status === 503) return "service_unavailable";
  return "server_error";
}

/** An error response in OpenAI's shape. */
export function errorResponse(status: number, code: string, message: string, param?: string): Response {
  const body = { error: { message, type: openAiErrorType(status), code, param: param ?? null } };
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}
