/**
 * The KV recovery query (Dynamo's `WorkerKvQueryRequest/Response`): what an engine answers to
 * "give me the events of (worker, dp_rank) in [start, end]", so a router that missed events
 * catches up without a restart. Shared by engines (src/mocker answers it) and the router
 * (src/router/recovery consumes it); the JSON form is kv-query-wire.ts. Types only.
 */
import type { RouterEvent } from "../core/events.ts";
import type { EventId } from "../core/ids.ts";

/**
 * A worker's answer to "give me events [start, end]", Dynamo's newer form with
 * `last_event_id`. `lastEventId` is null only when the worker has emitted no event yet (an
 * empty tree dump) or an older worker did not send it.
 */
export type WorkerKvQueryResponse =
  /** The buffered events with their original ids, in id order. */
  | {
      readonly kind: "events";
      readonly events: readonly RouterEvent[];
      readonly lastEventId: EventId | null;
    }
  /** The worker's whole current state as Stored events (synthetic ids), as of `lastEventId`. */
  | {
      readonly kind: "tree_dump";
      readonly events: readonly RouterEvent[];
      readonly lastEventId: EventId | null;
    }
  /** `start` is past the newest event the worker has. */
  | {
      readonly kind: "too_new";
      readonly requestedStart: EventId;
      readonly requestedEnd: EventId;
      readonly newestAvailable: EventId;
    }
  /** `end < start`. */
  | { readonly kind: "invalid_range"; readonly startId: EventId; readonly endId: EventId }
  | { readonly kind: "error"; readonly message: string };
