/**
 * Where the edge finds the observation of a request: `begin` at the server's door (the app's
 * first middleware, and the fast completion routes on Bun), `of` anywhere deeper that holds
 * the same Request (the proxy, disaggregated dispatch). Keyed by the Request object, so no
 * signature on the request path has to carry it and a request the router re-makes for an
 * upstream half can be pointed at its client's record (`alias`).
 */
import { RequestObservation, type ObserveDeps } from "./request-observation.ts";

/**
 * `route` label values: the router's own paths (fixed, so a client cannot mint series with
 * made-up paths); anything else is "other". Paths with ids in them are not listed.
 */
const ROUTE_LABELS: ReadonlySet<string> = new Set([
  "/v1/completions",
  "/v1/chat/completions",
  "/v1/embeddings",
  "/v1/responses",
  "/v1/models",
  "/tokenize",
  "/detokenize",
  "/pooling",
  "/classify",
  "/generate",
  "/score",
  "/v1/score",
  "/rerank",
  "/v1/rerank",
  "/v2/rerank",
  "/v1/workers",
  "/v1/kv/events",
  "/v1/route",
]);

export function routeLabel(path: string): string {
  return ROUTE_LABELS.has(path) ? path : "other";
}

/**
 * Paths that are not client requests and are not observed at all: probes, scrapes, engines
 * pushing KV events (thousands of batches a second under load), the status page and what it
 * polls. Observing them would bury the requests in the access log and cost the event path.
 */
const UNOBSERVED: ReadonlySet<string> = new Set([
  "/health",
  "/livez",
  "/metrics",
  "/v1/kv/events",
  "/ui",
  "/ui/",
]);
const UNOBSERVED_PREFIXES = ["/debug/"];

export function observed(path: string): boolean {
  return !UNOBSERVED.has(path) && !UNOBSERVED_PREFIXES.some((p) => path.startsWith(p));
}

export class RequestObservers {
  readonly #byRequest = new WeakMap<Request, RequestObservation>();

  constructor(readonly deps: ObserveDeps) {}

  /** Whether requests to `path` get an observation (see UNOBSERVED). */
  wants(path: string): boolean {
    return observed(path);
  }

  begin(req: Request, path: string): RequestObservation {
    const o = new RequestObservation(this.deps, req, routeLabel(path));
    this.#byRequest.set(req, o);
    return o;
  }

  of(req: Request): RequestObservation | undefined {
    return this.#byRequest.get(req);
  }

  /** `made` stands for `original` upstream (a request the router built for one half of a pair). */
  alias(original: Request, made: Request): void {
    const o = this.#byRequest.get(original);
    if (o !== undefined) this.#byRequest.set(made, o);
  }
}
