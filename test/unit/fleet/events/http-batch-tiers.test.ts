/** Pushed KV events name a tier as Dynamo's RouterEvent does (storage_tier); a bad one is a 400 naming the field. */
import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../../src/core/errors.ts";
import { parseEventBatch } from "../../../../src/fleet/events/http-batch.ts";

describe("parseEventBatch with storage_tier", () => {
  test("host_pinned and disk become the CPU and disk media; device and none the GPU (no medium)", () => {
    const events = parseEventBatch([
      {
        worker_id: 1,
        storage_tier: "host_pinned",
        event: { event_id: 0, data: { removed: { block_hashes: [5] } } },
      },
      { worker_id: 1, storage_tier: "disk", event: { event_id: 1, data: "cleared" } },
      {
        worker_id: 1,
        storage_tier: "device",
        event: { event_id: 2, data: { removed: { block_hashes: [5] } } },
      },
      { worker_id: 1, event: { event_id: 3, data: "cleared" } },
    ]);
    expect(events.map((e) => e.event.medium)).toEqual(["cpu", "disk", undefined, undefined]);
  });

  test("an external tier is an invalid request naming storage_tier", () => {
    let err: unknown;
    try {
      parseEventBatch([
        { worker_id: 1, storage_tier: "external", event: { event_id: 0, data: "cleared" } },
      ]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RouterError);
    expect((err as RouterError).message).toContain("storage_tier");
  });
});
