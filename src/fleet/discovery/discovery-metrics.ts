/**
 * What discovery reports: its metrics (registered on the router's Prometheus registry) and
 * the narrow logger it writes to. It counts; it decides nothing.
 *
 * - `switchyard_discovery_rejected_total{pod, field}`: pod versions skipped for a bad
 *   annotation (or no named port); one count per version, not per event. A pod's series go
 *   when the pod does (`forget`): every rollout makes new pod names, so keeping them would
 *   grow the scrape with the router's age; the series live as long as the fleet's pods.
 * - `switchyard_discovery_pods{state}`: routable | held (not ready or terminating) | waiting
 *   (no address, not ready yet, registration failing) | rejected.
 * - `switchyard_discovery_api_up`: 1 while the last list or watch call got through, 0 during
 *   an API server outage (the last known fleet keeps routing meanwhile).
 * - `switchyard_discovery_relists_total{reason}`: lists that got through, by why they were
 *   needed: start | expired (410) | error (the server's history went back: "too large
 *   resource version").
 * - `switchyard_discovery_watch_restarts_total{reason}`: timeout (the server ended the watch,
 *   as asked) | error (connection cut, HTTP error, unreadable line) | idle (nothing for too long).
 * - `switchyard_discovery_registration_failures_total`.
 */
import type { MetricsRegistry } from "../../observe/registry.ts";

export type RelistReason = "start" | "expired" | "error";
export type WatchRestartReason = "timeout" | "error" | "idle";

/** How many pods are in each state (PodFleet.counts), for the gauge. */
export type FleetCounts = Record<"routable" | "held" | "waiting" | "rejected", number>;

export interface DiscoveryMetrics {
  rejected(pod: string, field: string): void;
  /** The pod is gone: drop its rejected series. */
  forget(pod: string): void;
  registrationFailed(): void;
  apiUp(up: boolean): void;
  relisted(reason: RelistReason): void;
  watchRestarted(reason: WatchRestartReason): void;
  /** The gauge reads the fleet's counts at each scrape. */
  countPods(counts: () => FleetCounts): void;
}

export function discoveryMetrics(registry: MetricsRegistry): DiscoveryMetrics {
  const rejected = registry.counter(
    "switchyard_discovery_rejected_total",
    "Pod versions discovery skipped, by pod and the field that was wrong",
    ["pod", "field"],
  );
  const failures = registry.counter(
    "switchyard_discovery_registration_failures_total",
    "Registrations of discovered pods that failed (retried)",
  );
  const up = registry.gauge(
    "switchyard_discovery_api_up",
    "1 while the Kubernetes API answers discovery's list and watch",
  );
  const relists = registry.counter(
    "switchyard_discovery_relists_total",
    "Full lists of the pods, by reason (start|expired|error)",
    ["reason"],
  );
  const restarts = registry.counter(
    "switchyard_discovery_watch_restarts_total",
    "Watches started again, by reason (timeout|error|idle)",
    ["reason"],
  );
  const pods = registry.gauge(
    "switchyard_discovery_pods",
    "Discovered pods by state (routable|held|waiting|rejected)",
    ["state"],
  );
  const fieldsOf = new Map<string, Set<string>>();
  return {
    rejected: (pod, field) => {
      rejected.inc([pod, field]);
      let fields = fieldsOf.get(pod);
      if (fields === undefined) fieldsOf.set(pod, (fields = new Set()));
      fields.add(field);
    },
    forget: (pod) => {
      for (const field of fieldsOf.get(pod) ?? []) rejected.remove([pod, field]);
      fieldsOf.delete(pod);
    },
    registrationFailed: () => failures.inc(),
    apiUp: (u) => up.set([], u ? 1 : 0),
    relisted: (reason) => relists.inc([reason]),
    watchRestarted: (reason) => restarts.inc([reason]),
    countPods: (counts) => {
      pods.onCollect((g) => {
        for (const [state, n] of Object.entries(counts())) g.set([state], n);
      });
    },
  };
}
