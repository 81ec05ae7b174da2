/**
 * The router's HTTP app (Hono, web standards only): OpenAI routes, admin routes behind
 * adminAuth, /health, /livez, /metrics and /version, errors in OpenAI's shape (a wrong method
 * on a known path: 405 with `Allow`). It wires nothing: every part arrives in EdgeDeps from
 * src/runtime/compose.ts, and each route gets only the groups it uses.
 *
 * @example
 * const app = createApp(deps);
 * Bun.serve({ port: 8080, fetch: (req, server) => app.fetch(req, { server }) });
 */
import { Hono } from "hono";
import { buildInfo } from "../core/build-info.ts";
import { PROMETHEUS_CONTENT_TYPE } from "../observe/registry.ts";
import { allowedMethods } from "./allowed-methods.ts";
import { adminAuth } from "./auth.ts";
import type { EdgeDeps, Observability } from "./deps.ts";
import { createDisaggDispatch } from "./disagg/disagg-dispatch.ts";
import { errorResponse, toErrorResponse, classify, describeError } from "./errors.ts";
import { BodyReadError } from "./body.ts";
import type { ForwardDeps } from "./proxy/forward.ts";
import { ROUTER_ID_HEADER } from "../fleet/url-policy.ts";
import { adminRoutes } from "./routes/admin.ts";
import { createDispatch } from "./routes/dispatch.ts";
import { modelRoutes } from "./routes/models.ts";
import { completionHandlers, openAiRoutes, type CompletionDeps, type RequestHandler } from "./routes/openai.ts";
import { PASSTHROUGH_ROUTES, passthroughRoutes, type PassthroughDeps } from "./routes/passthrough.ts";
import { workerRoutes } from "./routes/workers.ts";
import { guardHandler, tenantMiddleware } from "./tenants/authenticate.ts";
import { tenantCall } from "./tenants/tenant-dispatch.ts";
import { statusRoutes } from "../observe/status-routes.ts";

/** Paths that need the admin token (or a loopback peer when no token is set). */
export const ADMIN_PATHS = ["/v1/workers", "/v1/workers/*", "/v1/kv/*", "/v1/route", "/v1/route/*", "/debug/*", "/ui"] as const;

/** The OpenAI and engine-native routes a client uses: with --api-keys each needs a client key. */
export const CLIENT_PATHS: readonly string[] = ["/v1/completions", "/v1/chat/completions", "/v1/models", "/tokenize", ...Object.keys(PASSTHROUGH_ROUTES)];

/** Paths that still answer while the router drains: probes, scrapes and what build it is. */
const OPEN_WHILE_DRAINING: ReadonlySet<string> = new Set(["/health", "/livez", "/metrics", "/version"]);

/** Shutdown began: new work goes elsewhere (503, retryable); requests in flight finish. */
function drainingRefusal(): Response {
  const res = errorResponse(503, "draining", "this router is shutting down; send the request to another one");
  res.headers.set("retry-after", "1");
  res.headers.set("connection", "close");
  return res;
}

/** The proxy path every proxied route shares: forward's deps, the model dispatch, --disagg's split. */
function proxyPath(d: EdgeDeps): CompletionDeps & PassthroughDeps {
  const forward: ForwardDeps = { routing: d.router.routing, registry: d.fleet.registry, upstream: d.upstream, outcomes: d.outcomes, observe: d.observe };
  const dispatch = createDispatch(d.fleet, forward);
  const split = d.disagg !== undefined ? createDisaggDispatch(d.fleet, forward, dispatch, d.disagg) : undefined;
  const g = d.tenants;
  const requests = d.observe.requests;
  if (g === undefined) return { limits: d.limits, fleet: d.fleet, tokenizers: d.fleet.tokenizers, dispatch, split, requests };
  // With client keys, each request goes through its tenant's model list, limits and fair share once.
  return {
    limits: d.limits,
    fleet: d.fleet,
    tokenizers: d.fleet.tokenizers,
    requests,
    dispatch: (input, model) => tenantCall(g, input, model, (i) => dispatch(i, model)),
    split: split && ((input, json, model) => tenantCall(g, input, model, (i) => split(i, json, model))),
  };
}

export function createApp(d: EdgeDeps): Hono {
  const app = new Hono();
  const { access } = d;
  const requests = d.observe.requests;
  if (requests !== undefined) {
    // First of all: the request id and the clock start here, and every answer (errors, draining
    // refusals and key refusals included) passes back through.
    app.use("*", async (c, next) => {
      if (!requests.wants(c.req.path)) return next();
      const obs = requests.begin(c.req.raw, c.req.path);
      await next();
      const res = obs.respond(c.res);
      if (res !== c.res) c.res = res;
    });
  }
  if (access.draining !== undefined) {
    const draining = access.draining;
    app.use("*", async (c, next) => {
      if (draining() && !OPEN_WHILE_DRAINING.has(c.req.path)) return drainingRefusal();
      await next();
    });
  }
  const auth = adminAuth(access.adminToken, access.peer);
  for (const p of ADMIN_PATHS) app.use(p, auth);
  if (d.tenants !== undefined) {
    const keys = tenantMiddleware(d.tenants);
    for (const p of CLIENT_PATHS) app.use(p, keys);
  }

  // Readiness: 503 while no worker can take a request, or once shutdown began, so a load
  // balancer stops sending here. Liveness (/livez) only says the process answers.
  // Says "I am a router" so that no router registers this one as a worker (url-policy.ts).
  const idHeader = access.routerId !== undefined ? { [ROUTER_ID_HEADER]: access.routerId } : undefined;
  app.get("/health", (c) => {
    const workers = d.fleet.registry.list();
    const healthy = workers.filter((w) => w.healthy).length;
    const status = access.draining?.() === true || access.unready?.() === true ? "draining" : healthy === 0 ? "no_healthy_worker" : "ok";
    return c.json({ status, workers: workers.length, healthy_workers: healthy }, status === "ok" ? 200 : 503, idHeader);
  });
  app.get("/livez", (c) => c.json({ status: "ok" }, 200, idHeader));
  app.get("/metrics", () => new Response(d.observe.metrics.render(), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } }));
  app.get("/version", (c) => c.json(buildInfo()));

  const proxy = proxyPath(d);
  app.route("/", openAiRoutes(proxy));
  app.route("/", modelRoutes(d.fleet, d.upstream));
  app.route("/", passthroughRoutes(proxy));
  app.route("/", workerRoutes({ limits: d.limits, fleet: d.fleet, router: d.router, admin: d.admin, roles: d.disagg?.roles }));
  app.route("/", adminRoutes({ limits: d.limits, fleet: d.fleet, router: d.router, admin: d.admin }));
  if (d.observe.status !== undefined) app.route("/", statusRoutes(d.observe.status));

  const methodsOf = allowedMethods(app.routes);
  app.notFound((c) => {
    const allowed = methodsOf(c.req.path);
    if (allowed.length === 0) return errorResponse(404, "not_found", `no route for ${c.req.method} ${c.req.path}`);
    const res = errorResponse(405, "method_not_allowed", `${c.req.method} is not allowed on ${c.req.path}; use ${allowed.join(", ")}`);
    res.headers.set("allow", allowed.join(", "));
    return res;
  });
  app.onError((e, c) => answerError(d.observe, e, c.req.raw));
  return app;
}

/** Every error the app answers goes through here: counted, logged when unexpected, OpenAI-shaped. */
function answerError(o: Observability, e: unknown, req: Request): Response {
  const c = classify(e);
  const obs = o.requests?.of(req);
  obs?.failed(c.code);
  const ids = obs && { request_id: obs.id };
  if (c.code === "internal") o.log.error(`unhandled error: ${describeError(e)}`, ids);
  else if (e instanceof BodyReadError) o.log.warn(e.message, ids);
  o.metrics.routingErrors.inc([c.code]);
  return toErrorResponse(e);
}

/**
 * The hot endpoints as a Bun.serve `routes` table, so they skip the app's router: the same
 * handlers and error answers as createApp's, for runtimes that match paths natively.
 */
export function createFastRoutes(d: EdgeDeps): Record<string, { POST: (req: Request) => Promise<Response> }> {
  const h = completionHandlers(proxyPath(d));
  const draining = d.access.draining ?? (() => false);
  const g = d.tenants;
  // With client keys, the same key check and rate-limit headers as the app's middleware.
  const keyed = (fn: RequestHandler): RequestHandler => (g === undefined ? fn : guardHandler(g, fn));
  const requests = d.observe.requests;
  const guard = (fn: RequestHandler, path: string) => {
    const run = keyed((req) => fn(req).catch((e: unknown) => answerError(d.observe, e, req)));
    const plain = (req: Request) => (draining() ? Promise.resolve(drainingRefusal()) : run(req));
    if (requests === undefined) return plain;
    // The same door as the app's first middleware: the request id and the clock start before
    // the draining refusal and the key check, so their answers carry an id and an access line too.
    return async (req: Request) => {
      const obs = requests.begin(req, path);
      return obs.respond(await plain(req));
    };
  };
  return { "/v1/completions": { POST: guard(h.completions, "/v1/completions") }, "/v1/chat/completions": { POST: guard(h.chat, "/v1/chat/completions") } };
}
