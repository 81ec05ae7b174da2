/**
 * Interning (worker_id, dp_rank) to slots: the flat key table against a Map under churn
 * (deletes inside probe runs), and the slot registry's exactness where the table's u32 halves
 * would alias (ids outside u64, ranks outside int32), through release and reuse.
 */
import { describe, expect, test } from "bun:test";
import { WorkerKeyTable } from "../../../../src/router/kv-index/worker-key-table.ts";
import { WorkerSlots } from "../../../../src/router/kv-index/worker-slots.ts";
import { lcgNumericalRecipes as lcg } from "../../../support/prng.ts";

describe("WorkerKeyTable", () => {
  test("matches a Map under random add / delete / get with colliding keys", () => {
    const rnd = lcg(5);
    const t = new WorkerKeyTable();
    const ref = new Map<string, number>();
    let next = 0;
    for (let i = 0; i < 20000; i++) {
      // Few distinct ids and ranks: long probe runs, deletes in their middle.
      const lo = Math.floor(rnd() * 40);
      const hi = rnd() < 0.5 ? 0 : 0xffffffff;
      const rank = Math.floor(rnd() * 4);
      const k = `${lo}:${hi}:${rank}`;
      const r = rnd();
      if (r < 0.5) {
        if (!ref.has(k)) {
          t.add(lo, hi, rank, next);
          ref.set(k, next++);
        }
      } else if (r < 0.8) {
        const slot = ref.get(k);
        expect(t.delete(lo, hi, rank, slot ?? 0)).toBe(slot !== undefined);
        ref.delete(k);
      } else {
        expect(t.get(lo, hi, rank)).toBe(ref.get(k) ?? -1);
      }
      expect(t.size).toBe(ref.size);
    }
    for (const [k, slot] of ref) {
      const [lo, hi, rank] = k.split(":").map(Number) as [number, number, number];
      expect(t.get(lo, hi, rank)).toBe(slot);
      expect(t.delete(lo, hi, rank, slot + 1)).toBe(false); // another slot's row: not this one
      expect(t.delete(lo, hi, rank, slot)).toBe(true);
    }
    expect(t.size).toBe(0);
  });
});

describe("WorkerSlots", () => {
  test("ids that share u64 halves, and ranks that share int32 bits, stay distinct slots through release and reuse", () => {
    const ws = new WorkerSlots();
    const ids = [5n, 2n ** 64n + 5n, -(2n ** 64n) + 5n, 2n ** 64n - 1n, -1n];
    const slots = ids.map((id) => ws.intern(id, 0));
    expect(new Set(slots.map((s) => s.index)).size).toBe(ids.length);
    ids.forEach((id, i) => {
      expect(ws.find(id, 0)).toBe(slots[i]!);
      expect(ws.intern(id, 0)).toBe(slots[i]!);
    });
    const r0 = ws.intern(9n, 0);
    const rWide = ws.intern(9n, 2 ** 32);
    expect(rWide).not.toBe(r0);
    expect(ws.find(9n, 2 ** 32)).toBe(rWide);
    expect(ws.find(9n, 0)).toBe(r0);

    ws.release(slots[0]!);
    expect(ws.find(5n, 0)).toBeUndefined();
    expect(ws.find(2n ** 64n + 5n, 0)).toBe(slots[1]!);
    ws.release(slots[3]!);
    expect(ws.find(-1n, 0)).toBe(slots[4]!);
    expect(ws.find(2n ** 64n - 1n, 0)).toBeUndefined();

    // Released indices are reused, lowest first, and the new owners are found by their ids.
    const again = ws.intern(77n, 0);
    expect(again.index).toBe(slots[0]!.index);
    expect(ws.find(77n, 0)).toBe(again);
    expect(ws.intern(5n, 0).index).toBe(slots[3]!.index);
  });

  test("a thousand workers with two ranks each: every one found, then all released", () => {
    const ws = new WorkerSlots();
    const id = (i: number) => (BigInt(i) << 40n) | 0x1234n;
    for (let i = 0; i < 1000; i++) for (const r of [0, 1]) ws.intern(id(i), r);
    for (let i = 0; i < 1000; i++)
      for (const r of [0, 1]) expect(ws.find(id(i), r)?.workerId).toBe(id(i));
    for (let i = 0; i < 1000; i += 2) for (const s of ws.ranksOf(id(i))) ws.release(s);
    for (let i = 0; i < 1000; i++) expect(ws.find(id(i), 1) !== undefined).toBe(i % 2 === 1);
    for (let i = 1; i < 1000; i += 2) for (const s of ws.ranksOf(id(i))) ws.release(s);
    expect(ws.span).toBe(0);
  });
});
