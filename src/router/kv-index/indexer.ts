/**
 * The one way to build an index: createIndexer("precise" | "approximate" | "none", opts).
 * precise = RadixTree fed by engine events; approximate = ApproxIndex fed by the router's own
 * decisions with TTL/size pruning; none = overlap weight 0 (Dynamo's Indexer::None).
 */
import type { KvEventStatus, RouterEvent } from "../../core/events.ts";
import type { OverlapScores } from "../../core/overlap.ts";
import { emptyOverlapScores } from "../../core/overlap.ts";
import { ApproxIndex } from "./approx.ts";
import { emptyEventCounters } from "./event-counters.ts";
import type { PruneConfig } from "./prune-manager.ts";
import { RadixTree } from "./radix-tree.ts";
import type { EventCounters, KvIndex } from "./types.ts";

export type IndexerMode = "precise" | "approximate" | "none";

export interface IndexerOptions {
  /** Approximate mode only (defaults: 120 000 ms, 2^20, 0.8). */
  readonly prune?: Partial<PruneConfig>;
}

export function createIndexer(mode: IndexerMode, opts: IndexerOptions = {}): KvIndex {
  switch (mode) {
    case "precise":
      return new RadixTree();
    case "approximate":
      return new ApproxIndex(opts.prune);
    case "none":
      return new NoIndex();
  }
}

/** Overlap weight 0: nothing is indexed, every request matches nothing. */
export class NoIndex implements KvIndex {
  applyEvent(): KvEventStatus {
    return "ok";
  }
  findMatches(): OverlapScores {
    return emptyOverlapScores();
  }
  removeWorker(): void {}
  removeWorkerDpRank(): void {}
  dump(): RouterEvent[] {
    return [];
  }
  size(): number {
    return 0;
  }
  workerSize(): number {
    return 0;
  }
  recordDecision(): void {}
  expire(): void {}
  counters(): EventCounters {
    return emptyEventCounters();
  }
  nodeCount(): number {
    return 0;
  }
}
