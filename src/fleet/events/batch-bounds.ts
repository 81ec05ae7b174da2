/**
 * What one POST /v1/kv/events batch may ask of the router. Admin-only, yet worth bounding:
 * applying an event costs the event loop in proportion to its blocks (one event of 1 M blocks
 * stalled it 1.83 s and took RSS to 704 MB), and an engine-source event id past 2^53 (no
 * dense counter gets there) kept a rank in recovery for two minutes, asking the engine for a
 * range it never had. Checked after parsing, before anything is applied: a bad batch is
 * refused whole, naming the event and the bound.
 */
import { RouterError } from "../../core/errors.ts";
import type { RouterEvent } from "../../core/events.ts";
import type { EventSource } from "../../router/index.ts";

/** Blocks one event may carry: 65,536 is a 1 M-token prompt at block size 16, far past one engine step. */
export const MAX_EVENT_BLOCKS = 65_536;
/** Blocks a whole batch may carry (it is applied in slices that yield, see sliced-ingest.ts). */
export const MAX_BATCH_BLOCKS = 262_144;
/** The largest id of an engine's own stream: ids are dense from 0, so anything past this is not one. */
export const MAX_ENGINE_EVENT_ID = BigInt(Number.MAX_SAFE_INTEGER);

/** Blocks an event touches (a Cleared counts one). */
export function blocksOf(e: RouterEvent): number {
  const d = e.event.data;
  return d.type === "stored" ? d.blocks.length : d.type === "removed" ? d.blockHashes.length : 1;
}

/** Throws RouterError naming the first event past a bound. */
export function checkBatchBounds(events: readonly RouterEvent[], source: EventSource): void {
  let total = 0;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const n = blocksOf(e);
    if (n > MAX_EVENT_BLOCKS) {
      throw new RouterError(
        "payload_too_large",
        `events[${i}]: ${n} blocks in one event; at most ${MAX_EVENT_BLOCKS}`,
        `events[${i}]`,
      );
    }
    total += n;
    if (total > MAX_BATCH_BLOCKS) {
      throw new RouterError(
        "payload_too_large",
        `the batch carries more than ${MAX_BATCH_BLOCKS} blocks (at events[${i}]); send it in smaller batches`,
      );
    }
    if (source === "engine" && e.event.eventId > MAX_ENGINE_EVENT_ID) {
      throw new RouterError(
        "invalid_request",
        `events[${i}].event.event_id: ${e.event.eventId} is past 2^53 - 1; an engine's ids are dense from 0`,
        `events[${i}].event.event_id`,
      );
    }
  }
}
