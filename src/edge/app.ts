/**
 * The router's HTTP app (Hono, web standards only): OpenAI routes, admin routes behind
 * the admin guard (guards.ts), /health, /livez, /metrics and /version, errors in OpenAI's shape (a wrong method
 * on a known path: 405 with `Allow`). It wires nothing: every part arrives in EdgeDeps from
 * src/runtime/compose/, and each route gets only the groups it uses.
 *
 * @example
 * const app = createApp(deps);
 * Bun.serve({ port: 8080, fetch: (req, server) => app.fetch(req, { server }) });
 */
import { Hono, type MiddlewareHandler } from "hono";
import { buildInfo } from "../core/build-info.ts";
import { PROMETHEUS_CONTENT_TYPE } from "../observe/registry.ts";
import { allowedMethods } from "./allowed-methods.ts";
import type { EdgeDeps, Observability } from "./deps.ts";
import { createPairForward } from "./disagg/pair-forward.ts";
import { errorResponse, toErrorResponse, classify, describeError } from "./errors.ts";
import { BodyReadError } from "./body.ts";
import type { ForwardDeps } from "./proxy/forward.ts";
import { ROUTER_ID_HEADER } from "../fleet/url-policy.ts";
import { adminRoutes } from "./routes/admin.ts";
import { createModelForward } from "./proxy/model-forward.ts";
import { modelRoutes } from "./routes/models.ts";
import {
  completionHandlers,
  openAiRoutes,
  type CompletionDeps,
  type RequestHandler,
} from "./routes/openai.ts";
import { passthroughRoutes, type PassthroughDeps } from "./routes/passthrough.ts";
import { guarded, requestGuards, type Guard } from "./guards.ts";
import { workerRoutes } from "./routes/workers.ts";
import { tenantCall } from "./tenants/tenant-call.ts";
import { statusRoutes } from "../observe/status-routes.ts";

/** The proxy path every proxied route shares: forward's deps, the model dispatch, --disagg's split. */
function proxyPath(d: EdgeDeps): CompletionDeps & PassthroughDeps {
  const forward: ForwardDeps = {
    routing: d.router.routing,
    registry: d.fleet.registry,
    upstream: d.upstream,
    outcomes: d.outcomes,
    observe: d.observe,
    cacheCheck: d.cacheCheck,
  };
  const dispatch = createModelForward(d.fleet, forward);
  const split =
    d.disagg !== undefined ? createPairForward(d.fleet, forward, dispatch, d.disagg) : undefined;
  const g = d.tenants;
  const requests = d.observe.requests;
  if (g === undefined)
    return {
      limits: d.limits,
      fleet: d.fleet,
      tokenizers: d.fleet.tokenizers,
      dispatch,
      split,
      requests,
    };
  // With client keys, each request goes through its tenant's model list, limits and fair share once.
  return {
    limits: d.limits,
    fleet: d.fleet,
    tokenizers: d.fleet.tokenizers,
    requests,
    dispatch: (input, model) => tenantCall(g, input, model, (i) => dispatch(i, model)),
    split:
      split &&
      ((input, json, model) =>
        tenantCall(g, input, model, (i, recap) => split(i, recap ? recap(json) : json, model))),
  };
}

export function createApp(d: EdgeDeps): Hono {
  const app = new Hono();
  const { access } = d;
  // Every guard, in the list's order, before any route (the fast routes use the same list).
  for (const g of requestGuards(d)) {
    const mw = middleware(g.guard);
    for (const p of g.paths) app.use(p, mw);
  }

  // Readiness: 503 while no worker can take a request, or once shutdown began, so a load
  // balancer stops sending here. Liveness (/livez) only says the process answers.
  // Says "I am a router" so that no router registers this one as a worker (url-policy.ts).
  const idHeader =
    access.routerId !== undefined ? { [ROUTER_ID_HEADER]: access.routerId } : undefined;
  app.get("/health", (c) => {
    const workers = d.fleet.registry.list();
    const healthy = workers.filter((w) => w.healthy).length;
    const status =
      access.draining?.() === true || access.unready?.() === true
        ? "draining"
        : healthy === 0
          ? "no_healthy_worker"
          : "ok";
    return c.json(
      { status, workers: workers.length, healthy_workers: healthy },
      status === "ok" ? 200 : 503,
      idHeader,
    );
  });
  app.get("/livez", (c) => c.json({ status: "ok" }, 200, idHeader));
  app.get(
    "/metrics",
    () =>
      new Response(d.observe.metrics.render(), {
        headers: { "content-type": PROMETHEUS_CONTENT_TYPE },
      }),
  );
  app.get("/version", (c) => c.json(buildInfo()));

  const proxy = proxyPath(d);
  app.route("/", openAiRoutes(proxy));
  app.route("/", modelRoutes(d.fleet, d.upstream));
  app.route("/", passthroughRoutes(proxy));
  app.route(
    "/",
    workerRoutes({
      limits: d.limits,
      fleet: d.fleet,
      router: d.router,
      admin: d.admin,
      roles: d.disagg?.roles,
    }),
  );
  app.route(
    "/",
    adminRoutes({ limits: d.limits, fleet: d.fleet, router: d.router, admin: d.admin }),
  );
  if (d.observe.status !== undefined) app.route("/", statusRoutes(d.observe.status));

  const methodsOf = allowedMethods(app.routes);
  app.notFound((c) => {
    const allowed = methodsOf(c.req.path);
    if (allowed.length === 0)
      return errorResponse(404, "not_found", `no route for ${c.req.method} ${c.req.path}`);
    const res = errorResponse(
      405,
      "method_not_allowed",
      `${c.req.method} is not allowed on ${c.req.path}; use ${allowed.join(", ")}`,
    );
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

/** A guard as Hono middleware: a refusal is the answer; otherwise the route's answer, as the guard passes (or changes) it. */
function middleware(guard: Guard): MiddlewareHandler {
  return async (c, next) => {
    let passed = false;
    const res = await guard(c.req.raw, c.req.path, async () => {
      passed = true;
      await next();
      return c.res;
    });
    if (!passed) return res;
    // Assigning c.res copies the response: only when the guard made a new one.
    if (res !== c.res) c.res = res;
  };
}

/**
 * The hot endpoints as a Bun.serve `routes` table, so they skip the app's router: the same
 * handlers, guards (the same list, in the same order) and error answers as createApp's, for
 * runtimes that match paths natively.
 */
export function createFastRoutes(
  d: EdgeDeps,
): Record<string, { POST: (req: Request) => Promise<Response> }> {
  const h = completionHandlers(proxyPath(d));
  const guards = requestGuards(d);
  const route = (fn: RequestHandler, path: string) =>
    guarded(guards, path, (req) => fn(req).catch((e: unknown) => answerError(d.observe, e, req)));
  return {
    "/v1/completions": { POST: route(h.completions, "/v1/completions") },
    "/v1/chat/completions": { POST: route(h.chat, "/v1/chat/completions") },
  };
}
