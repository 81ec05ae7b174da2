/**
 * Index truth after loss (issue 12 §6), at the driver:
 * - events lost beyond what the worker can replay: the rank is wiped (cold, honest), never
 *   left claiming blocks whose Removed events were lost;
 * - events posted through the admin API are applied outside the engine's id order, so one
 *   carrying the engine's next id cannot make the engine's real event look like a duplicate.
 */
import { describe, expect, test } from "bun:test";
import type { RouterEvent } from "../../../../src/core/events.ts";
import { Harness } from "./support/harness.ts";

const W = 7n;

describe("events lost for good", () => {
  test("a replay the worker cannot give (and a failing restore) wipes the rank instead of keeping removed blocks", async () => {
    const h = new Harness({ maxRetries: 1 });
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    h.deliver(e.store(null, [1n, 2n, 3n]));
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([1n, 2n, 3n]);

    e.remove([3n]); // lost
    e.remove([2n]); // lost
    h.answer = () => ({ kind: "invalid_range", startId: 0n, endId: 0n }); // the range is gone, and no dump either
    h.deliver(e.store(1n, [4n]));
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([]); // was [1, 2, 3]: two blocks the engine no longer has
    expect(h.driver.stats().failed).toBeGreaterThanOrEqual(1);

    // The worker answers again: the next event restores the rank in full.
    h.answer = undefined;
    h.deliver(e.store(4n, [5n]));
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([1n, 4n, 5n]);
  });

  test("a failed replay is followed at once by a full restore, which gives the whole truth", async () => {
    const h = new Harness();
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    h.deliver(e.store(null, [1n, 2n]));
    await h.settle();
    e.remove([2n]); // lost
    h.answer = (c) =>
      c.start !== undefined
        ? { kind: "invalid_range", startId: c.start, endId: c.start }
        : e.query();
    h.deliver(e.store(1n, [3n]));
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([1n, 3n]);
    expect(h.driver.stats()).toMatchObject({ failed: 1, restores: 2 });
  });
});

describe("admin events", () => {
  test("an admin event with the engine's next id does not drop the engine's real event", async () => {
    const h = new Harness();
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    h.deliver(e.store(null, [1n]));
    await h.settle();

    const forged: RouterEvent = {
      workerId: W,
      event: {
        eventId: e.nextId,
        dpRank: 0,
        data: { type: "stored", parentHash: null, blocks: [{ blockHash: 99n, tokensHash: 99n }] },
      },
    };
    h.driver.ingest(forged, "admin");
    h.driver.ingest(e.store(1n, [2n, 3n]), "engine"); // the engine's own event with that id
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([1n, 2n, 3n, 99n]);
    expect(h.driver.stats()).toMatchObject({ admin: 1, stale: 0, gaps: 0 });
    expect(h.calls).toHaveLength(1); // the first restore only: the stream never looked broken
  });

  test("an admin Cleared wipes the rank but leaves the engine's cursor where it was", async () => {
    const h = new Harness();
    const e = h.engine(W);
    h.driver.addRank(W, 0);
    h.deliver(e.store(null, [1n]));
    await h.settle();
    h.driver.ingest(
      { workerId: W, event: { eventId: 0n, dpRank: 0, data: { type: "cleared" } } },
      "admin",
    );
    expect(h.index.of(W, 0)).toEqual([]);
    h.driver.ingest(e.store(null, [2n]), "engine");
    await h.settle();
    expect(h.index.of(W, 0)).toEqual([2n]); // applied as the next event; no restart, no restore
    expect(h.driver.stats()).toMatchObject({ restarts: 0, gaps: 0 });
  });
});
