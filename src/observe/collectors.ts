/**
 * Gauges (and the index's own event counters) read at scrape time from the parts that
 * hold the truth, so the hot paths never update them: index size, per-worker load, worker
 * health, KV events applied by type and status.
 */
import type { WorkerId } from "../core/ids.ts";
import type { KvIndex, LoadTracker } from "../router/index.ts";
import type { RouterMetrics } from "./names.ts";

export interface CollectorSources {
  readonly index: KvIndex;
  readonly tracker: LoadTracker;
  readonly workers: () => Iterable<{ readonly id: WorkerId; readonly healthy: boolean }>;
  readonly now: () => number;
}

export function bindCollectors(m: RouterMetrics, s: CollectorSources): void {
  m.indexBlocks.onCollect((g) => g.set([], s.index.size()));
  m.kvEventsApplied.onCollect((c) => {
    for (const [type, byStatus] of Object.entries(s.index.counters())) {
      // "ok" of every type from the start (0 before the first event): the dashboard graphs events by type.
      for (const [status, n] of Object.entries(byStatus))
        if (n > 0 || status === "ok") c.set([type, status], n);
    }
  });
  // Prefill tokens first: it reads the tracker once for both load gauges.
  m.activePrefillTokens.onCollect((g) => {
    g.reset();
    m.activeDecodeBlocks.reset();
    for (const l of s.tracker.loads(s.now())) {
      const labels = [String(l.worker.workerId), String(l.worker.dpRank)];
      g.set(labels, l.activePrefillTokens);
      m.activeDecodeBlocks.set(labels, l.activeDecodeBlocks);
    }
  });
  m.workerHealthy.onCollect((g) => {
    g.reset();
    for (const w of s.workers()) g.set([String(w.id)], w.healthy ? 1 : 0);
  });
}
