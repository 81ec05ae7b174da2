import { describe, expect, test } from "bun:test";
import { keyOf, worker } from "../../../src/core/ids.ts";
import { LoadTracker } from "../../../src/router/books/load-tracker.ts";
import type {
  ActiveSequenceEvent,
  ActiveSequenceEventData,
} from "../../../src/router/books/sequence-events.ts";
import { PeerTable } from "../../../src/sync/peers.ts";
import type { SyncMessage } from "../../../src/sync/wire.ts";

const W = worker(3n);
const KEY = keyOf(W);
const A = 11n;

function setup(deadAfterMs = 300) {
  const tracker = new LoadTracker({ blockSize: 16, routerId: 1n });
  tracker.updateWorkers([W]);
  return { tracker, peers: new PeerTable(tracker, { deadAfterMs, resyncRetryMs: 50 }) };
}

function ev(requestId: string, data: ActiveSequenceEventData, routerId = A): ActiveSequenceEvent {
  return { requestId, worker: W, data, routerId, loraName: null };
}
const add = (id: string, blocks = 2) =>
  ev(id, {
    type: "add_request",
    tokenSequence: BigUint64Array.from(
      { length: blocks },
      (_, i) => BigInt(id.charCodeAt(0)) * 1000n + BigInt(i),
    ),
    isl: blocks * 16,
    overlap: 0,
    expectedOutputTokens: null,
  });
const free = (id: string) => ev(id, { type: "free" });
const prefilled = (id: string) => ev(id, { type: "mark_prefill_completed" });

function events(
  seq: number,
  evs: ActiveSequenceEvent[],
  epoch = "e1",
): Exclude<SyncMessage, { kind: "resync" }> {
  return { kind: "events", routerId: A, epoch, seq, events: evs };
}
function snapshot(
  seq: number,
  part: number,
  last: boolean,
  evs: ActiveSequenceEvent[],
  epoch = "e1",
): Exclude<SyncMessage, { kind: "resync" }> {
  return { kind: "snapshot", routerId: A, epoch, seq, part, last, events: evs };
}
function heartbeat(seq: number, epoch = "e1"): Exclude<SyncMessage, { kind: "resync" }> {
  return { kind: "heartbeat", routerId: A, epoch, seq };
}

describe("PeerTable", () => {
  test("an origin seen from its first message is complete; events apply and are remembered", () => {
    const { tracker, peers } = setup();
    peers.receive(events(1, [add("x"), add("y")]), 0);
    peers.receive(events(2, [prefilled("x"), free("y")]), 0);
    expect(peers.isComplete(A)).toBe(true);
    expect(peers.resyncDue(0)).toEqual([]);
    expect([...peers.requestsOf(A)!]).toEqual(["x"]);
    expect(tracker.activeBlocks(KEY)).toBe(2);
    expect(tracker.activeTokens(KEY, 0)).toBe(0);
  });

  test("first sight mid-history, a seq gap, or a heartbeat ahead of us asks for a snapshot (once per retry period)", () => {
    const { peers } = setup();
    peers.receive(events(5, [add("x")]), 0);
    expect(peers.isComplete(A)).toBe(false);
    expect(peers.resyncDue(0)).toEqual([A]);
    expect(peers.resyncDue(10)).toEqual([]); // asked 10 ms ago
    expect(peers.resyncDue(50)).toEqual([A]);

    const b = setup();
    b.peers.receive(heartbeat(0), 0);
    expect(b.peers.isComplete(A)).toBe(true);
    b.peers.receive(events(1, [add("x")]), 0);
    b.peers.receive(events(3, [add("z")]), 0); // seq 2 lost
    expect(b.peers.counters.gaps).toBe(1);
    expect(b.peers.resyncDue(0)).toEqual([A]);

    const c = setup();
    c.peers.receive(events(1, []), 0);
    c.peers.receive(heartbeat(1), 0);
    expect(c.peers.isComplete(A)).toBe(true);
    c.peers.receive(heartbeat(2), 0); // the last message was lost and nothing followed it
    expect(c.peers.isComplete(A)).toBe(false);
  });

  test("a snapshot (over several parts) makes the origin's requests exactly its content", () => {
    const { tracker, peers } = setup();
    peers.receive(events(4, [add("stale", 3), add("kept", 1)]), 0);
    peers.receive(snapshot(5, 0, false, [add("kept", 1), add("new", 2)]), 0);
    expect(tracker.hasRemoteRequest(A, "stale")).toBe(true); // nothing changes before the last part
    peers.receive(snapshot(6, 1, true, [prefilled("new")]), 0);
    expect(peers.isComplete(A)).toBe(true);
    expect(peers.counters.snapshotsApplied).toBe(1);
    expect(new Set(peers.requestsOf(A))).toEqual(new Set(["kept", "new"]));
    expect(tracker.hasRemoteRequest(A, "stale")).toBe(false);
    expect(tracker.activeBlocks(KEY)).toBe(3);
    expect(tracker.activeTokens(KEY, 0)).toBe(16); // "kept" still prefilling, "new" done
    // The stream carries on after the snapshot.
    peers.receive(events(7, [free("kept")]), 0);
    expect(peers.counters.gaps).toBe(0);
    expect(tracker.hasRemoteRequest(A, "kept")).toBe(false);
  });

  test("a snapshot with a missing part is discarded and asked for again", () => {
    const { tracker, peers } = setup();
    peers.receive(events(1, [add("old")]), 0);
    peers.receive(snapshot(2, 0, false, []), 0);
    peers.receive(snapshot(4, 2, true, []), 0); // part 1 (seq 3) lost
    expect(peers.counters.snapshotsApplied).toBe(0);
    expect(tracker.hasRemoteRequest(A, "old")).toBe(true);
    expect(peers.resyncDue(0)).toEqual([A]);
  });

  test("an origin silent for longer than deadAfterMs has all its requests freed and is forgotten", () => {
    const { tracker, peers } = setup(300);
    peers.receive(events(1, [add("a"), add("b")]), 1_000);
    peers.receive(heartbeat(1), 1_200);
    expect(peers.expireSilent(1_500)).toEqual([]); // 300 ms: not yet
    expect(peers.expireSilent(1_501)).toEqual([A]);
    expect(tracker.activeRequests(KEY)).toBe(0);
    expect(peers.counters).toMatchObject({ expiredPeers: 1, expiredRequests: 2 });
    expect(peers.size).toBe(0);
  });

  test("a new epoch under the same id frees the old process's requests", () => {
    const { tracker, peers } = setup();
    peers.receive(events(1, [add("from-old")]), 0);
    peers.receive(events(1, [add("from-new")], "e2"), 0);
    expect(tracker.hasRemoteRequest(A, "from-old")).toBe(false);
    expect(tracker.hasRemoteRequest(A, "from-new")).toBe(true);
    expect(peers.counters.restartedPeers).toBe(1);
    expect(peers.isComplete(A)).toBe(true);
  });

  test("adds for untracked workers are not remembered; prune forgets ids the tracker dropped", () => {
    const { tracker, peers } = setup();
    peers.receive(events(1, [{ ...add("elsewhere"), worker: worker(99n) }, add("here")]), 0);
    expect([...peers.requestsOf(A)!]).toEqual(["here"]);
    tracker.removeWorker(W.workerId);
    expect(peers.prune()).toBe(1);
    expect(peers.remoteRequests).toBe(0);
  });

  test("clear frees every origin's requests", () => {
    const { tracker, peers } = setup();
    peers.receive(events(1, [add("q")]), 0);
    peers.clear(0);
    expect(tracker.activeRequests(KEY)).toBe(0);
    expect(peers.size).toBe(0);
  });
});
