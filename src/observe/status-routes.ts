/**
 * The status page and the JSON it reads beside GET /v1/workers: GET /ui (the page, from the
 * binary itself), GET /debug/status (this router, each worker's state, the last minutes in
 * buckets), GET /debug/decisions (the last routing decisions with their cost arithmetic). All
 * three are admin endpoints (the app's guard); a browser that opens /ui on a router with a token
 * is asked for it (HTTP Basic, the token as password) and sends it on the page's reads too.
 * Web standards and Hono only: the same page on Bun, Deno and workerd.
 */
import { Hono } from "hono";
import type { BuildInfo } from "../core/build-info.ts";
import type { AlertsView } from "./alertmanager.ts";
import type { DecisionLog } from "./decision-log.ts";
import type { RecentStats } from "./recent-stats.ts";
import { BUCKET_MS } from "./recent-stats.ts";
import { statusPageCsp } from "./status-page-csp.ts";
import { STATUS_PAGE_HTML } from "./status-page.ts";

export type WorkerState = "healthy" | "unhealthy" | "ejected";

export interface StatusSource {
  readonly decisions: DecisionLog;
  readonly recent: RecentStats;
  readonly build: BuildInfo;
  readonly policy: string;
  readonly blockSize: number;
  readonly workers: () => Iterable<{
    readonly id: bigint;
    readonly healthy: boolean;
    readonly reason?: string;
  }>;
  /** When a worker's ejection ends (ms, the router's clock), while it is ejected. */
  readonly ejectedUntil: (id: bigint) => number | undefined;
  /** The router's clock (ms), for how long an ejection has left. */
  readonly now: () => number;
  readonly admissionQueue: () => number;
  /** Sticky bindings held in memory; undefined with Redis (shared, not counted here). */
  readonly sessions: () => number | undefined;
  /** Which router this is among N (its id on the wire, its host, since when), and the routers sharing its Redis. */
  readonly replica: () => ReplicaView;
  /** The alerts firing now (--alertmanager-url); absent without one. */
  readonly alerts?: () => Promise<AlertsView>;
}

export interface ReplicaView {
  readonly router_id: string;
  readonly host: string;
  readonly started_at: string;
  /** null: no --redis, so this router shares nothing and sees no other. */
  readonly peers:
    | readonly {
        readonly router_id: string;
        readonly heard_s_ago: number;
        readonly requests: number;
        readonly complete: boolean;
      }[]
    | null;
}

/** The window of each worker's share of requests: the last five minutes. */
const SHARE_BUCKETS = (5 * 60_000) / BUCKET_MS;

export function workerState(
  healthy: boolean,
  ejectedUntil: number | undefined,
  now: number,
): WorkerState {
  if (ejectedUntil !== undefined && ejectedUntil > now) return "ejected";
  return healthy ? "healthy" : "unhealthy";
}

export function statusRoutes(s: StatusSource): Hono {
  const app = new Hono();
  let csp: Promise<string> | undefined;
  app.get("/ui", async () => {
    csp ??= statusPageCsp();
    return new Response(STATUS_PAGE_HTML, {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-store",
        "content-security-policy": await csp,
        "x-content-type-options": "nosniff",
      },
    });
  });
  app.get("/debug/status", async (c) => {
    const now = s.now();
    const alerts = s.alerts === undefined ? null : await s.alerts();
    return c.json({
      router: { ...s.build, policy: s.policy, block_size: s.blockSize },
      replica: s.replica(),
      alerts,
      share_seconds: (SHARE_BUCKETS * BUCKET_MS) / 1000,
      worker_requests: s.recent.workerRequests(SHARE_BUCKETS),
      admission_queue: s.admissionQueue(),
      sessions: s.sessions() ?? null,
      workers: [...s.workers()].map((w) => {
        const until = s.ejectedUntil(w.id);
        const state = workerState(w.healthy, until, now);
        return {
          id: w.id.toString(),
          state,
          reason: w.reason ?? null,
          ejected_for_s: state === "ejected" ? Math.ceil((until! - now) / 1000) : null,
        };
      }),
      bucket_seconds: BUCKET_MS / 1000,
      recent: s.recent.series(),
    });
  });
  app.get("/debug/decisions", (c) =>
    c.json({ formula: s.decisions.formula(), decisions: s.decisions.list() }),
  );
  return app;
}
