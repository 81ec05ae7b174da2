import { describe, expect, test } from "bun:test";
import { AbortedError, FifoSemaphore } from "../../../src/mocker/fifo.ts";

const tick = () => new Promise((r) => setImmediate(r));

describe("FifoSemaphore", () => {
  test("admits up to the permit count at once, then queues", async () => {
    const s = new FifoSemaphore(2);
    await s.acquire();
    await s.acquire();
    let third = false;
    void s.acquire().then(() => (third = true));
    await tick();
    expect(third).toBe(false);
    expect(s.waiting).toBe(1);
    s.release();
    await tick();
    expect(third).toBe(true);
    expect(s.held).toBe(2);
  });

  test("waiters are admitted in arrival order", async () => {
    const s = new FifoSemaphore(1);
    await s.acquire();
    const order: number[] = [];
    for (let i = 0; i < 5; i++) void s.acquire().then(() => order.push(i));
    for (let i = 0; i < 5; i++) {
      s.release();
      await tick();
    }
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  test("a newcomer does not overtake waiters when a permit frees", async () => {
    const s = new FifoSemaphore(1);
    await s.acquire();
    const order: string[] = [];
    void s.acquire().then(() => order.push("waiter"));
    s.release();
    void s.acquire().then(() => order.push("newcomer"));
    await tick();
    expect(order).toEqual(["waiter"]);
  });

  test("an aborted waiter leaves the queue and the next one gets the permit", async () => {
    const s = new FifoSemaphore(1);
    await s.acquire();
    const ctl = new AbortController();
    const aborted = s.acquire(ctl.signal);
    let second = false;
    void s.acquire().then(() => (second = true));
    ctl.abort();
    await expect(aborted).rejects.toBeInstanceOf(AbortedError);
    expect(s.waiting).toBe(1);
    s.release();
    await tick();
    expect(second).toBe(true);
  });

  test("an already-aborted signal is refused at once; release without acquire throws", async () => {
    const s = new FifoSemaphore(1);
    await expect(s.acquire(AbortSignal.abort())).rejects.toBeInstanceOf(AbortedError);
    expect(s.held).toBe(0);
    expect(() => s.release()).toThrow();
  });
});
