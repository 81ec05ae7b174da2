/**
 * The AffinityStore contract (spec §7, the tests of seed 004), run against every store:
 * memory (memory-store.test.ts), Redis over RESP and over Upstash REST (redis-store.test.ts).
 *
 * Time: every store under test reads the FakeClock it is given (the Redis store takes an
 * injected `now` that its Lua scripts use instead of Redis TIME), so expiry is decided
 * deterministically and the suite never sleeps. The harness moves time with `advance`; a
 * store that can only use real time could implement it by waiting, with the same tests.
 * Effects that a store performs asynchronously (a Redis reaper fired by the timer) are
 * awaited by polling with a deadline; `reap()` runs one sweep to completion.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { worker, type WorkerWithDpRank } from "../../src/core/ids.ts";
import { StickyRouter } from "../../src/router/sessions/sticky.ts";
import type { AffinityStore, Binding, OnExpire } from "../../src/router/sessions/store.ts";
import { until } from "../support/processes.ts";
import { FakeClock } from "./fake-clock.ts";

export interface StoreUnderTest {
  readonly store: AffinityStore;
  /** Move the store's clock forward, firing its reaper timer if it falls due. */
  advance(ms: number): Promise<void>;
  /** Run one reaper sweep now and resolve when it has finished. */
  reap(): Promise<void>;
  /** Close the store and release whatever the factory set up. */
  cleanup(): Promise<void>;
}

export interface StoreOptions {
  readonly onExpire?: OnExpire;
  /** The store's reaper period; tests that call reap() themselves pass an hour. */
  readonly reaperIntervalMs: number;
}

export type MakeStore = (clock: FakeClock, opts: StoreOptions) => Promise<StoreUnderTest>;

const S = 1_000; // one second, in ms
const HOUR = 3_600 * S;

type Closed = [sessionId: string, binding: Binding];

export function runAffinityStoreContract(name: string, makeStore: MakeStore): void {
  describe(`AffinityStore contract: ${name}`, () => {
    let open: StoreUnderTest[] = [];
    let clock: FakeClock;
    let closed: Closed[];

    async function make(
      opts: Partial<StoreOptions> & { throwOnExpire?: boolean } = {},
    ): Promise<StoreUnderTest> {
      clock = new FakeClock();
      closed = [];
      const onExpire: OnExpire = (id, b) => {
        closed.push([id, b]);
        if (opts.throwOnExpire) throw new Error(`close of ${id} failed`);
      };
      const h = await makeStore(clock, {
        onExpire,
        reaperIntervalMs: opts.reaperIntervalMs ?? HOUR,
      });
      open.push(h);
      return h;
    }
    const closedIds = () => closed.map(([id]) => id);

    afterEach(async () => {
      for (const h of open) await h.cleanup();
      open = [];
    });

    test("an unknown session resolves to nothing", async () => {
      const router = new StickyRouter((await make()).store);
      expect(await router.resolve("unknown-session")).toBeUndefined();
      expect(await router.peek("unknown-session")).toBeUndefined();
    });

    test("a bound session resolves to its worker and dp rank, with every bit of a u64 id", async () => {
      const h = await make();
      const router = new StickyRouter(h.store);
      const big = worker((1n << 64n) - 1n, 3);
      await router.bindEngineSession("sess-1", worker(42, 3), 300 * S);
      await router.bindRouterOnly("sess-2", big, 300 * S);

      expect(await router.resolve("sess-1")).toEqual(worker(42, 3));
      expect(await router.resolve("sess-2")).toEqual(big);
      expect(await h.store.peek("sess-1")).toEqual({
        worker: worker(42, 3),
        ttlMs: 300 * S,
        kind: "engine-backed",
        expiresAt: clock.now() + 300 * S,
      });
    });

    test("peek returns the worker without sliding its TTL", async () => {
      const h = await make();
      const router = new StickyRouter(h.store);
      const t0 = clock.now();
      await router.bindEngineSession("sess-peek", worker(7, 2), 60 * S);
      await h.advance(55 * S);

      expect(await router.peek("sess-peek")).toEqual(worker(7, 2));
      expect((await h.store.peek("sess-peek"))?.expiresAt).toBe(t0 + 60 * S);
      await h.advance(6 * S);
      expect(await router.peek("sess-peek")).toBeUndefined();
    });

    test("binding again overwrites worker, rank, TTL and kind", async () => {
      const h = await make();
      const router = new StickyRouter(h.store);
      await router.bindEngineSession("sess-1", worker(1, 0), 10 * S);
      await h.advance(5 * S);
      await router.bindRouterOnly("sess-1", worker(2, 3), 90 * S);

      expect(await router.peek("sess-1")).toEqual(worker(2, 3));
      expect(await h.store.peek("sess-1")).toEqual({
        worker: worker(2, 3),
        ttlMs: 90 * S,
        kind: "router-only",
        expiresAt: clock.now() + 90 * S,
      });
      // The old engine-backed binding's expiry is gone with it: nothing is closed later.
      await h.advance(60 * S);
      await h.reap();
      expect(closed).toEqual([]);
      expect(await router.peek("sess-1")).toEqual(worker(2, 3));
    });

    test("unbind removes the affinity and returns what it was", async () => {
      const h = await make();
      const router = new StickyRouter(h.store);
      await router.bindEngineSession("sess-1", worker(42, 1), 300 * S);

      expect(await router.unbind("sess-1")).toMatchObject({
        worker: worker(42, 1),
        kind: "engine-backed",
      });
      expect(await router.resolve("sess-1")).toBeUndefined();
      expect(await router.unbind("sess-1")).toBeUndefined();
      // An unbound engine session is the caller's to close, never the reaper's.
      await h.advance(400 * S);
      await h.reap();
      expect(closed).toEqual([]);
    });

    test("an expired binding resolves to nothing and is cleaned up", async () => {
      const h = await make();
      const router = new StickyRouter(h.store);
      await router.bindEngineSession("sess-expired", worker(99, 0), 10 * S);
      await h.advance(10 * S); // expiresAt == now counts as expired

      expect(await router.resolve("sess-expired")).toBeUndefined();
      expect(await h.store.peek("sess-expired")).toBeUndefined();
      expect(await h.store.remove("sess-expired")).toBeUndefined();
    });

    test("resolve slides the TTL forward to now + ttl", async () => {
      const h = await make();
      const router = new StickyRouter(h.store);
      await router.bindEngineSession("sess-refresh", worker(7, 2), 60 * S);
      await h.advance(55 * S);

      expect(await router.resolve("sess-refresh")).toEqual(worker(7, 2));
      expect((await h.store.peek("sess-refresh"))?.expiresAt).toBe(clock.now() + 60 * S);
      await h.advance(59 * S); // 114 s after binding: alive only because it was refreshed
      expect(await router.peek("sess-refresh")).toEqual(worker(7, 2));
      await h.reap();
      expect(closed).toEqual([]);
      await h.advance(1 * S);
      expect(await router.peek("sess-refresh")).toBeUndefined();
    });

    test("an expired engine-backed binding found by a lookup is closed exactly once", async () => {
      const h = await make();
      const router = new StickyRouter(h.store);
      await router.bindEngineSession("sess-expired", worker(99, 0), 1 * S);
      await h.advance(2 * S);

      expect(await router.resolve("sess-expired")).toBeUndefined();
      expect(closedIds()).toEqual(["sess-expired"]);
      expect(closed[0]![1]).toMatchObject({
        worker: worker(99, 0),
        kind: "engine-backed",
        ttlMs: 1 * S,
      });
      expect(await router.resolve("sess-expired")).toBeUndefined();
      await h.reap();
      expect(closedIds()).toEqual(["sess-expired"]);
    });

    test("an expired router-only binding found by a lookup closes nothing", async () => {
      const h = await make();
      const router = new StickyRouter(h.store);
      await router.bindRouterOnly("sess-router-only", worker(11, 0), 1 * S);
      await h.advance(2 * S);

      expect(await router.resolve("sess-router-only")).toBeUndefined();
      await h.reap();
      expect(closed).toEqual([]);
    });

    test("an expiry never removes or closes a newer binding of the same session", async () => {
      const h = await make();
      const router = new StickyRouter(h.store);
      await router.bindEngineSession("sess-race", worker(1, 0), 1 * S);
      await h.advance(2 * S); // the first binding has expired but nobody has looked yet
      await router.bindEngineSession("sess-race", worker(2, 1), 300 * S);

      await h.reap();
      expect(await router.peek("sess-race")).toEqual(worker(2, 1));
      expect(await router.resolve("sess-race")).toEqual(worker(2, 1));
      expect(closed).toEqual([]);
    });

    test("the reaper closes an expired engine-backed binding exactly once", async () => {
      const h = await make();
      await h.store.put("sess-reaped", worker(17, 0), 30 * S, "engine-backed");
      await h.advance(31 * S);

      await h.reap();
      expect(closedIds()).toEqual(["sess-reaped"]);
      expect(closed[0]![1].worker).toEqual(worker(17, 0));
      await h.reap();
      expect(await h.store.peek("sess-reaped")).toBeUndefined();
      expect(closedIds()).toEqual(["sess-reaped"]);
    });

    test("the reaper drops an expired router-only binding without a callback", async () => {
      const h = await make();
      await h.store.put("sess-router-only-reaped", worker(18, 0), 30 * S, "router-only");
      await h.advance(31 * S);

      await h.reap();
      expect(closed).toEqual([]);
      expect(await h.store.peek("sess-router-only-reaped")).toBeUndefined();
    });

    test("the reaper leaves live bindings alone", async () => {
      const h = await make();
      await h.store.put("live", worker(1), 60 * S, "engine-backed");
      await h.store.put("dead", worker(2), 10 * S, "engine-backed");
      await h.advance(30 * S);

      await h.reap();
      expect(closedIds()).toEqual(["dead"]);
      expect((await h.store.peek("live"))?.worker).toEqual(worker(1));
    });

    test("the reaper sweeps by itself every interval", async () => {
      const h = await make({ reaperIntervalMs: 1 * S });
      await h.store.put("engine", worker(5, 1), 5 * S, "engine-backed");
      await h.store.put("router", worker(6, 0), 5 * S, "router-only");
      await h.advance(6 * S); // sweeps at +1 … +6 s; the one at +5 s finds both expired

      await until(() => closed.length > 0, "the timer-driven sweep to close the engine session");
      expect(closedIds()).toEqual(["engine"]);
      expect(closed[0]![1].worker).toEqual(worker(5, 1));
    });

    test("close stops the reaper timer", async () => {
      const h = await make({ reaperIntervalMs: 1 * S });
      expect(clock.activeTimers).toBe(1);
      await h.store.close();
      expect(clock.activeTimers).toBe(0);
    });

    test("a callback that throws does not stop the sweep", async () => {
      const h = await make({ throwOnExpire: true });
      await h.store.put("a", worker(1), 1 * S, "engine-backed");
      await h.store.put("b", worker(2), 1 * S, "engine-backed");
      await h.advance(2 * S);

      await h.reap();
      expect(closedIds().sort()).toEqual(["a", "b"]);
      expect(await h.store.peek("a")).toBeUndefined();
      expect(await h.store.peek("b")).toBeUndefined();
    });

    test("session ids are opaque strings, each with its own binding", async () => {
      const h = await make();
      const ids = ["a:b", "x|1|2|e|3", "with space", "ünïcødé-会话", "k".repeat(300), "{tag}"];
      const workers: WorkerWithDpRank[] = ids.map((_, i) => worker(1000 + i, i));
      for (let i = 0; i < ids.length; i++)
        await h.store.put(ids[i]!, workers[i]!, (10 + i) * S, "engine-backed");

      for (let i = 0; i < ids.length; i++)
        expect((await h.store.get(ids[i]!))?.worker).toEqual(workers[i]!);
      await h.advance(10 * S + 1); // ids[0] (10 s) expires, the others (≥ 11 s) live
      await h.reap();
      expect(closedIds()).toEqual([ids[0]!]);
      for (let i = 1; i < ids.length; i++)
        expect((await h.store.peek(ids[i]!))?.worker).toEqual(workers[i]!);
    });

    test("many sessions expire independently, each by its own TTL", async () => {
      const h = await make();
      const n = 60;
      for (let i = 0; i < n; i++) {
        await h.store.put(
          `s${i}`,
          worker(i),
          (i + 1) * S,
          i % 2 === 0 ? "engine-backed" : "router-only",
        );
      }
      await h.advance(30 * S + 500); // s0..s29 (TTL 1..30 s) have expired
      await h.reap();

      const expectedClosed = Array.from({ length: 30 }, (_, i) => i)
        .filter((i) => i % 2 === 0)
        .map((i) => `s${i}`);
      expect(closedIds().sort()).toEqual(expectedClosed.sort());
      for (let i = 0; i < n; i++) {
        const b = await h.store.peek(`s${i}`);
        if (i < 30) expect(b).toBeUndefined();
        else expect(b?.worker).toEqual(worker(i));
      }
    });
  });
}
