import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../../src/core/errors.ts";
import { toErrorResponse } from "../../../../src/edge/errors.ts";
import { AdmissionGate } from "../../../../src/router/admission/admission-gate.ts";

/** The runtime's timers (the tick is 1e9 ms here: passes are driven by pump()). */
const timers = {
  set: (fn: () => void, ms: number) => setTimeout(fn, ms),
  clear: (h: unknown) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

const busy = () => new RouterError("all_workers_busy", "all busy");

/** A cluster with `free` slots: an attempt takes one or fails busy. */
function cluster(free: number) {
  const state = { free, admitted: [] as string[] };
  const attempt = (name: string) => async () => {
    if (state.free <= 0) throw busy();
    state.free--;
    state.admitted.push(name);
    return name;
  };
  return { state, attempt };
}

/** Let queued promise callbacks run. */
const settle = () => new Promise((r) => setImmediate(r));

describe("AdmissionGate", () => {
  // Ticks and deadlines far away: the tests drive the gate with pump() and a fake clock.
  const make = (maxQueue: number, timeoutMs = 1e9) => {
    let now = 0;
    const g = new AdmissionGate({ maxQueue, timeoutMs, tickMs: 1e9, now: () => now, timers });
    return { g, setNow: (t: number) => (now = t) };
  };

  test("a free cluster admits at once; a busy one queues and admits in order as room appears", async () => {
    const { g } = make(10);
    const c = cluster(1);
    expect(await g.admit(c.attempt("a"))).toBe("a");
    const b = g.admit(c.attempt("b"));
    const d = g.admit(c.attempt("d"), { priority: 0 });
    const hi = g.admit(c.attempt("hi"), { priority: -1 });
    await settle();
    expect(g.size).toBe(3);
    c.state.free = 2;
    g.pump();
    expect(await hi).toBe("hi");
    expect(await b).toBe("b");
    expect(g.size).toBe(1);
    c.state.free = 1;
    g.pump();
    expect(await d).toBe("d");
    expect(c.state.admitted).toEqual(["a", "hi", "b", "d"]);
    g.close();
  });

  test("new arrivals queue behind waiters even when they could run", async () => {
    const { g } = make(10);
    const c = cluster(0);
    const first = g.admit(c.attempt("first"));
    await settle();
    c.state.free = 1;
    const second = g.admit(c.attempt("second")); // must not overtake
    await settle();
    g.pump();
    expect(await first).toBe("first");
    c.state.free = 1;
    g.pump();
    expect(await second).toBe("second");
    g.close();
  });

  test("queue full: 429 queue_full with Retry-After; the counter moves", async () => {
    const { g } = make(1, 5_000);
    const c = cluster(0);
    const waiting = g.admit(c.attempt("w"));
    let err: unknown;
    await g.admit(c.attempt("x")).catch((e) => (err = e));
    expect((err as RouterError).code).toBe("queue_full");
    const res = toErrorResponse(err);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("5");
    const body = (await res.json()) as { error: { code: string; type: string } };
    expect(body.error.code).toBe("queue_full");
    expect(g.rejected.queue_full).toBe(1);
    g.close();
    await waiting.catch(() => {});
  });

  test("a waiter past the timeout gets 429 queue_timeout; others keep waiting", async () => {
    const { g, setNow } = make(10, 1000);
    const c = cluster(0);
    const old = g.admit(c.attempt("old"));
    await settle();
    setNow(500);
    const young = g.admit(c.attempt("young"));
    await settle();
    setNow(1000);
    g.pump();
    const err = await old.catch((e) => e);
    expect((err as RouterError).code).toBe("queue_timeout");
    expect(toErrorResponse(err).headers.get("retry-after")).toBe("1");
    expect(g.size).toBe(1);
    c.state.free = 1;
    g.pump();
    expect(await young).toBe("young");
    g.close();
  });

  test("a client that leaves is taken out of the line; other errors pass through", async () => {
    const { g } = make(10);
    const c = cluster(0);
    const ac = new AbortController();
    const gone = g.admit(c.attempt("gone"), { signal: ac.signal });
    const stays = g.admit(c.attempt("stays"));
    await settle();
    ac.abort();
    await expect(gone).rejects.toThrow("closed");
    expect(g.size).toBe(1);
    c.state.free = 1;
    g.pump();
    expect(await stays).toBe("stays");
    await expect(
      g.admit(async () => {
        throw new RouterError("no_endpoints", "none");
      }),
    ).rejects.toThrow("none");
    g.close();
  });

  test("maxQueue 0: every busy request is refused at once", async () => {
    const { g } = make(0);
    await expect(g.admit(cluster(0).attempt("x"))).rejects.toMatchObject({ code: "queue_full" });
  });
});

describe("AdmissionGate: no head-of-line blocking across candidate sets", () => {
  test("a waiter whose workers are busy does not hold up one whose workers are free; order kept within a set", async () => {
    const now = 0;
    const g = new AdmissionGate({
      maxQueue: 10,
      timeoutMs: 1e9,
      tickMs: 1e9,
      now: () => now,
      timers,
    });
    const free = { a: 0, b: 0 };
    const order: string[] = [];
    const on = (pool: "a" | "b", name: string) => async () => {
      if (free[pool] <= 0) throw busy();
      free[pool]--;
      order.push(name);
      return name;
    };
    const a1 = g.admit(on("a", "a1"));
    const b1 = g.admit(on("b", "b1"));
    const a2 = g.admit(on("a", "a2"));
    await settle();
    free.b = 1;
    g.pump();
    expect(await b1).toBe("b1"); // pool a is still busy: its waiters keep their places
    expect(g.size).toBe(2);
    free.a = 1;
    g.pump();
    expect(await a1).toBe("a1");
    free.a = 1;
    g.pump();
    expect(await a2).toBe("a2");
    expect(order).toEqual(["b1", "a1", "a2"]);
    g.close();
  });
});
