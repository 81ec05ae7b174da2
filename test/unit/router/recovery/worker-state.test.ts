import { describe, expect, test } from "bun:test";
import { live } from "../../../../src/router/recovery/cursor.ts";
import { emptyRecoveryStats } from "../../../../src/router/recovery/types.ts";
import { WorkerState } from "../../../../src/router/recovery/worker-state.ts";
import { ids, makeClearEvent, makeStoreEvent } from "./support/events.ts";

function liveRank(ws: WorkerState, dpRank: number, at: bigint): void {
  ws.rank(dpRank).cursor = live(at);
}

describe("WorkerState live events", () => {
  test("first event of an unknown rank buffers it and spawns a full restore", () => {
    const ws = new WorkerState();
    expect(ws.observeLiveEvent(makeStoreEvent(5))).toEqual({
      kind: "spawn_full_restore",
      epoch: 0,
    });
    expect(ids(ws.rank(0).pendingLiveEvents)).toEqual([5]);
    expect(ws.rank(0).recoveryInflight).toBe(true);
  });

  test("contiguous events apply directly and move the cursor", () => {
    const ws = new WorkerState();
    liveRank(ws, 0, 4n);
    const a = ws.observeLiveEvent(makeStoreEvent(5));
    expect(a.kind).toBe("apply");
    expect(ws.rankCursor(0)).toEqual(live(5n));
  });

  test("a gap buffers the event and spawns an incremental recovery from the first missing id", () => {
    const ws = new WorkerState();
    liveRank(ws, 0, 4n);
    expect(ws.observeLiveEvent(makeStoreEvent(8))).toEqual({
      kind: "spawn_incremental",
      epoch: 0,
      startEventId: 5n,
    });
    expect(ws.rank(0).maxSeenLiveId).toBe(8n);
  });

  test("while a recovery is in flight, non-stale events are buffered and nothing else is spawned", () => {
    const ws = new WorkerState();
    liveRank(ws, 0, 4n);
    ws.observeLiveEvent(makeStoreEvent(8));
    expect(ws.observeLiveEvent(makeStoreEvent(5))).toEqual({ kind: "ignore", reason: "buffered" });
    expect(ws.observeLiveEvent(makeStoreEvent(9))).toEqual({ kind: "ignore", reason: "buffered" });
    expect(ws.observeLiveEvent(makeStoreEvent(3))).toEqual({ kind: "ignore", reason: "stale" });
    expect(ids(ws.rank(0).pendingLiveEvents)).toEqual([8, 5, 9]);
    expect(ws.rankCursor(0)).toEqual(live(4n));
  });

  test("late duplicates within the margin are ignored as stale", () => {
    const stats = emptyRecoveryStats();
    const ws = new WorkerState({ stats, restartIdMargin: 10n });
    liveRank(ws, 0, 30n);
    for (const id of [30, 25, 20])
      expect(ws.observeLiveEvent(makeStoreEvent(id))).toEqual({ kind: "ignore", reason: "stale" });
    expect(ws.rankCursor(0)).toEqual(live(30n));
  });

  test("an id far below the cursor is an engine restart: new epoch, fresh rank, full restore", () => {
    const ws = new WorkerState({ restartIdMargin: 10n });
    liveRank(ws, 0, 30n);
    liveRank(ws, 1, 7n);
    const before = ws.rank(0);
    const a = ws.observeLiveEvent(makeStoreEvent(2));
    expect(a).toEqual({ kind: "spawn_restart", epoch: 1 });
    const after = ws.rank(0);
    expect(after).not.toBe(before);
    expect(after.cursor.kind).toBe("initial");
    expect(after.recoveryInflight).toBe(true);
    expect(ids(after.pendingLiveEvents)).toEqual([2]);
    // Other ranks are untouched.
    expect(ws.rankCursor(1)).toEqual(live(7n));
  });

  test("id 0 after later ids is a restart even inside the margin, and is detected during a recovery", () => {
    const ws = new WorkerState({ restartIdMargin: 10n });
    liveRank(ws, 0, 4n);
    ws.observeLiveEvent(makeStoreEvent(7)); // gap -> recovery in flight
    const a = ws.observeLiveEvent(makeStoreEvent(0));
    expect(a.kind).toBe("spawn_restart");
    expect(ids(ws.rank(0).pendingLiveEvents)).toEqual([0]);
  });
});

describe("WorkerState Cleared barrier", () => {
  test("the clearing rank is live at the clear id, its recovery and buffer are dropped; other ranks are untouched", () => {
    const stats = emptyRecoveryStats();
    const ws = new WorkerState({ stats });
    liveRank(ws, 0, 4n);
    liveRank(ws, 1, 9n);
    ws.observeLiveEvent(makeStoreEvent(7)); // rank 0 recovering, buffer [7]
    const a = ws.observeLiveEvent(makeClearEvent(8));
    expect(a.kind).toBe("apply_clear");
    if (a.kind !== "apply_clear") return;
    expect(a.event.event.dpRank).toBe(0);
    expect(a.followUp).toBeUndefined();
    expect(ws.rankCursor(0)).toEqual(live(8n));
    expect(ws.rank(0).recoveryInflight).toBe(false);
    expect(ws.rank(0).pendingLiveEvents).toHaveLength(0);
    expect(stats.dropped).toBe(1);
    expect(ws.rankCursor(1)).toEqual(live(9n));
    // The epoch moved: the old recovery of rank 0 is orphaned.
    expect(ws.isCurrent(0, ws.rank(0), 0)).toBe(false);
  });

  test("ids seen past the clear and dropped with the buffer are fetched again by a follow-up", () => {
    const ws = new WorkerState();
    liveRank(ws, 0, 4n);
    ws.observeLiveEvent(makeStoreEvent(7));
    ws.observeLiveEvent(makeStoreEvent(12));
    const a = ws.observeLiveEvent(makeClearEvent(10));
    expect(a.kind === "apply_clear" && a.followUp).toEqual({ epoch: ws.epoch, startEventId: 11n });
    expect(ws.rank(0).recoveryInflight).toBe(true);
    expect(ws.rank(0).maxSeenLiveId).toBe(12n);
  });

  test("a stale Cleared is ignored; a Cleared from a restarted engine is applied", () => {
    const ws = new WorkerState({ restartIdMargin: 10n });
    liveRank(ws, 0, 40n);
    expect(ws.observeLiveEvent(makeClearEvent(35))).toEqual({ kind: "ignore", reason: "stale" });
    const a = ws.observeLiveEvent(makeClearEvent(3));
    expect(a.kind === "apply_clear" && a.afterRestart).toBe(true);
    expect(ws.rankCursor(0)).toEqual(live(3n));
  });

  test("a Cleared met inside a replay keeps the recovering rank's epoch and buffer", () => {
    const ws = new WorkerState();
    liveRank(ws, 0, 4n);
    ws.observeLiveEvent(makeStoreEvent(9));
    const rank = ws.rank(0);
    const epoch = rank.epoch;
    ws.applyReplayedClear(0, 6n);
    expect(ws.isCurrent(0, rank, epoch)).toBe(true);
    expect(ids(rank.pendingLiveEvents)).toEqual([9]);
    expect(rank.cursor).toEqual(live(6n));
  });
});

describe("WorkerState discovery and failures", () => {
  test("a discovered rank with nothing applied gets one full restore", () => {
    const ws = new WorkerState();
    expect(ws.handleDiscoveredRank(0, false)).toEqual({ resetRank: false, restoreEpoch: 0 });
    expect(ws.handleDiscoveredRank(0, false)).toEqual({
      resetRank: false,
      restoreEpoch: undefined,
    });
  });

  test("a reset starts the rank over in a new epoch and restores it", () => {
    const ws = new WorkerState();
    liveRank(ws, 0, 50n);
    expect(ws.handleDiscoveredRank(0, true)).toEqual({ resetRank: true, restoreEpoch: 1 });
    expect(ws.rankCursor(0)?.kind).toBe("initial");
  });

  test("a failed recovery keeps the cursor, drops the buffer and lets the next event decide again", () => {
    const ws = new WorkerState();
    liveRank(ws, 0, 4n);
    ws.observeLiveEvent(makeStoreEvent(8));
    ws.finishFailedRecovery(0);
    expect(ws.rank(0).recoveryInflight).toBe(false);
    expect(ws.rank(0).pendingLiveEvents).toHaveLength(0);
    expect(ws.observeLiveEvent(makeStoreEvent(9)).kind).toBe("spawn_incremental");
  });

  test("removing ranks empties the worker", () => {
    const ws = new WorkerState();
    ws.rank(0);
    ws.rank(1);
    expect(ws.removeRank(0)).toBe(true);
    expect(ws.removeRank(0)).toBe(false);
    expect(ws.isEmpty()).toBe(false);
    ws.removeRank(1);
    expect(ws.isEmpty()).toBe(true);
  });
});

describe("WorkerState and tiers", () => {
  test("a Cleared of one tier is an ordinary event: in id order, no barrier, a gap before it still recovered", () => {
    const ws = new WorkerState();
    liveRank(ws, 0, 4n);
    const tierClear = {
      ...makeClearEvent(5),
      event: { ...makeClearEvent(5).event, medium: "cpu" as const },
    };
    expect(ws.observeLiveEvent(tierClear)).toEqual({ kind: "apply", event: tierClear });
    expect(ws.rankCursor(0)).toEqual(live(5n));
    const later = {
      ...makeClearEvent(9),
      event: { ...makeClearEvent(9).event, medium: "disk" as const },
    };
    expect(ws.observeLiveEvent(later)).toEqual({
      kind: "spawn_incremental",
      epoch: 0,
      startEventId: 6n,
    });
    // The whole rank's Cleared is still the barrier it was.
    const ws2 = new WorkerState();
    liveRank(ws2, 0, 4n);
    expect(ws2.observeLiveEvent(makeClearEvent(9)).kind).toBe("apply_clear");
  });
});
