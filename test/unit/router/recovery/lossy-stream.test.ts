import { expect, test } from "bun:test";
import type { RouterEvent } from "../../../../src/core/events.ts";
import { LossyStreamGuard } from "../../../../src/router/recovery/lossy-stream.ts";

const ev = (w: bigint, r: number, id: bigint): RouterEvent => ({
  workerId: w,
  event: { eventId: id, dpRank: r, data: { type: "removed", blockHashes: [1n] } },
});

test("an id gap in an unreplayable stream wipes that rank only; contiguous ids and restarts do not", () => {
  const g = new LossyStreamGuard();
  expect([0n, 1n, 2n].map((id) => g.observe(ev(1n, 0, id)))).toEqual([false, false, false]);
  expect(g.observe(ev(1n, 1, 7n))).toBe(false); // first sight of another rank
  expect(g.observe(ev(1n, 0, 5n))).toBe(true); // ids 3 and 4 lost for good
  expect(g.observe(ev(1n, 0, 6n))).toBe(false);
  expect(g.observe(ev(1n, 0, 0n))).toBe(false); // a new subscriber / publisher starts over
  g.forget(1n);
  expect(g.observe(ev(1n, 0, 9n))).toBe(false);
  expect(g.wipes).toBe(1);
});

test("forget drops every rank of that worker only (a removed worker leaves nothing behind)", () => {
  const g = new LossyStreamGuard();
  g.observe(ev(1n, 0, 0n));
  g.observe(ev(1n, 1, 0n));
  g.observe(ev(2n, 0, 0n));
  expect(g.streams).toBe(3);
  g.forget(1n);
  expect(g.streams).toBe(1);
  expect(g.observe(ev(2n, 0, 2n))).toBe(true); // worker 2's cursor survived
});
