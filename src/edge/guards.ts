/**
 * What every request passes before its handler, in this order, as one list: the request's
 * observation (its id and clock start first, so every answer after it, refusals included,
 * carries an id and an access line), the draining refusal, the admin check (admin paths) and
 * the client-key check (client paths, with --api-keys). The Hono app mounts the list as its
 * middleware (app.ts) and Bun's fast routes wrap their handlers in the same list (`guarded`),
 * so the two ways in cannot drift apart. A guard sees a plain Request and answers a Response:
 * no Hono, no runtime.
 */
import type { EdgeDeps } from "./deps.ts";
import { adminGuard } from "./auth.ts";
import { eventsGuard } from "./events-auth.ts";
import { errorResponse } from "./errors.ts";
import { PASSTHROUGH_ROUTES } from "./routes/passthrough.ts";
import { keyGuard } from "./tenants/authenticate.ts";

/** One step before the handler: answer itself, or call `next` and pass (or change) its answer. */
export type Guard = (
  req: Request,
  path: string,
  next: () => Promise<Response>,
) => Promise<Response>;

/** A guard and the paths it applies to (Hono patterns: "*", an exact path, or "/prefix/*"). */
export interface PathGuard {
  readonly paths: readonly string[];
  readonly guard: Guard;
}

/** The route engines push KV events to: the events token (--events-token) or the admin check (events-auth.ts). */
export const EVENTS_PATH = "/v1/kv/events";

/** Paths that need the admin token (or a loopback peer at the zero-config local start); EVENTS_PATH also takes the events token. */
export const ADMIN_PATHS = [
  "/v1/workers",
  "/v1/workers/*",
  "/v1/kv/*",
  "/v1/route",
  "/v1/route/*",
  "/debug/*",
  "/ui",
] as const;

/** The OpenAI and engine-native routes a client uses: with --api-keys each needs a client key. */
export const CLIENT_PATHS: readonly string[] = [
  "/v1/completions",
  "/v1/chat/completions",
  "/v1/models",
  "/tokenize",
  ...Object.keys(PASSTHROUGH_ROUTES),
];

/** Paths that still answer while the router drains: probes, scrapes and what build it is. */
const OPEN_WHILE_DRAINING: ReadonlySet<string> = new Set([
  "/health",
  "/livez",
  "/metrics",
  "/version",
]);

/** Shutdown began: new work goes elsewhere (503, retryable); requests in flight finish. */
function drainingRefusal(): Response {
  const res = errorResponse(
    503,
    "draining",
    "this router is shutting down; send the request to another one",
  );
  res.headers.set("retry-after", "1");
  res.headers.set("connection", "close");
  return res;
}

/** The guards `d` asks for, in the order a request meets them; a part not configured adds none. */
export function requestGuards(d: EdgeDeps): readonly PathGuard[] {
  const guards: PathGuard[] = [];
  const requests = d.observe.requests;
  if (requests !== undefined) {
    guards.push({
      paths: ["*"],
      guard: async (req, path, next) => {
        if (!requests.wants(path)) return next();
        const obs = requests.begin(req, path);
        return obs.respond(await next());
      },
    });
  }
  const draining = d.access.draining;
  if (draining !== undefined) {
    guards.push({
      paths: ["*"],
      guard: (_req, path, next) =>
        draining() && !OPEN_WHILE_DRAINING.has(path) ? Promise.resolve(drainingRefusal()) : next(),
    });
  }
  const a = d.access;
  const openness =
    a.adminOpenness ??
    (a.adminToken !== undefined ? { kind: "token" as const } : { kind: "loopback" as const });
  const admin = adminGuard(a.adminToken, a.peer, openness);
  // Engines push events with their own credential, never the admin token.
  const events = eventsGuard({
    eventsToken: a.eventsToken,
    adminToken: a.adminToken,
    openness,
    peer: a.peer,
    refused: d.observe.metrics.kvEventPushesRefused,
    log: d.observe.log,
  });
  guards.push({
    paths: ADMIN_PATHS,
    guard: (req, path, next) =>
      path === EVENTS_PATH ? events(req, path, next) : admin(req, path, next),
  });
  if (d.tenants !== undefined) guards.push({ paths: CLIENT_PATHS, guard: keyGuard(d.tenants) });
  return guards;
}

/** Whether a guard registered for `pattern` applies to `path` (the patterns `PathGuard.paths` uses). */
export function appliesTo(pattern: string, path: string): boolean {
  if (pattern === "*" || pattern === "/*") return true;
  if (pattern.endsWith("/*")) return path.startsWith(pattern.slice(0, -1));
  return pattern === path;
}

/** `handler` behind the guards of `path`, in their order (the fast routes' door; the app's is its middleware). */
export function guarded(
  guards: readonly PathGuard[],
  path: string,
  handler: (req: Request) => Promise<Response>,
): (req: Request) => Promise<Response> {
  const mine = guards.filter((g) => g.paths.some((p) => appliesTo(p, path))).map((g) => g.guard);
  return mine.reduceRight<(req: Request) => Promise<Response>>(
    (inner, guard) => (req) => guard(req, path, () => inner(req)),
    handler,
  );
}
