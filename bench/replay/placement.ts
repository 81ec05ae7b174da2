/**
 * The placement TTFT: each request's time to first token as the engines' own timing model gives
 * it for where the router put it and what it found cached there, without the machine's noise.
 * Per engine, requests in their send order (trace arrival × scale ÷ speedup) take the one prefill
 * lane in turn; each computes its uncached tokens (prompt − cached, as the engine reported them)
 * at the mocker's rate plus its fixed overhead (src/mocker/timing.ts prefillMs).
 *
 * Why: on this shared 2-core machine a run's measured TTFTs carry 10-150 ms of scheduling noise
 * at p90 (router, client and eight engines on two cores; the first second of a cluster's JIT),
 * more than the differences between policies on light workloads, and it moves run to run. This
 * number depends only on the decisions (engine, cache found), so it tells a routing difference
 * from a noisy run. It is reported beside the measured TTFT, never instead of it: it omits the
 * router's own time, and it orders requests by send time where the engine saw arrival time.
 */
import { DEFAULT_TIMING, prefillMs } from "../../src/mocker/timing.ts";
import type { RequestOutcome } from "./replay.ts";
import type { TraceRequest } from "./trace.ts";

export interface PlacementTiming {
  readonly prefillUsPerToken: number;
  readonly speedup: number;
  readonly arrivalScale: number;
}

/** Placement TTFT (ms, wall) per successful outcome with a known worker, in outcome order. */
export function placementTtfts(
  trace: readonly TraceRequest[],
  outcomes: readonly RequestOutcome[],
  t: PlacementTiming,
): number[] {
  const model = { ...DEFAULT_TIMING, prefillUsPerToken: t.prefillUsPerToken, speedup: t.speedup };
  const t0 = trace.length ? trace[0]!.timestamp : 0;
  const sentAt = (o: RequestOutcome) =>
    ((trace[o.index]!.timestamp - t0) * t.arrivalScale) / t.speedup;
  const byWorker = Map.groupBy(
    outcomes.filter((o) => o.ok && o.worker !== undefined),
    (o) => o.worker!,
  );
  const out: number[] = [];
  for (const list of byWorker.values()) {
    list.sort((a, b) => sentAt(a) - sentAt(b) || a.index - b.index);
    let free = 0;
    for (const o of list) {
      const arrival = sentAt(o);
      const start = Math.max(arrival, free);
      free = start + prefillMs(o.promptTokens - o.cachedTokens, model);
      out.push(free - arrival);
    }
  }
  return out;
}
