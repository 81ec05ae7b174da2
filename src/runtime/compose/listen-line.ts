/**
 * What the start-up line says about where the router listens. A wildcard bind (0.0.0.0, ::)
 * is named as such: an operator reading "http://127.0.0.1:8080" in a container's log would
 * believe the router unreachable from outside. The loopback URL is added for this host only.
 */
import { reachableHost } from "./choices.ts";

export function listeningLine(
  host: string,
  port: number,
  scheme: "http" | "https" = "http",
): string {
  const local = `${scheme}://${reachableHost(host)}:${port}`;
  const wildcard = host === "0.0.0.0" || host === "::" || host === "[::]";
  if (!wildcard) return `switchyard listening on ${local}`;
  const bound = host.startsWith("[") ? host : host.includes(":") ? `[${host}]` : host;
  return `switchyard listening on ${scheme}://${bound}:${port} (every interface; ${local} from this host)`;
}
