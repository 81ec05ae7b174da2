import { describe, expect, test } from "bun:test";
import { TransferError } from "../../../src/transfer/errors.ts";
import { BlockTransferHandler } from "../../../src/transfer/handler.ts";
import type { PoolKind, ScheduledTransfer, TransferMessage } from "../../../src/transfer/types.ts";
import { rejectionOf } from "../../support/errors.ts";
import { boom, FakeGroup, fakePools, Recorder } from "./fakes.ts";

const pairsOf = (n: number) => Array.from({ length: n }, (_, i) => [i, 1000 - i] as const);

const rejection = (p: Promise<unknown>): Promise<TransferError> => rejectionOf(TransferError, p);

describe("sharded mode", () => {
  test("a request above the max batch size is split into full batches plus a remainder", async () => {
    const rec = new Recorder();
    const h = new BlockTransferHandler({ ...fakePools(rec), maxBatchSize: 16 });
    const summary = await h.executeTransfer({
      fromPool: "host",
      toPool: "disk",
      blocks: pairsOf(40),
    });
    expect(summary).toEqual({ blocks: 40, batches: 3, mode: "sharded" });
    expect(rec.copies.map((c) => c.pairs.length / 2)).toEqual([16, 16, 8]);
    // in order, nothing lost or duplicated
    expect(rec.copies.flatMap((c) => c.pairs)).toEqual(pairsOf(40).flat());
  });

  test("the batches run concurrently", async () => {
    const rec = new Recorder();
    rec.hold();
    const h = new BlockTransferHandler({ ...fakePools(rec), maxBatchSize: 4 });
    const done = h.executeTransfer({ fromPool: "device", toPool: "host", blocks: pairsOf(10) });
    await Promise.resolve();
    expect(rec.active).toBe(3); // all three started before any finished
    rec.release();
    await done;
    expect(rec.maxActive).toBe(3);
  });

  test("a request at or below the max batch size is one call", async () => {
    const rec = new Recorder();
    const h = new BlockTransferHandler({ ...fakePools(rec), maxBatchSize: 16 });
    expect(
      (await h.executeTransfer({ fromPool: "disk", toPool: "device", blocks: pairsOf(16) }))
        .batches,
    ).toBe(1);
    expect(
      (await h.executeTransfer({ fromPool: "disk", toPool: "device", blocks: [] })).blocks,
    ).toBe(0);
    expect(rec.copies.length).toBe(2);
  });

  test("one failing batch fails the request", async () => {
    const rec = new Recorder();
    rec.failOn = (c) => (c.pairs[0] === 16 ? boom("disk full") : undefined);
    const h = new BlockTransferHandler({ ...fakePools(rec), maxBatchSize: 16 });
    const e = await rejection(
      h.executeTransfer({ fromPool: "host", toPool: "disk", blocks: pairsOf(40) }),
    );
    expect(e.message).toBe("disk full");
  });

  test("only the five seed directions are allowed; the rest are invalid transfer types", async () => {
    const allowed = ["device>host", "device>disk", "host>device", "host>disk", "disk>device"];
    const kinds: PoolKind[] = ["device", "host", "disk"];
    for (const from of kinds) {
      for (const to of kinds) {
        const rec = new Recorder();
        const h = new BlockTransferHandler(fakePools(rec));
        const run = h.executeTransfer({ fromPool: from, toPool: to, blocks: [[0, 1]] });
        if (allowed.includes(`${from}>${to}`)) {
          await run;
          expect(rec.copies).toEqual([{ from, to, pairs: [0, 1] }]);
        } else {
          const e = await rejection(run);
          expect(e.code).toBe("invalid-direction");
          expect(e.message).toContain("Invalid transfer type");
          expect(rec.copies).toEqual([]);
        }
      }
    }
  });

  test("a missing pool is a 'not initialized' error naming the side", async () => {
    const rec = new Recorder();
    const h = new BlockTransferHandler(fakePools(rec, ["device", "host"]));
    const e1 = await rejection(
      h.executeTransfer({ fromPool: "host", toPool: "disk", blocks: [[0, 0]] }),
    );
    expect(e1.code).toBe("pool-not-initialized");
    expect(e1.message).toContain("Target pool manager not initialized");
    const e2 = await rejection(
      new BlockTransferHandler(fakePools(rec, ["device"])).executeTransfer({
        fromPool: "host",
        toPool: "device",
        blocks: [[0, 0]],
      }),
    );
    expect(e2.message).toContain("Source pool manager not initialized");
  });

  test("indices that are not uint32 are refused before any copy", async () => {
    const rec = new Recorder();
    const h = new BlockTransferHandler(fakePools(rec));
    for (const bad of [-1, 1.5, 2 ** 32, Number.NaN]) {
      const e = await rejection(
        h.executeTransfer({
          fromPool: "host",
          toPool: "disk",
          blocks: [
            [0, 0],
            [bad, 1],
          ],
        }),
      );
      expect(e.code).toBe("invalid-argument");
    }
    expect(rec.copies).toEqual([]);
  });

  test("a max batch size below 1 is refused", () => {
    expect(() => new BlockTransferHandler({ maxBatchSize: 0 })).toThrow(TransferError);
  });
});

describe("replicated mode", () => {
  const make = (rank: number, rec: Recorder, kinds?: PoolKind[]) =>
    new BlockTransferHandler({
      ...fakePools(rec, kinds),
      maxBatchSize: 4,
      replication: new FakeGroup(rank, 3, rec),
    });

  test("rank 0 copies everything in one call (no batching), then broadcasts the destination blocks", async () => {
    const rec = new Recorder();
    const h = make(0, rec);
    expect(h.transferMode).toBe("replicated");
    const summary = await h.executeTransfer({
      fromPool: "host",
      toPool: "device",
      blocks: [
        [1, 10],
        [2, 11],
        [3, 12],
        [4, 13],
        [5, 14],
      ],
    });
    expect(summary).toEqual({ blocks: 5, batches: 1, mode: "replicated" });
    expect(rec.events).toEqual(["copy host->device 5", "bcast device [10,11,12,13,14]"]);
  });

  test("other ranks skip the copy and only receive the broadcast", async () => {
    const rec = new Recorder();
    await make(2, rec).executeTransfer({ fromPool: "disk", toPool: "device", blocks: [[7, 3]] });
    expect(rec.events).toEqual(["bcast device [3]"]);
  });

  test("a transfer away from the device pool is rank 0's alone; other ranks do nothing", async () => {
    const r0 = new Recorder();
    await make(0, r0).executeTransfer({ fromPool: "device", toPool: "disk", blocks: [[1, 2]] });
    expect(r0.events).toEqual(["copy device->disk 1"]);
    const r1 = new Recorder();
    await make(1, r1).executeTransfer({ fromPool: "device", toPool: "host", blocks: [[1, 2]] });
    expect(r1.events).toEqual([]);
  });

  test("device -> device stays local on every rank (and is refused like sharded mode), with no broadcast", async () => {
    for (const rank of [0, 1]) {
      const rec = new Recorder();
      const e = await rejection(
        make(rank, rec).executeTransfer({ fromPool: "device", toPool: "device", blocks: [[0, 1]] }),
      );
      expect(e.code).toBe("invalid-direction");
      expect(rec.events).toEqual([]);
    }
  });

  test("a rank without a device pool cannot receive a broadcast", async () => {
    const rec = new Recorder();
    const e = await rejection(
      make(1, rec, ["host", "disk"]).executeTransfer({
        fromPool: "host",
        toPool: "device",
        blocks: [[0, 0]],
      }),
    );
    expect(e.message).toContain("Device blocks required for broadcast");
  });

  test("rank 0's failed copy is not broadcast", async () => {
    const rec = new Recorder();
    rec.failOn = () => boom("read error");
    await rejection(
      make(0, rec).executeTransfer({ fromPool: "disk", toPool: "device", blocks: [[0, 0]] }),
    );
    expect(rec.events).toEqual(["copy disk->device 1"]);
  });

  test("rank and world size must satisfy 0 <= rank < world", () => {
    const rec = new Recorder();
    for (const [rank, world] of [
      [3, 3],
      [-1, 3],
      [0, 0],
      [0.5, 2],
    ]) {
      expect(
        () => new BlockTransferHandler({ replication: new FakeGroup(rank!, world!, rec) }),
      ).toThrow(/0 <= rank < world/);
    }
  });
});

describe("handling leader messages", () => {
  const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
  function message(data: Uint8Array[], acks: { n: number }): TransferMessage {
    return { data, ack: async () => void acks.n++ };
  }
  const wire = {
    from_pool: "Host",
    to_pool: "Disk",
    blocks: [
      [0, 1],
      [2, 3],
    ],
  };

  test("a plain request runs and is acknowledged", async () => {
    const rec = new Recorder();
    const acks = { n: 0 };
    await new BlockTransferHandler(fakePools(rec)).handle(message([enc(wire)], acks));
    expect(rec.copies).toEqual([{ from: "host", to: "disk", pairs: [0, 1, 2, 3] }]);
    expect(acks.n).toBe(1);
  });

  test("a failed transfer is still acknowledged, and the failure is returned", async () => {
    const rec = new Recorder();
    rec.failOn = () => boom("no space");
    const acks = { n: 0 };
    await expect(
      new BlockTransferHandler(fakePools(rec)).handle(message([enc(wire)], acks)),
    ).rejects.toThrow("no space");
    expect(acks.n).toBe(1);
  });

  test("a connector request is scheduled, marked complete with the result, and acknowledged", async () => {
    for (const fail of [false, true]) {
      const rec = new Recorder();
      if (fail) rec.failOn = () => boom("bad sector");
      const acks = { n: 0 };
      const completions: unknown[] = [];
      const scheduled: ScheduledTransfer = {
        decision: "execute",
        markComplete: async (r) => void completions.push(r.ok ? "ok" : r.error.message),
      };
      const seen: string[] = [];
      const scheduler = {
        scheduleTransfer: async (req: { requestId: string }) => (
          seen.push(req.requestId), scheduled
        ),
      };
      const h = new BlockTransferHandler({ ...fakePools(rec), scheduler });
      const run = h.handle(
        message(
          [enc({ ...wire, connector_req: { request_id: "r-1", uuid: "u-1", requirement: null } })],
          acks,
        ),
      );
      if (fail) await expect(run).rejects.toThrow("bad sector");
      else await run;
      expect(seen).toEqual(["r-1"]);
      expect(completions).toEqual([fail ? "bad sector" : "ok"]);
      expect(acks.n).toBe(1);
    }
  });

  test("a scheduler decision other than execute completes with an error (cancellation is unsupported)", async () => {
    const rec = new Recorder();
    const acks = { n: 0 };
    const completions: string[] = [];
    const scheduler = {
      scheduleTransfer: async () => ({
        decision: "cancel" as const,
        markComplete: async (r: { ok: boolean }) => void completions.push(String(r.ok)),
      }),
    };
    const h = new BlockTransferHandler({ ...fakePools(rec), scheduler });
    const e = await rejection(
      h.handle(message([enc({ ...wire, connector_req: { request_id: "r", uuid: "u" } })], acks)),
    );
    expect(e.code).toBe("unsupported");
    expect(completions).toEqual(["false"]);
    expect(rec.copies).toEqual([]);
    expect(acks.n).toBe(1);
  });

  test("malformed messages are refused before anything runs (and, as in the seed, not acknowledged)", async () => {
    const rec = new Recorder();
    const h = new BlockTransferHandler(fakePools(rec));
    const acks = { n: 0 };
    await expect(h.handle(message([], acks))).rejects.toThrow("exactly one data element");
    await expect(h.handle(message([enc(wire), enc(wire)], acks))).rejects.toThrow(
      "exactly one data element",
    );
    await expect(h.handle(message([new TextEncoder().encode("{nope")], acks))).rejects.toThrow(
      "not JSON",
    );
    await expect(h.handle(message([enc({ ...wire, from_pool: "Object" })], acks))).rejects.toThrow(
      "from_pool",
    );
    await expect(
      h.handle(message([enc({ ...wire, connector_req: { request_id: "r", uuid: "u" } })], acks)),
    ).rejects.toThrow("scheduler client is required");
    expect(acks.n).toBe(0);
    expect(rec.copies).toEqual([]);
  });
});

describe("sharded mode: native jobs in flight are bounded (issue 12)", () => {
  test("a request of many batches never has more than maxJobsInFlight copies running, and completes", async () => {
    const rec = new Recorder();
    rec.hold();
    const h = new BlockTransferHandler({ ...fakePools(rec), maxBatchSize: 16, maxJobsInFlight: 8 });
    const done = h.executeTransfer({
      fromPool: "host",
      toPool: "disk",
      blocks: pairsOf(70_000 / 100),
    });
    await Promise.resolve();
    expect(rec.active).toBe(8);
    rec.release();
    expect((await done).batches).toBe(44);
    expect(rec.maxActive).toBe(8);
    expect(rec.copies.flatMap((c) => c.pairs)).toEqual(pairsOf(700).flat());
  });

  test("the bound is shared by concurrent requests", async () => {
    const rec = new Recorder();
    rec.hold();
    const h = new BlockTransferHandler({ ...fakePools(rec), maxBatchSize: 4, maxJobsInFlight: 5 });
    const a = h.executeTransfer({ fromPool: "host", toPool: "disk", blocks: pairsOf(40) });
    const b = h.executeTransfer({ fromPool: "device", toPool: "host", blocks: pairsOf(40) });
    await Promise.resolve();
    expect(rec.active).toBe(5);
    rec.release();
    await Promise.all([a, b]);
    expect(rec.maxActive).toBe(5);
  });

  test("after a failure, batches not yet started are skipped", async () => {
    const rec = new Recorder();
    rec.failOn = (c) => (c.pairs[0] === 0 ? boom("disk full") : undefined);
    const h = new BlockTransferHandler({ ...fakePools(rec), maxBatchSize: 16, maxJobsInFlight: 1 });
    const e = await rejection(
      h.executeTransfer({ fromPool: "host", toPool: "disk", blocks: pairsOf(160) }),
    );
    expect(e.message).toBe("disk full");
    expect(rec.copies.length).toBe(1);
  });
});
