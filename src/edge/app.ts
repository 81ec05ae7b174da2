/**
 * The router's HTTP app (Hono, web standards only): OpenAI routes, admin routes behind
 * adminAuth, /health and /metrics, errors in OpenAI's shape. It wires nothing: every part
 * arrives in AppDeps from main.ts.
 *
 * @example
 * const app = createApp(deps);
 * Bun.serve({ port: 8080, fetch: (req, server) => app.fetch(req, { server }) });
 */
import { Hono } from "hono";
import { PROMETHEUS_CONTENT_TYPE } from "../observe/registry.ts";
import { adminAuth } from "./auth.ts";
import type { AppDeps } from "./deps.ts";
import { errorResponse, toErrorResponse, classify, describeError } from "./errors.ts";
import { BodyReadError } from "./body.ts";
import { ROUTER_ID_HEADER } from "../fleet/url-policy.ts";
import { adminRoutes } from "./routes/admin.ts";
import { completionHandlers, openAiRoutes, type RequestHandler } from "./routes/openai.ts";
import { passthroughRoutes } from "./routes/passthrough.ts";
import { workerRoutes } from "./routes/workers.ts";
import { statusRoutes } from "../observe/status-routes.ts";

/** Paths that need the admin token (or a loopback peer when no token is set). */
export const ADMIN_PATHS = ["/v1/workers", "/v1/workers/*", "/v1/kv/*", "/v1/route", "/v1/route/*", "/debug/*", "/ui"] as const;

/** Paths that still answer while the router drains: probes and scrapes. */
const OPEN_WHILE_DRAINING: ReadonlySet<string> = new Set(["/health", "/livez", "/metrics"]);

/** Shutdown began: new work goes elsewhere (503, retryable); requests in flight finish. */
function drainingRefusal(): Response {
  const res = errorResponse(503, "draining", "this router is shutting down; send the request to another one");
  res.headers.set("retry-after", "1");
  res.headers.set("connection", "close");
  return res;
}

export function createApp(d: AppDeps): Hono {
  const app = new Hono();
  const observe = d.observe;
  if (observe !== undefined) {
    // First of all: the request id and the clock start here, and every answer (errors and draining refusals included) passes back through.
    app.use("*", async (c, next) => {
      if (!observe.wants(c.req.path)) return next();
      const obs = observe.begin(c.req.raw, c.req.path);
      await next();
      const res = obs.respond(c.res);
      if (res !== c.res) c.res = res;
    });
  }
  if (d.draining !== undefined) {
    const draining = d.draining;
    app.use("*", async (c, next) => {
      if (draining() && !OPEN_WHILE_DRAINING.has(c.req.path)) return drainingRefusal();
      await next();
    });
  }
  const auth = adminAuth(d.adminToken, d.peer);
  for (const p of ADMIN_PATHS) app.use(p, auth);

  // Readiness: 503 while no worker can take a request, or once shutdown began, so a load
  // balancer stops sending here. Liveness (/livez) only says the process answers.
  // Says "I am a router" so that no router registers this one as a worker (url-policy.ts).
  const idHeader = d.routerId !== undefined ? { [ROUTER_ID_HEADER]: d.routerId } : undefined;
  app.get("/health", (c) => {
    const workers = d.registry.list();
    const healthy = workers.filter((w) => w.healthy).length;
    const status = d.draining?.() === true ? "draining" : healthy === 0 ? "no_healthy_worker" : "ok";
    return c.json({ status, workers: workers.length, healthy_workers: healthy }, status === "ok" ? 200 : 503, idHeader);
  });
  app.get("/livez", (c) => c.json({ status: "ok" }, 200, idHeader));
  app.get("/metrics", () => new Response(d.metrics.render(), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } }));

  app.route("/", openAiRoutes(d));
  app.route("/", passthroughRoutes(d));
  app.route("/", workerRoutes(d));
  app.route("/", adminRoutes(d));
  if (d.status !== undefined) app.route("/", statusRoutes(d.status));

  app.notFound((c) => errorResponse(404, "not_found", `no route for ${c.req.method} ${c.req.path}`));
  app.onError((e, c) => answerError(d, e, c.req.raw));
  return app;
}

/** Every error the app answers goes through here: counted, logged when unexpected, OpenAI-shaped. */
function answerError(d: AppDeps, e: unknown, req: Request): Response {
  const c = classify(e);
  const obs = d.observe?.of(req);
  obs?.failed(c.code);
  const ids = obs && { request_id: obs.id };
  if (c.code === "internal") d.log.error(`unhandled error: ${describeError(e)}`, ids);
  else if (e instanceof BodyReadError) d.log.warn(e.message, ids);
  d.metrics.routingErrors.inc([c.code]);
  return toErrorResponse(e);
}

/**
 * The hot endpoints as a Bun.serve `routes` table, so they skip the app's router: the same
 * handlers and error answers as createApp's, for runtimes that match paths natively.
 */
export function createFastRoutes(d: AppDeps): Record<string, { POST: (req: Request) => Promise<Response> }> {
  const h = completionHandlers(d);
  const draining = d.draining ?? (() => false);
  const plain = (fn: RequestHandler) => (req: Request) =>
    draining() ? Promise.resolve(drainingRefusal()) : fn(req).catch((e: unknown) => answerError(d, e, req));
  const observe = d.observe;
  // The same door as the app's first middleware: the request id and the clock start here.
  const guard = (fn: RequestHandler, path: string) => {
    const inner = plain(fn);
    if (observe === undefined) return inner;
    return async (req: Request) => {
      const obs = observe.begin(req, path);
      return obs.respond(await inner(req));
    };
  };
  return { "/v1/completions": { POST: guard(h.completions, "/v1/completions") }, "/v1/chat/completions": { POST: guard(h.chat, "/v1/chat/completions") } };
}
