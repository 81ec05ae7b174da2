/**
 * Counters that exist at 0 before anything happens. Prometheus cannot tell "never happened"
 * from "not exported": rate() and increase() over a series that appears only with its first
 * event miss that first event, and an alert or a panel over a missing series shows nothing
 * rather than 0. So a worker's failure counters start at 0 when it registers (and leave with
 * it), and the fixed reasons of the router-wide ones start at 0 when the router does.
 */
import { DEADLINE_KINDS, type RouterMetrics } from "./names.ts";
import type { Gauge } from "./registry.ts";

export function zeroRouterSeries(m: RouterMetrics): void {
  for (const reason of ["queue_full", "queue_timeout"]) m.admissionRejections.inc([reason], 0);
  for (const reason of ["unknown_worker", "invalid", "approx_policy"] as const) m.eventDropped(reason, 0);
}

export function zeroWorkerSeries(m: RouterMetrics, workerId: bigint, tokenizerMismatch: Gauge): void {
  const w = String(workerId);
  m.workerEjections.inc([w], 0);
  m.upstreamFailures.inc([w], 0);
  for (const d of DEADLINE_KINDS) m.deadlineMisses.inc([w, d], 0);
  tokenizerMismatch.set([w], 0);
}

export function forgetWorkerSeries(m: RouterMetrics, workerId: bigint, tokenizerMismatch: Gauge): void {
  const w = String(workerId);
  m.workerEjections.remove([w]);
  m.upstreamFailures.remove([w]);
  for (const d of DEADLINE_KINDS) m.deadlineMisses.remove([w, d]);
  tokenizerMismatch.remove([w]);
}
