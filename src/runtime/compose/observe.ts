/**
 * What the operator sees: the collectors bound to /metrics (index, load, workers, build,
 * recovery, process, event-loop lag), each request's observation (access line, request
 * metrics, spans through the runtime's tracer) and what the status page reads. It serves
 * nothing (the edge mounts /metrics and the status page).
 */
import type { Config } from "../../config/schema.ts";
import type { Logger } from "../../core/logger.ts";
import { buildInfo } from "../../core/build-info.ts";
import { bindCollectors } from "../../observe/collectors.ts";
import { DecisionLog } from "../../observe/decision-log.ts";
import { bindBuildInfo, bindRecoveryMetrics, bindWorkerInfo } from "../../observe/fleet-metrics.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import { bindProcessMetrics, EventLoopLag } from "../../observe/process-metrics.ts";
import { RecentStats } from "../../observe/recent-stats.ts";
import { RequestMetrics } from "../../observe/request-metrics.ts";
import { RequestObservers } from "../../observe/request-observers.ts";
import type { ReplicaView, StatusSource } from "../../observe/status-routes.ts";
import { AlertmanagerReader } from "../../observe/alertmanager.ts";
import type { AdmissionGate, createRouter } from "../../router/index.ts";
import type { RuntimeChoices } from "./choices.ts";
import type { Fleet } from "./fleet.ts";
import type { Members } from "./membership.ts";

type Router = ReturnType<typeof createRouter>;

/** Binds the router's collectors to `metrics`; the event-loop lag probe is returned unstarted. */
export function bindRouterMetrics(
  choices: Pick<RuntimeChoices, "roleOf" | "processProbe">,
  d: {
    readonly metrics: RouterMetrics;
    readonly fleet: Pick<Fleet, "registry" | "models">;
    readonly router: Router;
    readonly admission: AdmissionGate;
    readonly now: () => number;
  },
): EventLoopLag {
  const { metrics, router, now } = d;
  const { registry, models } = d.fleet;
  metrics.admissionQueueLength.onCollect((g) => g.set([], d.admission.size));
  bindCollectors(metrics, {
    index: router.index,
    tracker: router.tracker,
    workers: () => registry.list(),
    now,
  });
  bindWorkerInfo(metrics.registry, {
    workers: () => registry.list(),
    modelsOf: (id) => models.of(id),
    roleOf: choices.roleOf,
  });
  bindBuildInfo(metrics.registry, buildInfo());
  bindRecoveryMetrics(
    metrics.registry,
    () => router.recovery.stats() as unknown as Record<string, number>,
  );
  if (choices.processProbe !== undefined)
    bindProcessMetrics(metrics.registry, choices.processProbe);
  const loopLag = new EventLoopLag(now, {
    every: (fn, ms) => setInterval(fn, ms),
    stop: (h) => clearInterval(h as ReturnType<typeof setInterval>),
  });
  loopLag.bind(metrics.registry);
  return loopLag;
}

export interface Observation {
  readonly observe: RequestObservers;
  readonly decisions: DecisionLog;
  readonly recent: RecentStats;
  readonly status: StatusSource;
}

/** Each request's observation and the status page's sources. */
export function buildObservation(
  config: Config,
  choices: Pick<RuntimeChoices, "tracer" | "localHosts">,
  log: Logger,
  d: {
    readonly metrics: RouterMetrics;
    readonly fleet: Pick<Fleet, "registry">;
    readonly router: Router;
    readonly admission: AdmissionGate;
    readonly outliers: Members["outliers"];
    readonly sessionsHeld?: () => { readonly held: number };
    readonly now: () => number;
    /** This router's id on the wire (hex) and the routers sharing its Redis (undefined: no --redis). */
    readonly routerId: string;
    readonly peers: () =>
      | { routerId: string; heardMsAgo: number; requests: number; complete: boolean }[]
      | undefined;
  },
): Observation {
  const { registry } = d.fleet;
  const clock = epochClock();
  const startedAt = new Date(clock()).toISOString();
  const decisions = new DecisionLog({
    policy: d.router.pipeline.name,
    costs: d.router.pipeline.costs,
    blockSize: config.blockSize,
    overlapWeight: d.router.scheduler.overlapScoreWeight,
  });
  const recent = new RecentStats(clock);
  const observe = new RequestObservers({
    log,
    accessLines: config.logLevel === "debug" || config.logLevel === "info",
    metrics: new RequestMetrics(d.metrics.registry),
    tracer: choices.tracer,
    sampleRatio: config.otlpSampleRatio,
    decisions,
    recent,
    clock,
    blockSize: config.blockSize,
    workerUrl: (id) => registry.get(id)?.url,
  });
  // What the status page reads beside GET /v1/workers (src/observe/status-routes.ts).
  const status: StatusSource = {
    decisions,
    recent,
    build: buildInfo(),
    policy: config.policy,
    blockSize: config.blockSize,
    workers: () => registry.list(),
    ejectedUntil: (id) => d.outliers.ejectedUntil(id),
    now: d.now,
    admissionQueue: () => d.admission.size,
    sessions: () => d.sessionsHeld?.().held,
    replica: (): ReplicaView => ({
      router_id: d.routerId,
      host: choices.localHosts()[0] ?? "unknown",
      started_at: startedAt,
      peers:
        d.peers()?.map((p) => ({
          router_id: p.routerId,
          heard_s_ago: Math.round(p.heardMsAgo / 100) / 10,
          requests: p.requests,
          complete: p.complete,
        })) ?? null,
    }),
    alerts: alertsOf(config.alertmanagerUrl, clock),
  };
  return { observe, decisions, recent, status };
}

/** The firing alerts of --alertmanager-url for the status page; none without it. */
function alertsOf(url: string | undefined, clock: () => number): StatusSource["alerts"] {
  if (url === undefined) return undefined;
  const reader = new AlertmanagerReader({ url, fetch: (u, init) => fetch(u, init), now: clock });
  return () => reader.read();
}

/**
 * Sub-millisecond epoch time for access lines and spans; a runtime whose timeOrigin is not
 * the epoch (workerd's is 0, with now() already epoch time) falls back to Date.now().
 */
function epochClock(): () => number {
  const origin = performance.timeOrigin ?? 0;
  return Math.abs(origin + performance.now() - Date.now()) < 60_000
    ? () => origin + performance.now()
    : () => Date.now();
}
