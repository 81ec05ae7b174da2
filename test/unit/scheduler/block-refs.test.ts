import { describe, expect, test } from "bun:test";
import { BlockRefs } from "../../../src/scheduler/block-refs.ts";
import { u32Halves } from "../../../src/scheduler/hash64-table.ts";
import { seq } from "./helpers.ts";

describe("BlockRefs", () => {
  test("a block held twice by one slot counts once and goes at the last release", () => {
    const r = new BlockRefs();
    const s = r.newSlot();
    const a = r.acquire(s, 7, 0);
    const b = r.acquire(s, 7, 0);
    expect(a).toBe(b);
    expect(r.refCount(a)).toBe(2);
    expect(r.activeBlocks(s)).toBe(1);
    r.release(a);
    expect(r.activeBlocks(s)).toBe(1);
    r.release(b);
    expect(r.activeBlocks(s)).toBe(0);
    expect(r.distinctBlocks).toBe(0);
    expect(r.liveNodes).toBe(0);
  });

  test("slots count the same hash independently", () => {
    const r = new BlockRefs();
    const s0 = r.newSlot();
    const s1 = r.newSlot();
    const n0 = r.acquire(s0, 1, 0);
    r.acquire(s1, 1, 0);
    expect(r.distinctBlocks).toBe(1);
    expect(r.holds(s0, 1, 0)).toBe(true);
    r.release(n0);
    expect(r.holds(s0, 1, 0)).toBe(false);
    expect(r.holds(s1, 1, 0)).toBe(true);
    expect(r.activeBlocks(s1)).toBe(1);
  });

  test("countHeld adds, per slot, how many of the hashes it holds (duplicates each time)", () => {
    const r = new BlockRefs();
    const s0 = r.newSlot();
    const s1 = r.newSlot();
    for (const h of [1, 2, 3]) r.acquire(s0, h, 0);
    r.acquire(s1, 3, 0);
    const q = seq(1, 3, 3, 9);
    const out = new Int32Array(r.slotCapacity);
    r.countHeld(u32Halves(q), q.length, out);
    expect(out[s0]).toBe(3);
    expect(out[s1]).toBe(2);
  });

  test("fractions lower the active count until the block goes; the sum resets exactly", () => {
    const r = new BlockRefs();
    const s = r.newSlot();
    const nodes = [1, 2, 3, 4].map((h) => r.acquire(s, h, 0));
    for (const n of nodes) r.setFraction(n, 0.3);
    expect(r.activeBlocks(s)).toBe(Math.round(4 - 4 * 0.7));
    r.setFraction(nodes[0]!, 1); // overwrite, not add
    expect(r.activeBlocks(s)).toBe(Math.round(4 - 3 * 0.7));
    for (const n of nodes) r.release(n);
    expect(r.activeBlocks(s)).toBe(0);
    const again = r.acquire(s, 5, 0);
    expect(r.activeBlocks(s)).toBe(1);
    r.release(again);
  });

  test("a slot can be released only when empty, and its index is reused", () => {
    const r = new BlockRefs();
    const s = r.newSlot();
    const n = r.acquire(s, 1, 1);
    expect(() => r.releaseSlot(s)).toThrow();
    r.release(n);
    r.releaseSlot(s);
    expect(r.newSlot()).toBe(s);
  });

  test("grows past its initial node and slot capacity", () => {
    const r = new BlockRefs();
    const slots = Array.from({ length: 20 }, () => r.newSlot());
    const nodes: number[] = [];
    for (const s of slots) for (let h = 0; h < 200; h++) nodes.push(r.acquire(s, h, 0));
    expect(r.liveNodes).toBe(4000);
    expect(r.distinctBlocks).toBe(200);
    for (const s of slots) expect(r.activeBlocks(s)).toBe(200);
    for (const n of nodes) r.release(n);
    expect(r.liveNodes).toBe(0);
    expect(r.distinctBlocks).toBe(0);
  });
});
