import { describe, expect, test } from "bun:test";
import { live } from "../../../../src/router/recovery/cursor.ts";
import { ids, makeClearEvent, makeStoreEvent } from "./support/events.ts";
import { Harness, flush } from "./support/harness.ts";

const W = 7n;

describe("RecoveryDriver: first sight and live events", () => {
  test("addRank restores the rank from a dump and then applies live events directly", async () => {
    const h = new Harness();
    const e = h.engine(W);
    e.store(null, [1n, 2n]);
    e.store(2n, [3n]);
    h.driver.addRank(W, 0);
    await h.settle();
    expect(h.calls).toEqual([{ workerId: W, dpRank: 0, start: undefined, end: undefined }]);
    expect(h.index.of(W, 0)).toEqual([1n, 2n, 3n]);
    expect(h.driver.cursor(W, 0)).toEqual(live(1n));
    h.deliver(e.store(3n, [4n]), e.remove([4n]));
    expect(h.index.of(W, 0)).toEqual([1n, 2n, 3n]);
    expect(h.driver.stats()).toMatchObject({ restores: 1, dumped: 3, applied: 2, recoveries: 1 });
  });

  test("the first live event of an unknown rank triggers a full restore, then the buffer drains", async () => {
    const h = new Harness();
    h.hold = true;
    const e = h.engine(W);
    const a = e.store(null, [1n]);
    const b = e.store(1n, [2n]);
    h.deliver(b);
    const c = e.store(2n, [3n]);
    h.deliver(c, a);
    await flush();
    expect(h.heldCount).toBe(1);
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([1n, 2n, 3n]);
    expect(h.driver.cursor(W, 0)).toEqual(live(2n));
    expect(h.driver.isRecovering(W, 0)).toBe(false);
    expect(h.driver.stats().buffered).toBe(3);
  });

  test("late duplicates are counted as stale and change nothing", async () => {
    const h = new Harness();
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    await h.settle();
    h.deliver(e.store(null, [5n]));
    const a = e.store(null, [1n]);
    const b = e.remove([1n]);
    h.deliver(a, b, a, b);
    expect(h.index.of(W, 0)).toEqual([5n]);
    expect(h.driver.stats()).toMatchObject({ stale: 2, restarts: 0 });
  });

  test("a late duplicate of event 0 reads as a restart: a safe false positive that costs one restore", async () => {
    const h = new Harness();
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    await h.settle();
    const first = e.store(null, [1n]);
    h.deliver(first, e.store(1n, [2n]), first);
    await h.settle();
    expect(h.driver.stats()).toMatchObject({ restarts: 1, restores: 2 });
    expect(h.index.of(W, 0)).toEqual([1n, 2n]);
  });
});

describe("RecoveryDriver: gaps", () => {
  test("a gap is replayed from the worker's buffer, then buffered live events apply in id order", async () => {
    const h = new Harness();
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    await h.settle();
    h.hold = true;
    const evs = [e.store(null, [1n]), e.store(1n, [2n]), e.store(2n, [3n]), e.store(3n, [4n])];
    h.deliver(evs[0]!, evs[2]!); // 1 is missing
    await flush();
    expect(h.calls.at(-1)).toMatchObject({ start: 1n });
    h.deliver(evs[3]!, evs[2]!);
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([1n, 2n, 3n, 4n]);
    expect(h.driver.cursor(W, 0)).toEqual(live(3n));
    expect(h.driver.stats()).toMatchObject({ gaps: 1, replayed: 3 });
  });

  test("a replayed Stored never brings back a block that a later live Removed took away", async () => {
    const h = new Harness();
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    await h.settle();
    const s0 = e.store(null, [10n]); // id 0
    h.deliver(s0);
    // The worker answers the replay with what it had when asked: up to the Stored of 11.
    const s1 = e.store(10n, [11n]); // id 1, lost in transit
    const s2 = e.store(10n, [12n]); // id 2
    const snapshot = e.query(1n);
    h.answer = () => snapshot;
    h.hold = true;
    h.deliver(s2); // gap: replay from 1 requested
    const r3 = e.remove([11n]); // id 3 arrives while the replay is in flight
    h.deliver(r3);
    await h.settle();
    expect(s1.event.eventId).toBe(1n);
    expect(h.index.of(W, 0)).toEqual([10n, 12n]);
    const log = h.index.log.filter((l) => !l.startsWith("removeRank"));
    expect(log).toEqual(["stored:7:0:0", "stored:7:0:1", "stored:7:0:2", "removed:7:0:3"]);
  });

  test("a dump taken before a live Removed is applied first, the Removed after it", async () => {
    const h = new Harness();
    const e = h.engine(W);
    e.store(null, [1n, 2n]); // id 0
    const dumpBefore = e.query();
    h.answer = () => dumpBefore;
    h.hold = true;
    h.driver.addRank(W, 0);
    h.deliver(e.remove([2n])); // id 1, during the restore
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([1n]);
    expect(h.driver.cursor(W, 0)).toEqual(live(1n));
  });

  test("a replay start the worker no longer buffers falls back to a dump that replaces the rank", async () => {
    const h = new Harness();
    const e = h.engine(W, 0, 4);
    h.driver.addRank(W, 0);
    await h.settle();
    h.deliver(e.store(null, [1n]));
    for (let i = 2n; i < 10n; i++) e.store(i - 1n, [i]); // all lost
    h.deliver(e.store(9n, [10n]));
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n]);
    expect(h.driver.stats()).toMatchObject({ restores: 2, gaps: 1 });
  });

  test("a hole left in the buffer after a replay is fetched by a follow-up query", async () => {
    const h = new Harness();
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    await h.settle();
    const evs = Array.from({ length: 6 }, (_, i) =>
      e.store(i === 0 ? null : BigInt(i), [BigInt(i + 1)]),
    );
    // The worker's first answer stops at 2 (as if asked with an end).
    let first = true;
    h.answer = (c) => {
      if (first) {
        first = false;
        return e.query(c.start, 2n);
      }
      return e.query(c.start, c.end);
    };
    h.deliver(evs[0]!, evs[3]!, evs[5]!);
    await h.settle();
    expect(h.calls.map((c) => c.start)).toEqual([undefined, 1n, 4n]);
    expect(h.index.of(W, 0)).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
    expect(h.driver.cursor(W, 0)).toEqual(live(5n));
  });
});

describe("RecoveryDriver: retries and failures", () => {
  test("errors, rejections and too_new are retried with doubling backoff", async () => {
    const h = new Harness();
    const e = h.engine(W);
    e.store(null, [1n]);
    const script = [
      () => ({ kind: "error" as const, message: "busy" }),
      () => Promise.reject(new Error("connection reset")),
      () => ({
        kind: "too_new" as const,
        requestedStart: 0n,
        requestedEnd: 0n,
        newestAvailable: 0n,
      }),
    ];
    h.answer = (c) => (script.shift() ?? (() => e.query(c.start, c.end)))();
    h.driver.addRank(W, 0);
    await h.settle();
    expect(h.sleeps).toEqual([200, 400, 800]);
    expect(h.index.of(W, 0)).toEqual([1n]);
    expect(h.driver.stats()).toMatchObject({ retries: 3, failed: 0, restores: 1 });
    expect(h.warnings.join("\n")).toContain("connection reset");
  });

  test("after the last retry the recovery gives up; the next live event starts a new one", async () => {
    const h = new Harness({ maxRetries: 2 });
    const e = h.engine(W);
    h.answer = () => ({ kind: "error", message: "down" });
    h.driver.addRank(W, 0);
    h.deliver(e.store(null, [1n]));
    await h.settle();
    expect(h.calls).toHaveLength(3);
    expect(h.driver.stats()).toMatchObject({ failed: 1, dropped: 1 });
    expect(h.driver.isRecovering(W, 0)).toBe(false);
    h.answer = undefined;
    h.deliver(e.store(1n, [2n]));
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([1n, 2n]);
  });

  test("invalid_range is not retried", async () => {
    const h = new Harness();
    h.answer = () => ({ kind: "invalid_range", startId: 2n, endId: 1n });
    h.driver.addRank(W, 0);
    await h.settle();
    expect(h.calls).toHaveLength(1);
    expect(h.driver.stats().failed).toBe(1);
  });

  test("no more than maxConcurrentQueries queries are outstanding", async () => {
    const h = new Harness({ maxConcurrentQueries: 2 });
    h.hold = true;
    for (let r = 0; r < 5; r++) {
      h.engine(W, r);
      h.driver.addRank(W, r);
    }
    await flush();
    expect(h.heldCount).toBe(2);
    expect(h.driver.recovering).toBe(5);
    await h.settle();
    expect(h.calls).toHaveLength(5);
    expect(h.driver.recovering).toBe(0);
  });

  test("idle() resolves at once when nothing is in flight", async () => {
    const h = new Harness();
    let done = false;
    await h.driver.idle().then(() => (done = true));
    expect(done).toBe(true);
  });
});

describe("RecoveryDriver: barriers, restarts, removal", () => {
  test("a live Cleared during a recovery wipes the rank, orphans the recovery and makes the rank live at the clear", async () => {
    const h = new Harness();
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    await h.settle();
    h.deliver(e.store(null, [1n]));
    h.hold = true;
    e.store(1n, [2n]); // lost
    h.deliver(e.store(2n, [3n])); // gap -> replay held
    h.deliver(e.clear());
    h.deliver(e.store(null, [9n]));
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([9n]);
    expect(h.driver.cursor(W, 0)).toEqual(live(4n));
    expect(h.driver.stats()).toMatchObject({ clears: 1, discarded: 1 });
  });

  test("a Cleared inside a replay wipes the rank at its place in the order", async () => {
    const h = new Harness();
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    await h.settle();
    h.deliver(e.store(null, [1n]));
    e.clear(); // lost
    e.store(null, [2n]); // lost
    h.deliver(e.store(2n, [3n]));
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([2n, 3n]);
    expect(h.driver.stats().clears).toBe(1);
  });

  test("a Cleared wipes only the rank that sent it: the worker's other ranks keep their blocks and cursor", async () => {
    const h = new Harness();
    const e0 = h.engine(W, 0);
    const e1 = h.engine(W, 1);
    e0.store(null, [4n]);
    e1.store(null, [5n]);
    h.driver.addRank(W, 0);
    h.driver.addRank(W, 1);
    await h.settle();
    expect(h.index.of(W, 1)).toEqual([5n]);
    h.deliver(e0.clear());
    expect(h.index.of(W, 0)).toEqual([]);
    expect(h.index.of(W, 1)).toEqual([5n]);
    expect(h.driver.cursor(W, 1)).toEqual(live(0n));
  });

  test("ids going back far below the cursor mean an engine restart: blocks dropped at once, then a full restore", async () => {
    const h = new Harness({ restartIdMargin: 10n });
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    await h.settle();
    for (let i = 1n; i <= 30n; i++) h.deliver(e.store(i === 1n ? null : i - 1n, [i]));
    expect(h.index.of(W, 0)).toHaveLength(30);
    e.restart();
    h.hold = true;
    const first = e.store(null, [100n]); // id 0
    h.deliver(first);
    expect(h.index.of(W, 0)).toEqual([]);
    expect(h.index.log.at(-1)).toBe(`removeRank:${W}:0`);
    h.deliver(e.store(100n, [101n]));
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([100n, 101n]);
    expect(h.driver.cursor(W, 0)).toEqual(live(1n));
    expect(h.driver.stats().restarts).toBe(1);
  });

  test("ids slightly below the cursor are duplicates, not a restart", async () => {
    const h = new Harness({ restartIdMargin: 10n });
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    await h.settle();
    const evs = [];
    for (let i = 1n; i <= 20n; i++) evs.push(e.store(null, [i]));
    h.deliver(...evs);
    h.deliver(evs[12]!, evs[10]!); // ids 12 and 10, cursor at 19
    expect(h.driver.stats()).toMatchObject({ restarts: 0, stale: 2 });
    expect(h.index.of(W, 0)).toHaveLength(20);
  });

  test("a reset rank is wiped and restored from its new instance", async () => {
    const h = new Harness();
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    await h.settle();
    h.deliver(e.store(null, [1n]));
    e.restart();
    e.store(null, [2n]);
    h.driver.addRank(W, 0, true);
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([2n]);
    expect(h.driver.cursor(W, 0)).toEqual(live(0n));
  });

  test("removing a rank drops its blocks and its in-flight recovery; the last rank removes the worker", async () => {
    const h = new Harness();
    const e0 = h.engine(W, 0);
    const e1 = h.engine(W, 1);
    e0.store(null, [1n]);
    e1.store(null, [2n]);
    h.driver.addRank(W, 1);
    await h.settle();
    h.hold = true;
    h.driver.addRank(W, 0);
    h.driver.removeRank(W, 0);
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([]);
    expect(h.index.of(W, 1)).toEqual([2n]);
    expect(h.driver.stats().discarded).toBe(1);
    h.driver.removeRank(W, 1);
    expect(h.index.log.at(-1)).toBe(`removeWorker:${W}`);
    expect(h.driver.cursor(W, 1)).toBeUndefined();
  });

  test("removeWorker forgets every rank", async () => {
    const h = new Harness();
    h.engine(W, 0).store(null, [1n]);
    h.driver.addRank(W, 0);
    await h.settle();
    h.driver.removeWorker(W);
    expect(h.index.snapshot().size).toBe(0);
    expect(h.driver.cursor(W, 0)).toBeUndefined();
  });

  test("the seed's store helper builds events with hashes equal to the id", () => {
    const ev = makeStoreEvent(3);
    expect(ids([ev, makeClearEvent(4)])).toEqual([3, 4]);
  });
});

describe("RecoveryDriver: a worker that answers from a stale state", () => {
  test("replays that never reach the asked id back off and give up instead of looping", async () => {
    const h = new Harness({ maxRetries: 3 });
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    await h.settle();
    h.deliver(e.store(null, [1n]));
    e.store(1n, [2n]); // lost
    const third = e.store(2n, [3n]);
    // The worker keeps answering "nothing new" for every replay.
    h.answer = (c) => ({
      kind: "events",
      events: [],
      lastEventId: c.start === undefined ? null : c.start - 1n,
    });
    h.deliver(third);
    await h.settle();
    expect(h.calls.filter((c) => c.start === 1n)).toHaveLength(4);
    expect(h.sleeps).toEqual([200, 400, 800]);
    expect(h.driver.stats()).toMatchObject({ failed: 1 });
    expect(h.driver.isRecovering(W, 0)).toBe(false);
    // A healthy answer later repairs the rank.
    h.answer = undefined;
    h.deliver(e.store(3n, [4n]));
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([1n, 2n, 3n, 4n]);
  });
});
