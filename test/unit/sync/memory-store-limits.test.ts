/**
 * Limits on what a client can make the session store hold (issue 12 §3): the number of
 * bindings (least recently used dropped, counted, engine sessions closed) and the length
 * of a session id (400 naming the field).
 */
import { describe, expect, test } from "bun:test";
import { isRouterError } from "../../../src/core/errors.ts";
import { worker } from "../../../src/core/ids.ts";
import { MemoryAffinityStore } from "../../../src/router/sessions/memory-store.ts";
import { StickyRouter } from "../../../src/router/sessions/sticky.ts";
import { FakeClock } from "../../contract/fake-clock.ts";

describe("MemoryAffinityStore: --max-sessions", () => {
  test("never holds more than the cap; the least recently used binding goes first", async () => {
    const clock = new FakeClock();
    const store = new MemoryAffinityStore({ clock, reaperIntervalMs: 0, maxSessions: 3 });
    await store.put("a", worker(1), 60_000, "router-only");
    await store.put("b", worker(2), 60_000, "router-only");
    await store.put("c", worker(3), 60_000, "router-only");
    await store.get("a"); // a turn of "a": now "b" is the one idle longest
    await store.put("d", worker(4), 60_000, "router-only");
    expect(store.size).toBe(3);
    expect(store.evicted).toBe(1);
    expect(await store.peek("b")).toBeUndefined();
    expect((await store.peek("a"))?.worker).toEqual(worker(1));
    expect((await store.peek("d"))?.worker).toEqual(worker(4));
  });

  test("a flood of new ids keeps the size at the cap and counts every drop", async () => {
    const clock = new FakeClock();
    const store = new MemoryAffinityStore({ clock, reaperIntervalMs: 0, maxSessions: 100 });
    for (let i = 0; i < 10_000; i++)
      await store.put(`flood-${i}`, worker(1), 300_000, "router-only");
    expect(store.size).toBe(100);
    expect(store.evicted).toBe(9_900);
    expect(await store.peek("flood-9999")).toBeDefined();
    expect(await store.peek("flood-0")).toBeUndefined();
  });

  test("overwriting a binding is not an eviction", async () => {
    const store = new MemoryAffinityStore({
      clock: new FakeClock(),
      reaperIntervalMs: 0,
      maxSessions: 2,
    });
    await store.put("a", worker(1), 1_000, "router-only");
    await store.put("b", worker(1), 1_000, "router-only");
    await store.put("a", worker(2), 1_000, "router-only");
    expect(store.evicted).toBe(0);
    expect(store.size).toBe(2);
  });

  test("a dropped engine-backed binding is reported so its engine session is closed", async () => {
    const closed: string[] = [];
    const store = new MemoryAffinityStore({
      clock: new FakeClock(),
      reaperIntervalMs: 0,
      maxSessions: 1,
      onExpire: (id) => closed.push(id),
    });
    await store.put("engine", worker(1), 60_000, "engine-backed");
    await store.put("router", worker(1), 60_000, "router-only");
    await store.put("next", worker(1), 60_000, "router-only");
    expect(closed).toEqual(["engine"]);
  });

  test("a cap below 1 is refused", () => {
    expect(
      () =>
        new MemoryAffinityStore({ clock: new FakeClock(), reaperIntervalMs: 0, maxSessions: 0 }),
    ).toThrow(RangeError);
  });
});

describe("StickyRouter: --max-session-id-length", () => {
  const make = (max: number) => {
    const store = new MemoryAffinityStore({ clock: new FakeClock(), reaperIntervalMs: 0 });
    return { store, router: new StickyRouter(store, { maxSessionIdLength: max }) };
  };

  test("an id at the limit is kept; one past it is a 400 naming the field, and nothing is stored", async () => {
    const { store, router } = make(8);
    await router.bindRouterOnly("12345678", worker(1), 1_000);
    expect(store.size).toBe(1);
    for (const call of [
      () => router.bindRouterOnly("123456789", worker(1), 1_000),
      () => router.bindEngineSession("123456789", worker(1), 1_000),
      () => router.resolve("123456789"),
      () => router.peek("123456789"),
    ]) {
      const e = await call().then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(isRouterError(e) && e.code === "invalid_request" && e.field === "session_id").toBe(
        true,
      );
      expect(String((e as Error).message)).toContain("--max-session-id-length");
    }
    expect(store.size).toBe(1);
  });

  test("checkSessionId names the field it is given (the header)", () => {
    const { router } = make(4);
    let caught: unknown;
    try {
      router.checkSessionId("x".repeat(15_000), "x-session-id");
    } catch (e) {
      caught = e;
    }
    expect(isRouterError(caught) && caught.field === "x-session-id").toBe(true);
    expect((caught as Error).message).toBe(
      "x-session-id: session id is 15000 characters; the limit is 4 (--max-session-id-length)",
    );
  });

  test("the default limit is 256 characters", () => {
    expect(make(256).router.maxSessionIdLength).toBe(
      new StickyRouter(make(1).store).maxSessionIdLength,
    );
  });
});
