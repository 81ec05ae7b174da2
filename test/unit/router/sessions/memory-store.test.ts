import { describe, expect, test } from "bun:test";
import { worker } from "../../../../src/core/ids.ts";
import { MemoryAffinityStore } from "../../../../src/router/sessions/memory-store.ts";
import { REAPER_INTERVAL_MS, type Binding } from "../../../../src/router/sessions/store.ts";
import { FakeClock } from "../../../contract/fake-clock.ts";

// Behaviour every store shares is in test/contract/affinity-store.contract.ts; these are
// the memory store's own: its compare-and-delete, its default timer, its error handling.
describe("MemoryAffinityStore", () => {
  test("an expired lookup does not remove a newer binding (seed: expired_lookup_does_not_remove_newer_binding)", async () => {
    const clock = new FakeClock();
    const closed: string[] = [];
    const store = new MemoryAffinityStore({
      clock,
      onExpire: (id) => closed.push(id),
      reaperIntervalMs: 0,
    });
    const t0 = clock.now();
    await store.put("sess-race", worker(1, 0), 1_000, "engine-backed");
    // What a lookup read just before a newer put landed: the old, expired binding.
    const staleBinding: Binding = {
      worker: worker(1, 0),
      ttlMs: 1_000,
      kind: "engine-backed",
      expiresAt: t0 + 1_000,
    };
    clock.advance(2_000);

    await store.put("sess-race", worker(2, 1), 300_000, "engine-backed");
    expect(store.removeExpiredIfCurrent("sess-race", staleBinding)).toBe(false);
    expect((await store.peek("sess-race"))?.worker).toEqual(worker(2, 1));
    expect(closed).toEqual([]);
  });

  test("compare-and-delete removes the binding it was given once it has expired", async () => {
    const clock = new FakeClock();
    const closed: string[] = [];
    const store = new MemoryAffinityStore({
      clock,
      onExpire: (id) => closed.push(id),
      reaperIntervalMs: 0,
    });
    await store.put("s", worker(3), 1_000, "engine-backed");
    const binding = (await store.peek("s"))!;
    expect(store.removeExpiredIfCurrent("s", binding)).toBe(false); // not expired yet
    clock.advance(1_000);
    expect(store.removeExpiredIfCurrent("s", binding)).toBe(true);
    expect(store.removeExpiredIfCurrent("s", binding)).toBe(false);
    expect(closed).toEqual(["s"]);
    expect(store.size).toBe(0);
  });

  test("the reaper really frees router-only bindings (no lookup needed)", async () => {
    const clock = new FakeClock();
    const store = new MemoryAffinityStore({ clock });
    await store.put("r", worker(1), 10_000, "router-only");
    expect(store.size).toBe(1);
    clock.advance(REAPER_INTERVAL_MS);
    expect(store.size).toBe(0);
    await store.close();
  });

  test("the default sweep period is 30 s", async () => {
    const clock = new FakeClock();
    const closed: string[] = [];
    const store = new MemoryAffinityStore({ clock, onExpire: (id) => closed.push(id) });
    await store.put("e", worker(1), 1_000, "engine-backed");
    clock.advance(29_999);
    expect(closed).toEqual([]);
    clock.advance(1);
    expect(closed).toEqual(["e"]);
    expect(REAPER_INTERVAL_MS).toBe(30_000);
    await store.close();
  });

  test("a throwing callback is logged, not propagated", async () => {
    const clock = new FakeClock();
    const warnings: unknown[] = [];
    const store = new MemoryAffinityStore({
      clock,
      reaperIntervalMs: 0,
      onExpire: () => {
        throw new Error("engine unreachable");
      },
      logger: { warn: (m, f) => warnings.push([m, f]) },
    });
    await store.put("e", worker(1), 1_000, "engine-backed");
    clock.advance(1_000);
    expect(await store.get("e")).toBeUndefined();
    expect(warnings).toEqual([
      ["session on-expire callback threw", { sessionId: "e", error: "Error: engine unreachable" }],
    ]);
  });

  test("reaperIntervalMs 0 starts no timer", () => {
    const clock = new FakeClock();
    new MemoryAffinityStore({ clock, reaperIntervalMs: 0 });
    expect(clock.activeTimers).toBe(0);
  });
});
