import { describe, expect, test } from "bun:test";
import { live } from "../../../../src/router/recovery/cursor.ts";
import {
  RECOVERY_PENDING_LIVE_EVENT_LIMIT,
  RankState,
} from "../../../../src/router/recovery/rank-state.ts";
import { ids, makeStoreEvent } from "./support/events.ts";

function rankWith(cursorAt: bigint, pending: number[]): RankState {
  const r = new RankState();
  r.cursor = live(cursorAt);
  r.recoveryInflight = true;
  for (const id of pending) r.pushPendingLiveEvent(makeStoreEvent(id));
  return r;
}

describe("RankState drain (ported from seed 002)", () => {
  test("test_pending_fast_prune_keeps_margin_before_normal_drain", () => {
    const r = rankWith(
      35n,
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
    const a = r.nextPendingDrainAction();
    expect(a.kind).toBe("apply");
    if (a.kind === "apply") expect(a.event.event.eventId).toBe(36n);
    expect(ids(r.pendingLiveEvents)).toEqual([37, 38, 39, 40]);
  });

  test("test_pending_stale_gappy_queue_after_recovery_completes_without_follow_up", () => {
    const r = rankWith(20n, [13, 14, 18, 19]);
    expect(r.nextPendingDrainAction().kind).toBe("complete");
    expect(r.pendingLiveEvents).toHaveLength(0);
    expect(r.recoveryInflight).toBe(false);
  });
});

describe("RankState drain", () => {
  test("fast prune looks only at the boundary event, then keeps the last margin for one-by-one checks", () => {
    // Boundary (index len-10) is 5 > 3: nothing pruned, the drain applies 4 first.
    const r = rankWith(3n, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    const a = r.nextPendingDrainAction();
    expect(a.kind === "apply" && a.event.event.eventId).toBe(4n);
    expect(r.pendingLiveEvents).toHaveLength(9);
  });

  test("a hole in the buffer asks for a recovery from the first missing id, keeping the buffer", () => {
    const r = rankWith(10n, [11, 14, 15]);
    expect(r.nextPendingDrainAction().kind).toBe("apply");
    expect(r.nextPendingDrainAction()).toEqual({ kind: "recover_from", startEventId: 12n });
    expect(ids(r.pendingLiveEvents)).toEqual([14, 15]);
    expect(r.recoveryInflight).toBe(true);
  });

  test("out-of-order buffered events apply once the recovery covered the ones before them", () => {
    const r = rankWith(12n, [14, 13, 11]);
    // 14 first in the queue is not contiguous with 12 -> refetch from 13.
    expect(r.nextPendingDrainAction()).toEqual({ kind: "recover_from", startEventId: 13n });
    r.cursor = live(14n);
    expect(r.nextPendingDrainAction().kind).toBe("complete");
  });

  test("ids seen but no longer buffered make the drain refetch instead of completing", () => {
    const r = rankWith(10n, []);
    r.observeLiveId(12n);
    expect(r.nextPendingDrainAction()).toEqual({ kind: "recover_from", startEventId: 11n });
    r.cursor = live(12n);
    expect(r.nextPendingDrainAction().kind).toBe("complete");
    expect(r.maxSeenLiveId).toBeUndefined();
  });

  test("a restore before the first event (cursor at -1) applies event 0", () => {
    const r = rankWith(-1n, [0, 1]);
    const a = r.nextPendingDrainAction();
    expect(a.kind === "apply" && a.event.event.eventId).toBe(0n);
  });

  test("the buffer keeps the newest events up to its limit and reports how many it dropped", () => {
    const r = new RankState(0, 4);
    let dropped = 0;
    for (let id = 1; id <= 6; id++) dropped += r.observeAndBufferLiveEvent(makeStoreEvent(id));
    expect(dropped).toBe(2);
    expect(ids(r.pendingLiveEvents)).toEqual([3, 4, 5, 6]);
    expect(r.maxSeenLiveId).toBe(6n);
    expect(RECOVERY_PENDING_LIVE_EVENT_LIMIT).toBe(1024);
  });
});
