/**
 * The load books' memory does not grow with the number of registered workers: a booked block
 * held by one worker is one 32-byte entry (a bitset of every slot in every entry cost 512
 * bytes a block with 2,000 workers), shared blocks take a row only while shared, and the rows
 * narrow again when workers leave.
 */
import { describe, expect, test } from "bun:test";
import { BlockRefs } from "../../../../src/router/books/block-refs.ts";

describe("BlockRefs memory", () => {
  test("2,000 slots, 100k blocks booked on one: about 32 bytes a block; counts right; all gone after release", () => {
    const r = new BlockRefs();
    const slots = Array.from({ length: 2_000 }, () => r.newSlot());
    const handles: number[] = [];
    for (let i = 0; i < 100_000; i++) handles.push(r.acquire(slots[5]!, i, 1));
    expect(r.bytes).toBeLessThan(100_000 * 64); // before: ~51 MB
    // Shared by many: rows appear for those blocks only.
    const shared: number[] = [];
    for (const s of slots.slice(0, 300)) shared.push(r.acquire(s, 7, 1));
    const counts = new Int32Array(r.slotCapacity);
    r.countHeld(Uint32Array.of(7, 1, 8, 1), 2, counts);
    expect(counts[slots[5]!]).toBe(2);
    expect(counts[slots[299]!]).toBe(1);
    expect(counts[slots[300]!]).toBe(0);
    for (const h of shared) r.release(h);
    for (const h of handles) r.release(h);
    expect(r.distinctBlocks).toBe(0);
    expect(r.activeBlocks(slots[5]!)).toBe(0);
  });

  test("slots leaving narrow the holder rows; shared blocks of the ones left still count", () => {
    const r = new BlockRefs();
    const slots = Array.from({ length: 200 }, () => r.newSlot());
    const rowsOf = () => (r as unknown as { bytes: number }).bytes;
    const held = slots.map((s) => r.acquire(s, 42, 0));
    const wide = rowsOf();
    for (let i = 199; i >= 3; i--) {
      r.release(held[i]!);
      r.releaseSlot(slots[i]!);
    }
    expect(rowsOf()).toBeLessThanOrEqual(wide);
    const counts = new Int32Array(r.slotCapacity);
    r.countHeld(Uint32Array.of(42, 0), 1, counts);
    expect([counts[0], counts[1], counts[2], counts[3]]).toEqual([1, 1, 1, 0]);
    // A new slot after the narrowing is a full member again.
    const again = r.newSlot();
    r.acquire(again, 42, 0);
    counts.fill(0);
    r.countHeld(Uint32Array.of(42, 0), 1, counts);
    expect(counts[again]).toBe(1);
  });
});
