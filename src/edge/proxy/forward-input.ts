/**
 * What forward() is given: its dependencies (the same for every proxied route) and one
 * request's input. Types only; in a file of their own so the parts of the proxy path
 * (migration/) can name them without importing forward.ts.
 */
import type { WorkerId } from "../../core/ids.ts";
import type { WorkerRegistry } from "../../fleet/registry.ts";
import type {
  PromptHashes,
  RoutingService,
  SessionControl,
  TenantShare,
} from "../../router/index.ts";
import type { Observability, Upstream, WorkerOutcomes } from "../deps.ts";
import type { CacheCheck } from "./cache-check.ts";
import type { ParsedStreamOptions } from "./usage-injection.ts";
import type { RequestSettlement } from "./request-settlement.ts";

/** What the proxy path needs: the same for every proxied route (and the decode half under --disagg). */
export interface ForwardDeps {
  /** Decisions: routeOrWait (waits in the router's admission gate while every worker is busy), prepare, request ids. */
  readonly routing: RoutingService;
  /** A decision's worker -> its URL (gone meanwhile: the next decision), and word when it leaves rotation. */
  readonly registry: Pick<WorkerRegistry, "get" | "onUnavailable" | "onDraining" | "healthyIds">;
  readonly upstream: Upstream;
  readonly outcomes: WorkerOutcomes;
  readonly observe: Observability;
  /** Every answer's cached tokens checked against the prediction (src/fleet/cache-truth); without it: none. */
  readonly cacheCheck?: CacheCheck;
}

export interface ForwardInput {
  /** The client's request (headers, abort signal). */
  readonly request: Request;
  /** Upstream path, e.g. /v1/chat/completions. */
  readonly path: string;
  /** The body exactly as received; forwarded byte for byte. */
  readonly body: Uint8Array;
  readonly tokens: Uint32Array;
  /** The tokens are not the engine's (text without a tokenizer): route approximately. */
  readonly approximate?: boolean;
  readonly loraName?: string;
  readonly sessionId?: string;
  readonly sessionControl?: SessionControl;
  readonly allowedWorkerIds?: ReadonlySet<WorkerId>;
  /** The body asked for an SSE stream (`stream: true`); picks the first-byte or the response deadline. */
  readonly stream?: boolean;
  /** The body's `stream_options` as the route parsed it: the cache check adds include_usage without scanning the body. */
  readonly streamOptions?: ParsedStreamOptions;
  /** The body's `priority` (vLLM: lower is served first); orders the admission queue. */
  readonly priority?: number;
  /** The prompt's hashes when the caller has them already (a LoRA 404 retry reuses them); else hashed here once. */
  readonly prepared?: PromptHashes;
  /** The output tokens the body asks for (max_tokens and kin; src/protect/output-budget.ts); undefined: it does not say. */
  readonly maxOutputTokens?: number;
  /** What the engine will prefill at most, in tokens (src/protect/prompt-charge.ts): a tenant's prompt charge. Computed on demand. */
  readonly promptCharge?: () => number;
  /** With --api-keys: the request's tenant and what it asks, for fair admission in the router's queue. */
  readonly share?: TenantShare;
  /**
   * What the engine gets as `Authorization`: undefined passes the client's on (engines with
   * their own keys), null drops it and a string replaces it. With --api-keys the client's
   * header holds its key to this router, which must never reach an engine's logs.
   */
  readonly upstreamAuthorization?: string | null;
  /** The client's request as a whole (a tenant's charge settles at its end); each decision's settlement tells it how its answer ended. */
  readonly settlement?: RequestSettlement;
  /** The decode half of a P/D pair: another worker computes the prompt (RouteInput.prefilledElsewhere). */
  readonly prefilledElsewhere?: boolean;
}
