/**
 * What the router needs from the pieces around it, as narrow interfaces, so it imports
 * no adapter (src/fleet, src/observe) and runs on any runtime. The Bun composition root
 * passes the real ones (WorkerRegistry, RouterMetrics satisfy these structurally); tests pass
 * small fakes or the same real ones.
 */
import type { DpRank, WorkerId, WorkerWithDpRank } from "../core/ids.ts";

/** Which (worker, dp rank)s may take requests now (fleet/registry.ts WorkerRegistry). */
export interface RoutableWorkers {
  isRoutable(id: WorkerId, dpRank: DpRank): boolean;
  /** The healthy targets; the same array until membership or health changes (cached by identity). */
  healthyTargets(): readonly WorkerWithDpRank[];
}

/** A histogram series: one observation (seconds, or blocks). */
export interface Observer {
  observe(value: number): void;
}

/** Where a decision's timings and overlap go (observe/names.ts RouterMetrics). */
export interface RoutingObserver {
  readonly phases: Readonly<Record<"hash" | "match" | "schedule" | "total", Observer>>;
  readonly overlap: Observer;
  /** |predicted ÷ observed TTFT − 1| of each request whose first token the router saw (optional: fakes may leave it out). */
  readonly ttftPredictionError?: Observer;
  /**
   * One burst claim's outcome (books/burst-claims.ts): clear (no unseen claims), counted (some,
   * same choice), moved (the choice moved), failed (the store did not answer; decided without).
   */
  readonly burstClaim?: (outcome: BurstClaimOutcome) => void;
}

export type BurstClaimOutcome = "clear" | "counted" | "moved" | "failed";

/** A one-shot timer (the runtime's setTimeout / clearTimeout), so that pure code owns none. */
export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}
