/**
 * What the HTTP edge is given, in small groups, so each route and the proxy path take only
 * the groups they use (a route that sees everything can come to depend on anything).
 * src/runtime/compose/ builds them the same way for every runtime (the runtime adds its
 * own pieces: the peer address, Bun's upstream client, ...); createApp takes them together
 * as EdgeDeps. Tests build the same groups around fakes or real parts.
 */
import type { CacheCheck } from "./proxy/cache-check.ts";
import type { Binding } from "../router/index.ts";
import type { WorkerId } from "../core/ids.ts";
import type { RouterMetrics } from "../observe/names.ts";
import type { WorkerMembership } from "../fleet/membership.ts";
import type { ModelDirectory } from "../fleet/models.ts";
import type { WorkerRegistry } from "../fleet/registry.ts";
import type { WorkerProvisioner } from "../fleet/provisioner.ts";
import type { RouterApi } from "../router/index.ts";
import type { AdminOpenness, PeerAddress } from "./auth.ts";
import type { BodyReadBudget } from "./body-budget.ts";
import type { DisaggOptions } from "./disagg/options.ts";
import type { Logger } from "../core/logger.ts";
import type { UpstreamDeadlines } from "./proxy/deadlines.ts";
import type { UpstreamCall } from "./proxy/upstream.ts";
import type { ForwardingPolicy } from "./proxy/forwarding.ts";
import type { RetryPolicy } from "./proxy/retry-policy.ts";
import type { KeptMemory } from "./proxy/migration/kept-memory.ts";
import type { RouterTokenizers } from "./prompt-route/tokenizers.ts";
import type { TenantGuard } from "./tenants/guard.ts";
import type { RequestObservers } from "../observe/request-observers.ts";
import type { StatusSource } from "../observe/status-routes.ts";

/** Everything createApp is given: the groups below, each handed on only where it is used. */
export interface EdgeDeps {
  readonly access: EdgeAccess;
  readonly limits: RequestLimits;
  readonly fleet: FleetView;
  /**
   * The router's API (src/router createRouter): routing (route, or wait while every worker
   * is busy) and leases, the load books and the index (GET /v1/workers, /debug/kv/dump), and
   * `ingest(events, source)` for POST /v1/kv/events.
   */
  readonly router: RouterApi;
  readonly upstream: Upstream;
  readonly outcomes: WorkerOutcomes;
  readonly observe: Observability;
  readonly admin: AdminDeps;
  /** Every answer's cached tokens checked (src/fleet/cache-truth); without it: none. */
  readonly cacheCheck?: CacheCheck;
  /** --disagg vllm|sglang: completions are split into a prefill and a decode request (edge/disagg). */
  readonly disagg?: DisaggOptions;
  /** --api-keys: client keys on every client route, tenant limits, fair admission (edge/tenants). */
  readonly tenants?: TenantGuard;
}

/** Who may come in, and whether this router still takes work: the app's middleware and probes. */
export interface EdgeAccess {
  readonly adminToken: string | undefined;
  /** Who the admin API answers without a token (auth.ts adminOpenness); default: loopback peers. */
  readonly adminOpenness?: AdminOpenness;
  /** The engines' credential for POST /v1/kv/events (--events-token); never opens the admin API. */
  readonly eventsToken?: string;
  /** The peer address of a request (Bun: server.requestIP). */
  readonly peer: PeerAddress;
  /** This router's identity, sent as x-switchyard-router-id on /health so no router registers it as a worker. */
  readonly routerId?: string;
  /** True once shutdown began: /health answers 503 "draining", new requests a retryable 503. */
  readonly draining?: () => boolean;
  /** True once shutdown was announced (the drain delay): /health answers 503 "draining", requests are still served. */
  readonly unready?: () => boolean;
}

/** Parses a JSON object body and checks its prompt fields off the event loop (request-json.ts); resolves with the bytes back (they may have moved). */
export type OffLoopJsonParser = (
  body: Uint8Array,
  promptFields: readonly string[],
  maxPromptChars: number | undefined,
) => Promise<{ body: Uint8Array; json: Record<string, unknown> }>;

/** How much of a request the edge reads. */
export interface RequestLimits {
  readonly maxBodyBytes: number;
  /** Characters a request's prompt may hold (--max-prompt-chars); longer: 413 naming the field. Undefined: no limit. */
  readonly maxPromptChars?: number;
  /** Longest session id a header may carry (--max-session-id-length); longer: 400 naming the header. */
  readonly maxSessionIdLength?: number;
  /** A client's KV-steering fields (kv_transfer_params, SGLang's bootstrap_*) pass on to engines (--trust-kv-transfer-params); without it: 400 naming the field (protect/kv-steering.ts). */
  readonly trustKvTransferParams?: boolean;
  /** Large client bodies parsed (and their prompt size checked) off the event loop (request-json.ts); without it, in-thread. */
  readonly parseOffLoop?: OffLoopJsonParser;
  /** Bytes of large bodies being read at once, router-wide (body-budget.ts); without it, unbounded. */
  readonly bodyBudget?: BodyReadBudget;
}

/** The workers as a request sees them: who is there, what each serves, how text becomes tokens. */
export interface FleetView {
  readonly registry: WorkerRegistry;
  /** Which models each worker serves (its GET /v1/models); without it every model goes to every worker. */
  readonly models?: ModelDirectory;
  /** LoRA requests: which `model` is an adapter, and where it is (or gets) loaded. */
  readonly lora: LoraRouting;
  /** The models' tokenizers (--tokenizer, registration); without them text is routed approximately. */
  readonly tokenizers?: RouterTokenizers;
}

/** How the edge calls engines: the proxy's client and its bounds. */
/** --max-migrations and the bounds on what streams keep to be moved. */
export interface MigrationOptions {
  readonly maxMoves: number;
  /** A stream on a worker taken out to drain moves after this long (--migrate-after). */
  readonly migrateAfterMs: number;
  /** Bytes one stream may keep. */
  readonly keepBytes: number;
  /** What every stream keeps, against one router-wide limit. */
  readonly memory: KeptMemory;
}

export interface Upstream {
  /** The proxy's upstream client (Bun: pooled sockets; elsewhere over fetch). */
  readonly call: UpstreamCall;
  /** fetch for the router's own reads of engines (GET /v1/models while a list is unknown); redirects are not followed. */
  readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
  /** Connect, first-byte and stream-idle deadlines of proxied requests; without them, none. */
  readonly deadlines?: UpstreamDeadlines;
  /** Engine answers retried on another worker (--retry-on) and the retry budget; without it: 502/503/504, unbounded. */
  readonly retry?: RetryPolicy;
  /** Workers tried after the first one fails before its first byte. */
  readonly maxRetries: number;
  /** Streams moved to another worker when their engine fails after the first byte (edge/proxy/migration); without it, never. */
  readonly migration?: MigrationOptions;
  /** The runtime is Bun: stream response bodies through Bun's direct streams. */
  readonly directStreams?: boolean;
  /**
   * The request's body is read: lift the server's idle timeout for it (Bun: server.timeout(req, 0)),
   * since an answer may stream for minutes; the proxy's own deadlines bound it from here.
   */
  readonly keepOpen?: (request: Request) => void;
  /** X-Forwarded-For / Forwarded and Cookie towards engines (--trust-forwarded, --forward-cookies); without it, neither is added and Cookie passes. */
  readonly forwarding?: ForwardingPolicy;
}

/** What the proxy tells worker health about each answer. */
export interface WorkerOutcomes {
  /** Mark a worker unhealthy until its next good health check; false: the fence cap kept it in rotation (HealthChecker.fence). */
  readonly fence: (workerId: WorkerId, reason: string) => boolean | undefined;
  /** How a worker's answer went (undefined: well), for outlier ejection (HealthChecker.report). */
  readonly report?: (workerId: WorkerId, failure: string | undefined) => void;
}

export interface Observability {
  readonly metrics: RouterMetrics;
  readonly log: Logger;
  /** Each request's access line, metrics and spans (src/observe), opened at the door; without it, none of them. */
  readonly requests?: RequestObservers;
  /** The status page (GET /ui) and what it reads (/debug/status, /debug/decisions); without it, no page. */
  readonly status?: StatusSource;
}

/** What the admin routes change or read besides the router's API. */
export interface AdminDeps {
  readonly membership: WorkerMembership;
  /** Register a worker and subscribe to its KV events (`kv_events`); without it, plain registration. */
  readonly provisioner?: WorkerProvisioner;
  /** Which URLs POST /v1/workers may register (fleet/url-policy.ts); without it, any. */
  readonly workerUrlPolicy?: { check(url: string): Promise<void> };
  /** Per-worker extras for GET /v1/workers: KV event subscriptions, engine metrics. */
  readonly workerDetails?: (id: WorkerId) => Record<string, unknown>;
  /** POST /v1/workers/:id/canary: the cache check's canary on that worker now (src/fleet/cache-truth/canary.ts). */
  readonly canary?: (
    id: WorkerId,
  ) => Promise<
    readonly { readonly ok: boolean; readonly cause?: string; readonly evidence: string }[]
  >;
  /** Holds that take a worker out of rotation to drain (POST/DELETE /v1/workers/:id/drain): the health checker's. */
  readonly drain?: WorkerDrain;
  /** Read a session binding without sliding its TTL (GET /debug/sessions/:id). */
  readonly peekSession?: (sessionId: string) => Promise<Binding | undefined>;
  /** Milliseconds (load decay in GET /v1/workers). */
  readonly now: () => number;
}

/** Taking one worker out of rotation to drain, and back (fleet/health.ts's HealthChecker is one). */
export interface WorkerDrain {
  /** No new requests; in-flight ones finish, streams past --migrate-after move. */
  hold(id: WorkerId, reason: string): void;
  /** Ends the hold; a health check decides whether the worker takes requests again. */
  release(id: WorkerId): Promise<boolean | undefined>;
  /** Why it is held (an admin's drain, a pod not ready or terminating); undefined: not held. */
  heldFor(id: WorkerId): string | undefined;
}

/** LoRA adapters for the request path (lora/adapter-loader.ts's AdapterLoader is one). */
export interface LoraRouting {
  /** The adapter a request's `model` names; undefined: the base model (or a name passed through). */
  adapterOf(model: unknown): string | undefined;
  /** The workers holding `name`, loading it on one first when none does. Throws RouterError. */
  ensure(name: string): Promise<ReadonlySet<WorkerId>>;
  /** A request for `name` went to `worker` (LRU bookkeeping). */
  used(name: string, worker: WorkerId): void;
  /** `worker` answered that it does not have `name`: forget that it does. */
  missing(name: string, worker: WorkerId): void;
  /** Adapters a worker holds, as far as this router knows (GET /v1/workers). */
  loadedOn(worker: WorkerId): readonly string[];
}
