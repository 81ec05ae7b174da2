/**
 * Fair admission between tenants (virtual token counters): the order within a priority band,
 * the lift that keeps idle time from being banked, charges on admission and their correction,
 * weights, and that without tenants the order stays (priority, arrival).
 */
import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../../src/core/errors.ts";
import { AdmissionGate } from "../../../../src/router/admission/admission-gate.ts";
import { AdmissionQueue } from "../../../../src/router/admission/admission-queue.ts";
import {
  OUTPUT_TOKEN_WEIGHT,
  serviceTokens,
  VirtualTokenCounters,
  type TenantShare,
} from "../../../../src/router/admission/virtual-token-counter.ts";

const share = (tenant: string, promptTokens = 100, outputTokens = 0, weight = 1): TenantShare => ({
  tenant,
  weight,
  promptTokens,
  outputTokens,
});
const timers = {
  set: (fn: () => void, ms: number) => setTimeout(fn, ms),
  clear: (h: unknown) => clearTimeout(h as ReturnType<typeof setTimeout>),
};
const settle = () => new Promise((r) => setImmediate(r));

describe("VirtualTokenCounters", () => {
  test("a charge is prompt + weighted output over the tenant's weight; settle corrects the output", () => {
    const c = new VirtualTokenCounters();
    c.charge(share("a", 100, 10));
    expect(c.counter("a")).toBe(100 + OUTPUT_TOKEN_WEIGHT * 10);
    c.charge(share("b", 100, 10, 4));
    expect(c.counter("b")).toBe(serviceTokens(100, 10) / 4);
    // 10 booked, 3 generated: the 7 unused come back.
    c.settle(share("a", 100, 10), 3);
    expect(c.counter("a")).toBe(100 + OUTPUT_TOKEN_WEIGHT * 3);
  });

  test("lift raises a counter to the floor, never lowers it; with no floor, to the last served", () => {
    const c = new VirtualTokenCounters();
    c.charge(share("noisy", 1000));
    c.lift("quiet", 500);
    expect(c.counter("quiet")).toBe(500);
    c.lift("quiet", 100);
    expect(c.counter("quiet")).toBe(500);
    c.lift("idle", undefined);
    expect(c.counter("idle")).toBe(1000);
  });
});

describe("AdmissionQueue with fair admission", () => {
  test("within a band, the waiting tenant with the least service goes next; its own requests in arrival order", () => {
    const fair = new VirtualTokenCounters();
    const q = new AdmissionQueue<string>({ maxSize: 100, timeoutMs: 1e9, fair });
    // The noisy tenant queues ten requests, then the quiet one two.
    for (let i = 0; i < 10; i++) q.enqueue(`n${i}`, 0, i, share("noisy"));
    q.enqueue("q0", 0, 10, share("quiet"));
    q.enqueue("q1", 0, 11, share("quiet"));
    // Equal counters (the quiet one was lifted to the noisy one's): the one with fewer waiting
    // goes first, then they alternate while the counters allow.
    expect(q.first(6).map((e) => e.item)).toEqual(["q0", "n0", "q1", "n1", "n2", "n3"]);
  });

  test("a tenant that has received more service waits behind one that has received less", () => {
    const fair = new VirtualTokenCounters();
    fair.charge(share("noisy", 5000));
    fair.charge(share("quiet", 100));
    const q = new AdmissionQueue<string>({ maxSize: 100, timeoutMs: 1e9, fair });
    q.enqueue("n0", 0, 0, share("noisy"));
    q.enqueue("n1", 0, 1, share("noisy"));
    // quiet is lifted to the least waiting counter (noisy's 5000): no banked credit, equal footing.
    q.enqueue("q0", 0, 2, share("quiet"));
    expect(fair.counter("quiet")).toBe(5000);
    expect(q.first(3).map((e) => e.item)).toEqual(["q0", "n0", "n1"]);
  });

  test("equal tenants with equal backlogs alternate in arrival order", () => {
    const fair = new VirtualTokenCounters();
    const q = new AdmissionQueue<string>({ maxSize: 100, timeoutMs: 1e9, fair });
    for (let i = 0; i < 3; i++) {
      q.enqueue(`a${i}`, 0, 2 * i, share("a"));
      q.enqueue(`b${i}`, 0, 2 * i + 1, share("b"));
    }
    expect(q.first(6).map((e) => e.item)).toEqual(["a0", "b0", "a1", "b1", "a2", "b2"]);
  });

  test("weights: a tenant of weight 3 gets three turns for each turn of a tenant of weight 1", () => {
    const fair = new VirtualTokenCounters();
    const q = new AdmissionQueue<string>({ maxSize: 100, timeoutMs: 1e9, fair });
    for (let i = 0; i < 8; i++) q.enqueue(`a${i}`, 0, i, share("a", 100, 0, 1));
    for (let i = 0; i < 8; i++) q.enqueue(`b${i}`, 0, 8 + i, share("b", 100, 0, 3));
    const order = q.first(8).map((e) => e.item[0]);
    expect(order.filter((t) => t === "b").length).toBe(6);
    expect(order.filter((t) => t === "a").length).toBe(2);
  });

  test("priority bands still come first: fairness orders only within a band", () => {
    const fair = new VirtualTokenCounters();
    fair.charge(share("heavy", 1e6));
    const q = new AdmissionQueue<string>({ maxSize: 100, timeoutMs: 1e9, fair });
    q.enqueue("light-low", 5, 0, share("light"));
    q.enqueue("heavy-high", 0, 1, share("heavy"));
    expect(q.first(2).map((e) => e.item)).toEqual(["heavy-high", "light-low"]);
  });

  test("without tenant shares the order is (priority, arrival), fair counters or not", () => {
    const q = new AdmissionQueue<string>({
      maxSize: 10,
      timeoutMs: 1e9,
      fair: new VirtualTokenCounters(),
    });
    q.enqueue("a0", 0, 0);
    q.enqueue("b5", 5, 1);
    q.enqueue("c0", 0, 2);
    expect(q.first(3).map((e) => e.item)).toEqual(["a0", "c0", "b5"]);
  });

  test("leaving (remove, expire) takes a tenant out of the backlog, so its next arrival is lifted again", () => {
    const fair = new VirtualTokenCounters();
    const q = new AdmissionQueue<string>({ maxSize: 10, timeoutMs: 100, fair });
    fair.charge(share("noisy", 900));
    const r = q.enqueue("q", 0, 0, share("quiet"));
    q.enqueue("n", 0, 0, share("noisy"));
    expect(fair.counter("quiet")).toBe(900); // lifted to the last served (nobody waited)
    if (!r.queued) throw new Error("not queued");
    q.remove(r.entry);
    fair.charge(share("noisy", 1000)); // noisy served meanwhile: 1900
    q.enqueue("q2", 0, 1, share("quiet"));
    expect(fair.counter("quiet")).toBe(1900);
    expect(q.expire(200).length).toBe(2);
    expect(q.size).toBe(0);
  });
});

describe("AdmissionGate with fair admission", () => {
  const busy = () => new RouterError("all_workers_busy", "all busy");

  /** Workers with `s.free` slots: an attempt takes one (recorded in `s.admitted`) or fails busy. */
  function slots() {
    const s = { free: 0, admitted: [] as string[] };
    const attempt = (name: string) => async () => {
      if (s.free <= 0) throw busy();
      s.free--;
      s.admitted.push(name);
      return name;
    };
    return { s, attempt };
  }

  test("a quiet tenant's request waiting behind a noisy tenant's backlog is admitted next", async () => {
    const g = new AdmissionGate({
      maxQueue: 100,
      timeoutMs: 1e9,
      tickMs: 1e9,
      now: () => 0,
      timers,
      fair: true,
    });
    const { s, attempt } = slots();
    const noisy = Array.from({ length: 10 }, (_, i) =>
      g.admit(attempt(`n${i}`), { share: share("noisy") }),
    );
    await settle();
    const quiet = g.admit(attempt("q0"), { share: share("quiet") });
    await settle();
    s.free = 2;
    g.pump();
    await quiet;
    expect(s.admitted).toEqual(["q0", "n0"]);
    s.free = 100;
    g.pump();
    await Promise.all(noisy);
    g.close();
  });

  test("arrival order when fair admission is off, shares or not", async () => {
    const g = new AdmissionGate({
      maxQueue: 100,
      timeoutMs: 1e9,
      tickMs: 1e9,
      now: () => 0,
      timers,
      fair: false,
    });
    const { s, attempt } = slots();
    const all = [
      ...Array.from({ length: 3 }, (_, i) => g.admit(attempt(`n${i}`), { share: share("noisy") })),
      g.admit(attempt("q0"), { share: share("quiet") }),
    ];
    await settle();
    s.free = 4;
    g.pump();
    await Promise.all(all);
    expect(s.admitted).toEqual(["n0", "n1", "n2", "q0"]);
    expect(g.serviceOf("noisy")).toBe(0);
  });

  test("every admission charges once (retries of one request included); settle corrects to the real output", async () => {
    const g = new AdmissionGate({
      maxQueue: 10,
      timeoutMs: 1e9,
      tickMs: 1e9,
      now: () => 0,
      timers,
      fair: true,
    });
    const s = share("a", 50, 20);
    await g.admit(async () => "x", { share: s });
    expect(g.serviceOf("a")).toBe(serviceTokens(50, 20));
    await g.admit(async () => "retry", { share: s });
    expect(g.serviceOf("a")).toBe(serviceTokens(50, 20));
    g.settle(s, 5);
    expect(g.serviceOf("a")).toBe(serviceTokens(50, 5));
    g.settle(s, 0);
    expect(g.serviceOf("a")).toBe(serviceTokens(50, 5));
  });

  test("a request refused (queue full) is never charged, and settling it changes nothing", async () => {
    const g = new AdmissionGate({
      maxQueue: 0,
      timeoutMs: 1e9,
      tickMs: 1e9,
      now: () => 0,
      timers,
      fair: true,
    });
    const s = share("a", 50, 20);
    await expect(
      g.admit(
        async () => {
          throw busy();
        },
        { share: s },
      ),
    ).rejects.toThrow(/queue is full/);
    g.settle(s, 0);
    expect(g.serviceOf("a")).toBe(0);
  });
});
