import { describe, expect, test } from "bun:test";
import { BlockRefs } from "../../../../src/router/books/block-refs.ts";
import { u32Halves } from "../../../../src/router/books/hash64-table.ts";
import { seededRng, seq } from "../choose/helpers.ts";

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

  test("holders come and go in any order; fractions stay with their own slot", () => {
    const r = new BlockRefs();
    const [a, b, c] = [r.newSlot(), r.newSlot(), r.newSlot()];
    const ha = r.acquire(a, 9, 9); // first holder
    const hb = r.acquire(b, 9, 9); // second holder
    r.setFraction(hb, 0.25);
    r.setFraction(ha, 0.5);
    expect([r.activeBlocks(a), r.activeBlocks(b)]).toEqual([Math.round(0.5), Math.round(0.25)]);
    r.release(ha); // the first holder leaves while the second stays
    expect(r.holds(a, 9, 9)).toBe(false);
    expect(r.activeBlocks(a)).toBe(0);
    const hc = r.acquire(c, 9, 9); // a new holder takes the vacant place
    expect(r.refCount(hc)).toBe(1);
    expect(r.activeBlocks(c)).toBe(1); // no fraction inherited from a
    expect(r.acquire(b, 9, 9)).toBe(hb);
    expect(r.refCount(hb)).toBe(2);
    const out = new Int32Array(r.slotCapacity);
    r.countHeld(u32Halves(seq(9n + (9n << 32n))), 1, out);
    expect([out[a], out[b], out[c]]).toEqual([0, 1, 1]);
    r.release(hb);
    r.release(hb);
    r.release(hc);
    expect(r.distinctBlocks).toBe(0);
    expect(r.liveNodes).toBe(0);
    expect([r.activeBlocks(a), r.activeBlocks(b), r.activeBlocks(c)]).toEqual([0, 0, 0]);
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

  test("countHeld equals a per-slot scan with 70 slots (multi-word bitsets), runs and releases (seed 99)", () => {
    const rng = seededRng(99);
    const r = new BlockRefs();
    const early = Array.from({ length: 10 }, () => r.newSlot());
    const held: number[][] = []; // live nodes, to release some
    for (let round = 0; round < 300; round++) {
      if (round === 100) for (let i = 0; i < 60; i++) early.push(r.newSlot()); // grow past 64 slots mid-run
      const slot = early[Math.floor(rng() * early.length)]!;
      // Prefix-shaped holdings: a shared head (0..7) and per-slot tails.
      const len = 1 + Math.floor(rng() * 12);
      const nodes: number[] = [];
      for (let h = 0; h < len; h++)
        nodes.push(r.acquire(slot, h < 8 ? h : 100 + Math.floor(rng() * 40), 0));
      held.push(nodes);
      if (rng() < 0.3)
        for (const n of held.splice(Math.floor(rng() * held.length), 1)[0]!) r.release(n);
      const query = Array.from({ length: 16 }, (_, i) =>
        i < 8 ? i : 100 + Math.floor(rng() * 40),
      );
      const q = seq(...query);
      const out = new Int32Array(r.slotCapacity);
      r.countHeld(u32Halves(q), q.length, out);
      for (const s of early) expect(out[s]).toBe(query.filter((h) => r.holds(s, h, 0)).length);
    }
  });

  test("acquireAll books exactly like acquire one by one: same handles, refcounts and counts (seed 7)", () => {
    const rng = seededRng(7);
    const one = new BlockRefs();
    const all = new BlockRefs();
    const slotsA = Array.from({ length: 40 }, () => one.newSlot());
    const slotsB = Array.from({ length: 40 }, () => all.newSlot());
    expect(slotsB).toEqual(slotsA);
    const liveA: number[][] = [];
    const liveB: number[][] = [];
    for (let round = 0; round < 400; round++) {
      const slot = slotsA[Math.floor(rng() * slotsA.length)]!;
      // Shared heads, duplicates inside one request, fresh tails; hashes with high bits set.
      const len = 1 + Math.floor(rng() * 20);
      const hashes = Array.from({ length: len }, (_, i) =>
        i < 6
          ? BigInt(i)
          : rng() < 0.2
            ? 3n
            : (BigInt(Math.floor(rng() * 60)) << 33n) | 0x8000_0000n,
      );
      const q = seq(...hashes);
      const want = hashes.map((h) => one.acquire(slot, Number(h & 0xffff_ffffn), Number(h >> 32n)));
      const got = new Int32Array(len);
      all.acquireAll(slot, u32Halves(q), len, got);
      expect([...got], `round ${round}`).toEqual(want);
      liveA.push(want);
      liveB.push([...got]);
      if (rng() < 0.4) {
        const k = Math.floor(rng() * liveA.length);
        for (const n of liveA.splice(k, 1)[0]!) one.release(n);
        for (const n of liveB.splice(k, 1)[0]!) all.release(n);
      }
      expect(all.liveNodes).toBe(one.liveNodes);
      expect(all.distinctBlocks).toBe(one.distinctBlocks);
      expect(all.uniqueBlocks(slot)).toBe(one.uniqueBlocks(slot));
      for (const n of got) expect(all.refCount(n)).toBe(one.refCount(n));
    }
  });
});
