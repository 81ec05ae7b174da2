/** Bun.serve with the router's limits: the client idle timeout, a body cap above ours, the proxied endpoints on Bun's native routes table. */
import { createFastRoutes } from "../../edge/app.ts";
import type { EdgeDeps } from "../../edge/deps.ts";
import { EVENT_BATCH_MIN_LIMIT_BYTES } from "../../edge/routes/admin.ts";
import type { Config } from "../../config/schema.ts";

/**
 * `tls`: serve HTTPS with this pair on `port` (default --port), with SO_REUSEPORT, so a second
 * server with a renewed pair can take the port over (tls-listener.ts). Plain HTTP never sets it:
 * a second router started on the same port must be refused, not share it.
 */
export function listenOnBun(
  config: Config,
  deps: EdgeDeps,
  fetch: (req: Request) => Response | Promise<Response>,
  tls?: { readonly cert: string; readonly key: string; readonly port: number },
): ReturnType<typeof Bun.serve> {
  return Bun.serve({
    port: tls?.port ?? config.port,
    hostname: config.host,
    ...(tls === undefined ? {} : { tls: { cert: tls.cert, key: tls.key }, reusePort: true }),
    // A client must send its request (head and body) within about this long, or it is cut:
    // slow-body clients cannot pile up. Proxied requests lift it once their body is read
    // (deps.upstream.keepOpen), as their answers stream; the upstream deadlines bound them instead.
    idleTimeout: config.idleTimeout,
    // Our own limits answer 413 in OpenAI's shape; Bun's must not trip first.
    maxRequestBodySize: Math.max(config.maxBodyBytes, EVENT_BATCH_MIN_LIMIT_BYTES) + 1024 * 1024,
    // The proxied endpoints are matched natively; everything else goes through the app.
    routes: createFastRoutes(deps),
    fetch,
  });
}
