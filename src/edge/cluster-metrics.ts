/**
 * /metrics for the state routers share: the session store (Redis errors, availability),
 * engine-backed sessions (opens, closes, expiries), replica load sync and LoRA loads.
 * Counters owned by other parts are read at scrape time from their stats, so the request
 * path never touches these metrics.
 */
import type { Counter } from "../observe/registry.ts";
import type { RouterMetrics } from "../observe/names.ts";
import { METRIC_PREFIX } from "../observe/names.ts";

export interface ClusterMetricSources {
  /** Redis store stats; absent with the in-memory store (then 0 errors, always available). */
  readonly store?: () => { readonly available: boolean; readonly errors: number };
  /** Load sync stats; absent without --redis. */
  readonly loadSync?: () => SyncFigures;
  readonly lora?: () => {
    readonly loads: number;
    readonly alreadyLoaded: number;
    readonly unloads: number;
    readonly noCapacity: number;
    readonly refusals: number;
  };
  /** The in-memory session store's size and evictions (--max-sessions); absent with Redis. */
  readonly memorySessions?: () => { readonly held: number; readonly evicted: number };
}

export interface SyncFigures {
  readonly publishedMessages: number;
  readonly publishedEvents: number;
  readonly receivedMessages: number;
  readonly droppedMessages: number;
  readonly droppedEvents: number;
  readonly peers: number;
  readonly remoteRequests: number;
  readonly receiving: boolean;
}

export interface ClusterMetrics {
  /** Engine session calls by action (open | close) and result (ok | error). */
  readonly engineSessionCalls: Counter;
  /** Engine-backed sessions whose expiry this router claimed (and closed on the engine). */
  readonly sessionsExpired: Counter;
}

export function bindClusterMetrics(m: RouterMetrics, s: ClusterMetricSources): ClusterMetrics {
  const r = m.registry;
  r.counter(
    `${METRIC_PREFIX}affinity_store_errors_total`,
    "Session store calls that failed (Redis away); each answered as 'no binding'",
  ).onCollect((c) => c.set([], s.store?.().errors ?? 0));
  r.gauge(
    `${METRIC_PREFIX}affinity_store_available`,
    "1 while the session store answers (always 1 in memory)",
  ).onCollect((g) => g.set([], (s.store?.().available ?? true) ? 1 : 0));
  const engineSessionCalls = r.counter(
    `${METRIC_PREFIX}engine_session_calls_total`,
    "Engine session opens and closes, by result",
    ["action", "result"],
  );
  const sessionsExpired = r.counter(
    `${METRIC_PREFIX}sessions_expired_total`,
    "Engine-backed sessions whose expiry this router claimed and closed",
  );

  const held = s.memorySessions;
  if (held) {
    r.gauge(
      `${METRIC_PREFIX}sessions`,
      "Sticky session bindings held in memory (expired ones not yet swept included)",
    ).onCollect((g) => g.set([], held().held));
    r.counter(
      `${METRIC_PREFIX}sessions_evicted_total`,
      "Session bindings dropped, least recently used first, to stay within --max-sessions",
    ).onCollect((c) => c.set([], held().evicted));
  }

  const sync = s.loadSync;
  if (sync) {
    const counter = (name: string, help: string, read: (x: SyncFigures) => number) =>
      r
        .counter(`${METRIC_PREFIX}load_sync_${name}`, help)
        .onCollect((c) => c.set([], read(sync())));
    const gauge = (name: string, help: string, read: (x: SyncFigures) => number) =>
      r.gauge(`${METRIC_PREFIX}load_sync_${name}`, help).onCollect((g) => g.set([], read(sync())));
    counter(
      "published_messages_total",
      "Load sync messages published to Redis",
      (x) => x.publishedMessages,
    );
    counter(
      "published_events_total",
      "Load events (add / prefill done / free) published",
      (x) => x.publishedEvents,
    );
    counter(
      "received_messages_total",
      "Load sync messages received from other routers",
      (x) => x.receivedMessages,
    );
    counter(
      "dropped_messages_total",
      "Load sync messages dropped (Redis away or queue full)",
      (x) => x.droppedMessages,
    );
    counter("dropped_events_total", "Load events dropped unsent", (x) => x.droppedEvents);
    gauge("peers", "Other routers heard from", (x) => x.peers);
    gauge(
      "remote_requests",
      "Requests booked here on behalf of other routers",
      (x) => x.remoteRequests,
    );
    gauge("receiving", "1 while subscribed to the other routers' load", (x) =>
      x.receiving ? 1 : 0,
    );
  }

  const lora = s.lora;
  if (lora) {
    r.counter(
      `${METRIC_PREFIX}lora_loads_total`,
      "Adapter loads this router asked engines for, by result",
      ["result"],
    ).onCollect((c) => {
      const x = lora();
      c.set(["loaded"], x.loads);
      c.set(["already_loaded"], x.alreadyLoaded);
      c.set(["refused"], x.refusals);
      c.set(["no_capacity"], x.noCapacity);
    });
    r.counter(
      `${METRIC_PREFIX}lora_unloads_total`,
      "Adapters this router unloaded to make room (--lora-evict)",
    ).onCollect((c) => c.set([], lora().unloads));
  }
  return { engineSessionCalls, sessionsExpired };
}
