/**
 * Everything the HTTP app needs, built by main.ts (the composition root) and passed to
 * createApp. Tests build the same object around fakes or real parts.
 */
import type { DisaggOptions } from "./disagg/disagg-dispatch.ts";
import type { RouterEvent } from "../core/events.ts";
import type { Binding } from "../router/sessions/store.ts";
import type { WorkerId } from "../core/ids.ts";
import type { EventSource, IngestResult } from "../fleet/events/http-batch.ts";
import type { KvIndex } from "../router/index/types.ts";
import type { RouterMetrics } from "../observe/names.ts";
import type { LoadTracker } from "../router/books/load-tracker.ts";
import type { WorkerMembership } from "../fleet/membership.ts";
import type { ModelDirectory } from "../fleet/models.ts";
import type { WorkerRegistry } from "../fleet/registry.ts";
import type { PeerAddress } from "./auth.ts";
import type { Logger } from "./log.ts";
import type { UpstreamDeadlines } from "./proxy/deadlines.ts";
import type { UpstreamCall } from "./proxy/upstream.ts";
import type { WorkerProvisioner } from "../fleet/provisioner.ts";
import type { AdmissionGate } from "../router/admission/admission-gate.ts";
import type { RouterTokenizers } from "./routing/tokenizers.ts";
import type { RouterRoom } from "../router/create-router.ts";
import type { RequestObservers } from "../observe/request-observers.ts";
import type { StatusSource } from "../observe/status-routes.ts";

export interface AppDeps {
  readonly maxBodyBytes: number;
  /** Longest session id a header may carry (--max-session-id-length); longer: 400 naming the header. */
  readonly maxSessionIdLength?: number;
  /** This router's identity, sent as x-switchyard-router-id on /health so no router registers it as a worker. */
  readonly routerId?: string;
  /** Which URLs POST /v1/workers may register (workers/url-policy.ts); without it, any. */
  readonly workerUrlPolicy?: { check(url: string): Promise<void> };
  readonly adminToken: string | undefined;
  readonly maxRetries: number;
  readonly registry: WorkerRegistry;
  readonly membership: WorkerMembership;
  /** Mark a worker unhealthy until its next good health check. */
  readonly fence: (workerId: WorkerId, reason: string) => void;
  /**
   * The decision room (src/router createRouter): routing + leases, the load books and the
   * index (GET /v1/workers, /debug/kv/dump), and `ingest(events, source)` for POST
   * /v1/kv/events ("engine" when the batch says it is the engine's own stream, else "admin").
   */
  readonly router: RouterRoom;
  readonly metrics: RouterMetrics;
  /** LoRA requests: which `model` is an adapter, and where it is (or gets) loaded. */
  readonly lora: LoraRouting;
  /** Which models each worker serves (its GET /v1/models); without it every model goes to every worker. */
  readonly models?: ModelDirectory;
  /** The models' tokenizers (--tokenizer, registration); without them text is routed approximately. */
  readonly tokenizers?: RouterTokenizers;
  /** Read a session binding without sliding its TTL (GET /debug/sessions/:id). */
  readonly peekSession?: (sessionId: string) => Promise<Binding | undefined>;
  /** The peer address of a request (Bun: server.requestIP). */
  readonly peer: PeerAddress;
  readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
  /** The proxy's upstream client (main.ts: pooled sockets on Bun); without one, proxied requests use `fetch`. */
  readonly upstream?: UpstreamCall;
  /** The runtime is Bun: stream response bodies through Bun's direct streams. */
  readonly directStreams?: boolean;
  /** Connect, first-byte and stream-idle deadlines of proxied requests; without them, none. */
  readonly deadlines?: UpstreamDeadlines;
  /** How a worker's answer went (undefined: well), for outlier ejection (HealthChecker.report). */
  readonly report?: (workerId: WorkerId, failure: string | undefined) => void;
  /** Lift the server's idle timeout for a request whose body is read (its answer may stream long). */
  readonly keepOpen?: (request: Request) => void;
  /** True once shutdown began: /health answers 503 "draining". */
  readonly draining?: () => boolean;
  /** Where requests wait when every worker is busy (issue 13); without it: 503 all_workers_busy. */
  readonly admission?: AdmissionGate;
  /** --disagg vllm|sglang: completions are split into a prefill and a decode request (app/disagg). */
  readonly disagg?: DisaggOptions;
  /** Per-worker extras for GET /v1/workers: KV event subscriptions, engine metrics. */
  readonly workerDetails?: (id: WorkerId) => Record<string, unknown>;
  /** Register a worker and subscribe to its KV events (`kv_events`); without it, plain registration. */
  readonly provisioner?: WorkerProvisioner;
  /** Milliseconds (load decay, metrics). */
  readonly now: () => number;
  readonly log: Logger;
  /** Each request's access line, metrics and spans (src/observe); without it, none of them. */
  readonly observe?: RequestObservers;
  /** The status page (GET /ui) and what it reads (/debug/status, /debug/decisions); without it, no page. */
  readonly status?: StatusSource;
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
