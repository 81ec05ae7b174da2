/**
 * fetch for the router's own calls to engines (engine info, /kv/query, LoRA load/unload,
 * engine sessions): with `--engine-token`, it sends that token; never the admin token (every
 * registered worker would learn it otherwise).
 */
export function engineFetch(token: string | undefined): (url: string, init?: RequestInit) => Promise<Response> {
  if (token === undefined) return (url, init) => fetch(url, init);
  return (url, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${token}`);
    return fetch(url, { ...init, headers });
  };
}

