/**
 * Which methods a path answers to, from the app's own route table, so a wrong method on a
 * known path is a 405 naming the right ones (RFC 9110 §15.5.6: the answer carries `Allow`)
 * instead of a 404 that says the path does not exist. Patterns are Hono's: `:name` is one
 * segment, a trailing `*` the rest. It answers nothing itself.
 */

interface RouteEntry {
  readonly method: string;
  readonly path: string;
}

function patternOf(path: string): RegExp {
  const parts = path.split("/").map((seg) => {
    if (seg === "*") return ".*";
    if (seg.startsWith(":")) return "[^/]+";
    return seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  });
  return new RegExp(`^${parts.join("/")}$`);
}

/**
 * The methods of every route matching a path, in the table's order. Middleware (method ALL)
 * is no route. A GET route answers HEAD too (Hono does), so HEAD is listed with it.
 */
export function allowedMethods(routes: readonly RouteEntry[]): (path: string) => string[] {
  const table = routes
    .filter((r) => r.method !== "ALL")
    .map((r) => ({ method: r.method, pattern: patternOf(r.path) }));
  return (path) => {
    const out: string[] = [];
    for (const r of table) if (r.pattern.test(path) && !out.includes(r.method)) out.push(r.method);
    if (out.includes("GET") && !out.includes("HEAD")) out.splice(out.indexOf("GET") + 1, 0, "HEAD");
    return out;
  };
}
