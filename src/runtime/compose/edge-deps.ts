/**
 * The edge's deps (src/edge/deps.ts, in their small groups) from the composed parts, the same
 * for every runtime, plus what the runtime adds (`RuntimeEdge`): the peer address, its upstream
 * client and extras. Also the parts only the edge uses: upstream deadlines, the fleet-wide retry
 * budget and the policy for URLs POST /v1/workers may register. It builds no route.
 */
import { withCacheTruth, type CacheTruthParts } from "./cache-truth.ts";
import type { Config } from "../../config/schema.ts";
import { routerIdHex, type RouterId } from "../../core/ids.ts";
import { adminClosedLine, adminOpenness as adminOpennessOf } from "../../edge/auth.ts";
import { BODY_READ_BUDGET_BYTES, BodyReadBudget } from "../../edge/body-budget.ts";
import type { EdgeDeps } from "../../edge/deps.ts";
import type { Logger } from "../../core/logger.ts";
import { RetryBudget } from "../../edge/proxy/retry-budget.ts";
import { KeptMemory } from "../../edge/proxy/migration/kept-memory.ts";
import { fetchUpstream } from "../../edge/proxy/upstream.ts";
import { WorkerUrlPolicy } from "../../fleet/url-policy.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import type { AffinityStore, createRouter } from "../../router/index.ts";
import type { RuntimeChoices, RuntimeEdge } from "./choices.ts";
import { ownFetch } from "./engine-fetch.ts";
import type { Fleet } from "./fleet.ts";
import type { Members } from "./membership.ts";
import type { Observation } from "./observe.ts";

/** Retries of engine answers always allowed per second, so a quiet router retries whatever its traffic. */
const RETRY_FLOOR_PER_SECOND = 10;

/** What the entry's start and stop change, read by the edge at each request. */
export interface AccessState {
  draining: boolean;
  unready: boolean;
  /** The port the server listens on, once it does. */
  listeningPort: number | undefined;
}

export interface EdgeParts {
  readonly routerId: RouterId;
  readonly fleet: Fleet;
  readonly router: ReturnType<typeof createRouter>;
  readonly members: Members;
  readonly store: AffinityStore;
  readonly metrics: RouterMetrics;
  readonly observation: Observation;
  readonly tenants?: EdgeDeps["tenants"];
  /** The cache check's parts (cache-truth.ts); without them: no check. */
  readonly cacheTruth?: CacheTruthParts;
  readonly now: () => number;
}

/** `edgeDeps(runtime)`: createApp's argument. */
export function edgeDepsBuilder(
  config: Config,
  choices: Pick<RuntimeChoices, "localHosts">,
  log: Logger,
  p: EdgeParts,
  state: Readonly<AccessState>,
): (rt: RuntimeEdge) => EdgeDeps {
  const { fleet, members, now } = p;
  // A URL that answers /health as a router (any router's id) is refused as a worker, as is
  // this router's own port on a local address.
  const workerUrlPolicy = new WorkerUrlPolicy({
    allow: config.workerAllow,
    ownPort: () => state.listeningPort,
    localHosts: () => [...choices.localHosts()],
    fetch: (u, init) => fetch(u, init),
  });
  const deadlines = {
    connectMs: config.connectTimeout * 1000,
    firstByteMs: config.firstByteTimeout * 1000,
    responseMs: config.responseTimeout * 1000,
    streamIdleMs: config.streamIdleTimeout * 1000,
  };
  const plainFetch = (url: string, init: RequestInit) => fetch(url, init);
  // Engine answers tried again elsewhere, within one fleet-wide budget (edge/proxy/retry-policy.ts)
  // that every app of this router (one per runtime entry) shares.
  const retry = {
    statuses: new Set(config.retryOn),
    budget: new RetryBudget({
      percent: config.retryBudget,
      minPerSecond: RETRY_FLOOR_PER_SECOND,
      now,
    }),
  };
  // One account of what streams keep to be moved, shared by every app of this router.
  const migration =
    config.maxMigrations > 0
      ? {
          maxMoves: config.maxMigrations,
          migrateAfterMs: config.migrateAfter * 1000,
          keepBytes: config.migrationKeepBytes,
          memory: new KeptMemory(config.migrationMemoryBytes),
        }
      : undefined;
  // An address is no identity once the router is exposed: without a token the admin API is closed then (edge/auth.ts).
  const adminOpenness = adminOpennessOf({
    adminToken: config.adminToken,
    apiKeys: config.apiKeys,
    host: config.host,
  });
  if (adminOpenness.kind === "closed") log.warn(adminClosedLine(adminOpenness.why));
  return (rt) => ({
    access: {
      adminToken: config.adminToken,
      adminOpenness,
      eventsToken: rt.eventsToken ?? config.eventsToken,
      peer: rt.peer,
      routerId: routerIdHex(p.routerId),
      draining: () => state.draining,
      unready: () => state.unready,
    },
    limits: {
      maxBodyBytes: config.maxBodyBytes,
      maxPromptChars: config.maxPromptChars,
      maxSessionIdLength: config.maxSessionIdLength,
      trustKvTransferParams: config.trustKvTransferParams,
      parseOffLoop: rt.parseOffLoop,
      bodyBudget: new BodyReadBudget(Math.max(BODY_READ_BUDGET_BYTES, config.maxBodyBytes)),
    },
    fleet: {
      registry: fleet.registry,
      models: fleet.models,
      lora: fleet.adapters,
      tokenizers: fleet.tokenizers,
    },
    router: p.router,
    upstream: {
      call: rt.upstream ?? fetchUpstream(plainFetch),
      // The router's own read of engines' model lists: no redirects, as on its other own calls.
      fetch: ownFetch,
      deadlines,
      maxRetries: config.maxRetries,
      retry,
      migration,
      directStreams: rt.directStreams,
      keepOpen: rt.keepOpen,
      forwarding: {
        peer: rt.peer,
        trustForwarded: config.trustForwarded,
        forwardCookies: config.forwardCookies,
      },
    },
    outcomes: {
      fence: (id, reason) => members.health.fence(id, reason),
      report: (id, failure) => members.health.report(id, failure),
    },
    observe: {
      metrics: p.metrics,
      log,
      requests: p.observation.observe,
      status: p.observation.status,
    },
    admin: {
      membership: members.membership,
      provisioner: rt.provisioner,
      workerUrlPolicy,
      workerDetails: withCacheTruth(rt.workerDetails, p.cacheTruth?.truth),
      canary: p.cacheTruth?.canary,
      drain: members.health,
      peekSession: (id) => p.store.peek(id),
      now,
    },
    disagg: rt.disagg,
    tenants: p.tenants,
    cacheCheck: p.cacheTruth?.cacheCheck,
  });
}
