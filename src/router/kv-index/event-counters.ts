/**
 * Counts of applied events by type and status, the data behind the
 * `dynamo_kvrouter_kv_cache_events_applied{event_type,status}` metric (Dynamo's RouterEvent).
 */
import type { KvEventStatus, KvEventType } from "../../core/events.ts";
import type { EventCounters } from "./types.ts";

export const EVENT_TYPES: readonly KvEventType[] = ["stored", "removed", "cleared"];
export const EVENT_STATUSES: readonly KvEventStatus[] = [
  "ok",
  "parent_block_not_found",
  "block_not_found",
  "invalid_block",
];

export function emptyEventCounters(): EventCounters {
  const zero = (): Record<KvEventStatus, number> => ({
    ok: 0,
    parent_block_not_found: 0,
    block_not_found: 0,
    invalid_block: 0,
  });
  return { stored: zero(), removed: zero(), cleared: zero() };
}

export function copyEventCounters(c: EventCounters): EventCounters {
  return { stored: { ...c.stored }, removed: { ...c.removed }, cleared: { ...c.cleared } };
}
