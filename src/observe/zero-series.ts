/**
 * Counters that exist at 0 before anything happens. Prometheus cannot tell "never happened"
 * from "not exported": rate() and increase() over a series that appears only with its first
 * event miss that first event, and an alert or a panel over a missing series shows nothing
 * rather than 0. So a worker's counters start at 0 when it registers (and leave with it), and
 * the fixed label values of the router-wide ones (reasons, error codes, outcomes) start at 0
 * when the router does.
 */
import { ROUTER_ERROR_CODES } from "../core/errors.ts";
import type { BurstClaimOutcome } from "../router/index.ts";
import { DEADLINE_KINDS, type RouterMetrics } from "./names.ts";
import type { Gauge } from "./registry.ts";

const BURST_OUTCOMES: readonly BurstClaimOutcome[] = ["clear", "counted", "moved", "failed"];
/** The status a worker's requests_total starts at 0 under, so its share of requests reads 0, not nothing. */
const FIRST_STATUS = "200";

/** `burstClaims`: the routers share burst claims (--burst-claims with --redis), so their outcomes are graphed. */
export function zeroRouterSeries(m: RouterMetrics, o: { burstClaims?: boolean } = {}): void {
  for (const reason of ["queue_full", "queue_timeout"]) m.admissionRejections.inc([reason], 0);
  for (const reason of ["unknown_worker", "invalid", "approx_policy"] as const)
    m.eventDropped(reason, 0);
  for (const reason of ["missing", "invalid", "forbidden"]) m.kvEventPushesRefused.inc([reason], 0);
  // Every code the router can answer with itself: the dashboard's routing-errors panel reads 0 on a healthy fleet.
  for (const code of ROUTER_ERROR_CODES) m.routingErrors.inc([code], 0);
  if (o.burstClaims) for (const outcome of BURST_OUTCOMES) m.burstClaims.inc([outcome], 0);
}

export function zeroWorkerSeries(
  m: RouterMetrics,
  workerId: bigint,
  tokenizerMismatch: Gauge,
): void {
  const w = String(workerId);
  m.requests.inc([w, FIRST_STATUS], 0);
  m.workerEjections.inc([w], 0);
  m.upstreamFailures.inc([w], 0);
  for (const d of DEADLINE_KINDS) m.deadlineMisses.inc([w, d], 0);
  tokenizerMismatch.set([w], 0);
}

export function forgetWorkerSeries(
  m: RouterMetrics,
  workerId: bigint,
  tokenizerMismatch: Gauge,
): void {
  const w = String(workerId);
  // Only the zero it was given: the counts of requests it did serve stay, as they always have.
  if (m.requests.get([w, FIRST_STATUS]) === 0) m.requests.remove([w, FIRST_STATUS]);
  m.workerEjections.remove([w]);
  m.upstreamFailures.remove([w]);
  for (const d of DEADLINE_KINDS) m.deadlineMisses.remove([w, d]);
  tokenizerMismatch.remove([w]);
}
