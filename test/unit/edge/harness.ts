/**
 * The router's app in-process, built from the real parts around a fake upstream `fetch`, so
 * proxy behaviour is tested without sockets: the decision room through createRouter (as
 * src/runtime/compose/ builds it: index, scheduler, routing, recovery, bookings), sessions, membership.
 * Workers are registered directly in the registry (no engine info call); the recovery query
 * answers an error (these tests post admin events, applied as they say).
 */
import { createApp } from "../../../src/edge/app.ts";
import type { EdgeDeps, MigrationOptions } from "../../../src/edge/deps.ts";
import { fetchUpstream } from "../../../src/edge/proxy/upstream.ts";
import { silentLogger, type Logger } from "../../../src/core/logger.ts";
import { createRouter } from "../../../src/router/create-router.ts";
import { portableBatchHasher } from "../../../src/core/block-hash.ts";
import type { WorkerId } from "../../../src/core/ids.ts";
import type { KvIndex } from "../../../src/router/kv-index/types.ts";
import { LoraStateTracker } from "../../../src/fleet/lora/state-tracker.ts";
import { RouterMetrics } from "../../../src/observe/names.ts";
import type { LoadTracker } from "../../../src/router/books/load-tracker.ts";
import { MemoryAffinityStore } from "../../../src/router/sessions/memory-store.ts";
import { StickyRouter } from "../../../src/router/sessions/sticky.ts";
import { HealthChecker } from "../../../src/fleet/health.ts";
import { WorkerMembership } from "../../../src/fleet/membership.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";
import { ModelDirectory } from "../../../src/fleet/models.ts";
import type { PolicyName } from "../../../src/config/schema.ts";
import { AdapterLoader } from "../../../src/fleet/lora/adapter-loader.ts";
import { engineLoraClient } from "../../../src/fleet/engine-lora.ts";
import { engineSessions } from "../../../src/fleet/engine-sessions.ts";
import type { RequestObservers } from "../../../src/observe/request-observers.ts";

export type FakeFetch = (url: string, init: RequestInit) => Promise<Response>;

export interface Harness {
  readonly app: ReturnType<typeof createApp>;
  readonly deps: EdgeDeps;
  readonly registry: WorkerRegistry;
  readonly tracker: LoadTracker;
  readonly index: KvIndex;
  readonly metrics: RouterMetrics;
  readonly lora: LoraStateTracker;
  readonly loader: AdapterLoader;
  readonly sticky: StickyRouter;
  readonly health: HealthChecker;
  /** Which models each worker serves (empty: every worker's list unknown, any model goes anywhere). */
  readonly models: ModelDirectory;
  /** Every upstream call: URL, headers and body bytes. */
  readonly calls: { url: string; headers: Record<string, string>; body: Uint8Array }[];
  request(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  /** Σ active prefill tokens and decode blocks over every slot. */
  activeLoad(): number;
}

export interface HarnessOptions {
  readonly workers: readonly { id: WorkerId; url: string; dpRanks?: number }[];
  readonly fetch: FakeFetch;
  readonly policy?: PolicyName;
  readonly adminToken?: string;
  readonly peer?: string;
  readonly maxRetries?: number;
  readonly maxBodyBytes?: number;
  /** --max-prompt-chars (default: no limit). */
  readonly maxPromptChars?: number;
  readonly blockSize?: number;
  /** LoRA: adapters named by unknown models are loaded (default false), LRU eviction (default false). */
  readonly loraLoadOnDemand?: boolean;
  readonly loraEvict?: boolean;
  /** Per worker: LoRA slots (default unknown). */
  readonly maxLoras?: number;
  /** Where the app logs (default: nowhere). */
  readonly log?: Logger;
  /** Stream migration (--max-migrations and its bounds); default off. */
  readonly migration?: MigrationOptions;
  /** Access lines, request metrics and spans (src/observe), built from the harness's parts; default none. */
  readonly observe?: (parts: {
    metrics: RouterMetrics;
    registry: WorkerRegistry;
    blockSize: number;
    router: ReturnType<typeof createRouter>;
  }) => RequestObservers;
}

export function harness(o: HarnessOptions): Harness {
  const blockSize = o.blockSize ?? 4;
  const policy = o.policy ?? "kv";
  let clock = 0;
  const now = () => clock++;
  const metrics = new RouterMetrics();
  const registry = new WorkerRegistry();
  const models = new ModelDirectory();
  const lora = new LoraStateTracker();
  const calls: Harness["calls"] = [];
  const fetch: FakeFetch = async (url, init) => {
    const headers = init.headers as Record<string, string>;
    calls.push({ url, headers, body: init.body as Uint8Array });
    return o.fetch(url, init);
  };
  const store = new MemoryAffinityStore({ clock: { now: () => clock, every: () => () => {} } });
  const sticky = new StickyRouter(store);
  const sessions = engineSessions({ urlOf: (id) => registry.get(id)?.url, fetch });
  const router = createRouter(
    { policy, scheduler: { blockSize }, sessionTtlMs: 60_000, inexactIndex: false },
    {
      hasher: portableBatchHasher,
      now,
      rng: () => 0.5,
      workers: registry,
      sticky,
      metrics,
      engineSessions: sessions,
      query: async () => ({ kind: "error", message: "no recovery query in the harness" }),
      sleep: async () => {},
      onDropped: (reason, n) => metrics.eventDropped(reason, n),
    },
  );
  const { index, tracker } = router;
  const health = new HealthChecker({
    registry,
    intervalMs: 1e9,
    timeoutMs: 1000,
    fetch: async () => new Response("ok"),
  });
  const membership = new WorkerMembership({
    registry,
    blockSize,
    load: router.members,
    recovery: router.members,
    lora,
    engineInfo: async () => ({ loras: [] }),
  });
  const loader = new AdapterLoader({
    tracker: lora,
    engine: engineLoraClient({ fetch }),
    workers: () => registry.list().filter((w) => w.healthy),
    loadOnDemand: o.loraLoadOnDemand ?? false,
    isBaseModel: (m) => registry.isBaseModel(m),
    pathTemplate: "/loras/{name}",
    evict: o.loraEvict ?? false,
    now,
  });
  for (const w of o.workers) registry.add(w.id, w.url, w.dpRanks ?? 1, true, "base");
  if (o.maxLoras !== undefined) {
    for (const w of o.workers)
      for (let r = 0; r < (w.dpRanks ?? 1); r++)
        lora.setWorkerCapacity({ workerId: w.id, dpRank: r }, o.maxLoras);
  }
  tracker.updateWorkers(
    o.workers.flatMap((w) =>
      Array.from({ length: w.dpRanks ?? 1 }, (_, r) => ({ workerId: w.id, dpRank: r })),
    ),
  );
  const deps: EdgeDeps = {
    access: { adminToken: o.adminToken, peer: () => o.peer ?? "127.0.0.1" },
    limits: { maxBodyBytes: o.maxBodyBytes ?? 1 << 20, maxPromptChars: o.maxPromptChars },
    fleet: { registry, lora: loader, models },
    router,
    upstream: {
      call: fetchUpstream(fetch),
      fetch,
      maxRetries: o.maxRetries ?? 2,
      migration: o.migration,
    },
    outcomes: { fence: (id, reason) => health.fence(id, reason) },
    observe: {
      metrics,
      log: o.log ?? silentLogger,
      requests: o.observe?.({ metrics, registry, blockSize, router }),
    },
    admin: { membership, peekSession: (id) => store.peek(id), now },
  };
  const app = createApp(deps);
  return {
    app,
    deps,
    registry,
    tracker,
    index,
    metrics,
    lora,
    loader,
    sticky,
    health,
    calls,
    models,
    request(path, init = {}) {
      const { json, ...rest } = init;
      const body = json === undefined ? rest.body : JSON.stringify(json);
      return Promise.resolve(
        app.fetch(
          new Request(`http://router${path}`, {
            method: json === undefined ? (rest.method ?? "GET") : "POST",
            ...rest,
            body,
          }),
        ),
      );
    },
    activeLoad() {
      return tracker
        .loads(clock)
        .reduce((a, l) => a + l.activePrefillTokens + l.activeDecodeBlocks, 0);
    },
  };
}

const enc = new TextEncoder();

/** An engine-like SSE answer: `n` token events then [DONE], as separate chunks. */
export function sseResponse(n: number, headers: Record<string, string> = {}): Response {
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < n) c.enqueue(enc.encode(`data: {"choices":[{"text":"t${i++}"}]}\n\n`));
      else {
        c.enqueue(enc.encode("data: [DONE]\n\n"));
        c.close();
      }
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream", ...headers } });
}

export function jsonResponse(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "content-type": "application/json" },
  });
}
