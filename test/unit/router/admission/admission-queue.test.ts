import { describe, expect, test } from "bun:test";
import { AdmissionQueue } from "../../../../src/router/admission/admission-queue.ts";

describe("AdmissionQueue", () => {
  test("arrival order within a priority, lower priority value first", () => {
    const q = new AdmissionQueue<string>({ maxSize: 10, timeoutMs: 1000 });
    q.enqueue("a0", 0, 0);
    q.enqueue("b5", 5, 1);
    q.enqueue("c0", 0, 2);
    q.enqueue("d-1", -1, 3);
    q.enqueue("e5", 5, 4);
    const order: string[] = [];
    for (let e = q.shift(); e; e = q.shift()) order.push(e.item);
    expect(order).toEqual(["d-1", "a0", "c0", "b5", "e5"]);
  });

  test("refuses when full, and maxSize 0 never queues", () => {
    const q = new AdmissionQueue<number>({ maxSize: 2, timeoutMs: 1000 });
    expect(q.enqueue(1, 0, 0).queued).toBe(true);
    expect(q.enqueue(2, 0, 0).queued).toBe(true);
    expect(q.enqueue(3, -5, 0)).toEqual({ queued: false, reason: "queue_full" });
    expect(q.size).toBe(2);
    expect(new AdmissionQueue<number>({ maxSize: 0, timeoutMs: 1 }).enqueue(1, 0, 0).queued).toBe(
      false,
    );
  });

  test("expire takes out exactly the entries that waited timeoutMs, whatever their place", () => {
    const q = new AdmissionQueue<string>({ maxSize: 10, timeoutMs: 100 });
    q.enqueue("old-low", 9, 0);
    q.enqueue("new-high", 0, 50);
    q.enqueue("mid", 1, 20);
    expect(q.nextDeadlineIn(60)).toBe(40);
    expect(q.expire(99).map((e) => e.item)).toEqual([]);
    expect(q.expire(120).map((e) => e.item)).toEqual(["mid", "old-low"]);
    expect(q.head()?.item).toBe("new-high");
    expect(q.expire(150).map((e) => e.item)).toEqual(["new-high"]);
    expect(q.nextDeadlineIn(150)).toBeUndefined();
  });

  test("remove takes one entry out and keeps the order of the rest", () => {
    const q = new AdmissionQueue<string>({ maxSize: 10, timeoutMs: 100 });
    q.enqueue("a", 0, 0);
    const b = q.enqueue("b", 0, 0);
    q.enqueue("c", 0, 0);
    if (!b.queued) throw new Error("b not queued");
    expect(q.remove(b.entry)).toBe(true);
    expect(q.remove(b.entry)).toBe(false);
    expect([q.shift()?.item, q.shift()?.item]).toEqual(["a", "c"]);
  });

  test("random interleavings keep (priority, arrival) order (seeded)", () => {
    let s = 12345;
    const rnd = () => (s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32;
    for (let round = 0; round < 50; round++) {
      const q = new AdmissionQueue<number>({ maxSize: 100, timeoutMs: 1e9 });
      const items: { p: number; i: number }[] = [];
      for (let i = 0; i < 40; i++) {
        const p = Math.floor(rnd() * 4) - 1;
        items.push({ p, i });
        q.enqueue(i, p, i);
      }
      const want = [...items].sort((a, b) => a.p - b.p || a.i - b.i).map((x) => x.i);
      const got: number[] = [];
      for (let e = q.shift(); e; e = q.shift()) got.push(e.item);
      expect(got, `seed 12345 round ${round}`).toEqual(want);
    }
  });
});
