/**
 * Readiness, liveness and the drain gate. GET /health is 200 `ok` until a drain begins, then
 * 503 `draining` so routers stop sending here; GET /livez stays 200 (the process is alive).
 * While draining every other route except /metrics answers a retryable 503, so a router tries
 * another engine while requests already in flight finish. It does not wait for them (server.ts).
 */
import type { MiddlewareHandler } from "hono";
import { error, json, type Route } from "./http.ts";

export interface Health {
  readonly routes: readonly Route[];
  /** Mounted before every route: refuses new work once draining. */
  readonly gate: MiddlewareHandler;
  /** From now on /health says 503 and new requests are refused. */
  startDrain(): void;
}

/** Probes and metrics still answer while draining: the orchestrator and dashboards watch the drain. */
const OPEN_WHILE_DRAINING = new Set(["GET /health", "GET /livez", "GET /metrics"]);

export function health(): Health {
  let draining = false;
  return {
    routes: [
      {
        method: "GET",
        path: "/health",
        handle: () => (draining ? json({ status: "draining" }, 503) : json({ status: "ok" })),
      },
      { method: "GET", path: "/livez", handle: () => json({ status: "ok" }) },
    ],
    gate: async (c, next) => {
      if (draining && !OPEN_WHILE_DRAINING.has(`${c.req.method} ${c.req.path}`)) {
        return error(503, "the engine is shutting down", "service_unavailable");
      }
      await next();
    },
    startDrain: () => {
      draining = true;
    },
  };
}
