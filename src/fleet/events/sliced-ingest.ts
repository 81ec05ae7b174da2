/**
 * Applies event batches in arrival order, a slice of blocks at a time, letting the event
 * loop serve other work between slices: in one piece, a batch of 300,000 events holds the
 * loop about 1.5 s. Batches never interleave (the next waits for the previous to finish), so
 * the index sees events in the order they were posted. The yield is injected.
 */
import type { RouterEvent } from "../../core/events.ts";
import { blocksOf } from "./batch-bounds.ts";
import type { IngestResult } from "../../router/index.ts";

export interface SlicedIngestOptions {
  /** Blocks applied between two yields (default 16,384: ~30 ms of index work). */
  readonly sliceBlocks?: number;
  /** Let other work run (default: a macrotask, setTimeout 0). */
  readonly yieldNow?: () => Promise<void>;
}

export class SlicedIngest {
  #tail: Promise<unknown> = Promise.resolve();
  readonly #sliceBlocks: number;
  readonly #yield: () => Promise<void>;

  constructor(o: SlicedIngestOptions = {}) {
    this.#sliceBlocks = o.sliceBlocks ?? 16_384;
    this.#yield = o.yieldNow ?? (() => new Promise((resolve) => setTimeout(resolve, 0)));
  }

  /** Apply `events` through `apply`, slice by slice, after every batch queued before it. */
  ingest(
    events: readonly RouterEvent[],
    apply: (slice: readonly RouterEvent[]) => IngestResult,
  ): Promise<IngestResult> {
    const run = this.#tail.then(() => this.#run(events, apply));
    this.#tail = run.catch(() => {});
    return run;
  }

  async #run(
    events: readonly RouterEvent[],
    apply: (slice: readonly RouterEvent[]) => IngestResult,
  ): Promise<IngestResult> {
    let accepted = 0;
    let dropped = 0;
    let from = 0;
    while (from < events.length) {
      let to = from;
      let blocks = 0;
      while (
        to < events.length &&
        (to === from || blocks + blocksOf(events[to]!) <= this.#sliceBlocks)
      )
        blocks += blocksOf(events[to++]!);
      const r = apply(from === 0 && to === events.length ? events : events.slice(from, to));
      accepted += r.accepted;
      dropped += r.dropped;
      from = to;
      if (from < events.length) await this.#yield();
    }
    return { accepted, dropped };
  }
}
