/**
 * fetch for the router's own calls to engines (engine info, /kv/query, LoRA load/unload,
 * engine sessions): with `--engine-token`, it sends that token; never the admin token (every
 * registered worker would learn it otherwise).
 *
 * Redirects are never followed (`ownFetch` too): an engine that answers 3xx sent the router
 * to any host it named, with the engine token, and a redirected /health counted as healthy.
 * A 3xx is an answer like any other non-2xx: the call fails.
 */
export function engineFetch(
  token: string | undefined,
): (url: string, init?: RequestInit) => Promise<Response> {
  if (token === undefined) return ownFetch;
  return (url, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${token}`);
    return fetch(url, { ...init, headers, redirect: "manual" });
  };
}

/** fetch for the router's own calls that carry no engine token (models, /tokenize probe, health): no redirects. */
export function ownFetch(url: string, init?: RequestInit): Promise<Response> {
  return fetch(url, { ...init, redirect: "manual" });
}
