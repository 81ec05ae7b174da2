/**
 * POST /v1/kv/events bounds: blocks per event and per batch, engine-source ids past 2^53;
 * and big batches applied in slices that let the event loop breathe, in posting order.
 */
import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../../src/core/errors.ts";
import { storedEvent, type RouterEvent } from "../../../../src/core/events.ts";
import {
  checkBatchBounds,
  MAX_BATCH_BLOCKS,
  MAX_EVENT_BLOCKS,
} from "../../../../src/fleet/events/batch-bounds.ts";
import { SlicedIngest } from "../../../../src/fleet/events/sliced-ingest.ts";
import { thrownBy } from "../../../support/errors.ts";
import { harness } from "../../edge/harness.ts";

function stored(blocks: number, id = 0n, worker = 1n): RouterEvent {
  return storedEvent(
    worker,
    id,
    Array.from({ length: blocks }, (_, i) => ({
      tokensHash: BigInt(i + 1),
      blockHash: BigInt(i + 1),
    })),
    null,
    0,
  );
}

describe("event batch bounds", () => {
  test("one event past the block bound: 413 naming the event", () => {
    expect(() => checkBatchBounds([stored(MAX_EVENT_BLOCKS)], "admin")).not.toThrow();
    const e = thrownBy(RouterError, () =>
      checkBatchBounds([stored(1), stored(MAX_EVENT_BLOCKS + 1)], "admin"),
    );
    expect(e.code).toBe("payload_too_large");
    expect(e.message).toContain(
      `events[1]: ${MAX_EVENT_BLOCKS + 1} blocks in one event; at most ${MAX_EVENT_BLOCKS}`,
    );
  });

  test("a batch past the total: 413 saying to split it", () => {
    const n = MAX_BATCH_BLOCKS / MAX_EVENT_BLOCKS;
    const ok = Array.from({ length: n }, () => stored(MAX_EVENT_BLOCKS));
    expect(() => checkBatchBounds(ok, "admin")).not.toThrow();
    const e = thrownBy(RouterError, () => checkBatchBounds([...ok, stored(1)], "admin"));
    expect(e.message).toContain(`more than ${MAX_BATCH_BLOCKS} blocks`);
  });

  test("an engine-source id past 2^53 - 1 is refused naming it; an admin one is not in the id order and passes", () => {
    const huge = stored(1, 2n ** 53n + 1000n);
    const e = thrownBy(RouterError, () => checkBatchBounds([huge], "engine"));
    expect(e.field).toBe("events[0].event.event_id");
    expect(() => checkBatchBounds([stored(1, 2n ** 53n - 1n)], "engine")).not.toThrow();
    expect(() => checkBatchBounds([huge], "admin")).not.toThrow();
  });
});

describe("SlicedIngest", () => {
  test("a big batch is applied in slices with a yield between them; every event once, in order; results summed", async () => {
    const yields: number[] = [];
    const applied: bigint[] = [];
    const s = new SlicedIngest({
      sliceBlocks: 10,
      yieldNow: async () => void yields.push(applied.length),
    });
    const events = Array.from({ length: 25 }, (_, i) => stored(2, BigInt(i)));
    const r = await s.ingest(events, (slice) => {
      for (const e of slice) applied.push(e.event.eventId);
      return { accepted: slice.length, dropped: 0 };
    });
    expect(applied).toEqual(events.map((e) => e.event.eventId));
    expect(yields).toEqual([5, 10, 15, 20]);
    expect(r).toEqual({ accepted: 25, dropped: 0 });
  });

  test("batches never interleave: the second starts after the first's last slice", async () => {
    const order: string[] = [];
    const s = new SlicedIngest({
      sliceBlocks: 1,
      yieldNow: () => new Promise((r) => setTimeout(r, 0)),
    });
    const a = s.ingest(
      [stored(1, 1n), stored(1, 2n), stored(1, 3n)],
      (sl) => (order.push(`a${sl[0]!.event.eventId}`), { accepted: 1, dropped: 0 }),
    );
    const b = s.ingest(
      [stored(1, 1n), stored(1, 2n)],
      (sl) => (order.push(`b${sl[0]!.event.eventId}`), { accepted: 1, dropped: 0 }),
    );
    await Promise.all([a, b]);
    expect(order).toEqual(["a1", "a2", "a3", "b1", "b2"]);
  });

  test("through the app: a 200,000-event batch leaves the event loop free between slices; a refused one changes nothing", async () => {
    const h = harness({
      workers: [{ id: 1n, url: "http://w1:1" }],
      fetch: async () => new Response("{}"),
    });
    const events = Array.from({ length: 200_000 }, (_, i) => ({
      worker_id: 1,
      event: {
        event_id: i,
        dp_rank: 0,
        data: {
          stored: { parent_hash: null, blocks: [{ block_hash: i + 1, tokens_hash: i + 1 }] },
        },
      },
    }));
    const body = JSON.stringify(events);
    let ticks = 0;
    const timer = setInterval(() => void ticks++, 1);
    const post = h.request("/v1/kv/events", {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
    });
    const startTicks = ticks;
    const r = await post;
    clearInterval(timer);
    expect(r.status).toBe(200);
    expect(((await r.json()) as { accepted: number }).accepted).toBe(200_000);
    // Timers ran while it was applied (before: none, the whole batch in one piece).
    expect(ticks - startTicks).toBeGreaterThan(3);
    const tooBig = JSON.stringify(
      [{ worker_id: 1, event: { event_id: 2n ** 53n + 5n, dp_rank: 0, data: "cleared" } }],
      (_k, v) => (typeof v === "bigint" ? v.toString() : v),
    );
    const refused = await h.request("/v1/kv/events", {
      method: "POST",
      body: tooBig,
      headers: { "content-type": "application/json", "x-switchyard-event-source": "engine" },
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(
      "past 2^53 - 1",
    );
  }, 30_000);
});
