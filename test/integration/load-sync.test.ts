/**
 * Active load shared between routers (src/sync) against a real redis-server: two
 * LoadTrackers ("routers" A and B, different router ids), each with its own startLoadSync,
 * on one Redis: RESP pub/sub (redis://) and the Upstash REST path (a polled stream, through
 * the test bridge). Every wait polls with a deadline; redis-server is stopped by PID.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { keyOf, worker } from "../../src/core/ids.ts";
import { LoadTracker } from "../../src/router/books/load-tracker.ts";
import { startLoadSync, type LoadSync, type LoadSyncOptions } from "../../src/sync/load-sync.ts";
import { openPubSubTransport } from "../../src/runtime/bun/pubsub-transport.ts";
import { until } from "../support/processes.ts";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "../support/upstash-bridge.ts";

const W = worker(7n);
const KEY = keyOf(W);
const BLOCK = 16;

let redis: RedisServer;
let bridge: UpstashBridge;
const open: LoadSync[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
  bridge = await startUpstashBridge({ redisPort: redis.port });
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.stop()));
  // A failed restart test must not take Redis away from the tests after it.
  if (redis.pid === undefined) await redis.restart();
});

afterAll(async () => {
  await bridge?.stop();
  await redis?.stop();
});

/** A manual clock: frozen unless the test moves it. */
function manualClock(start = 1_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

/** Distinct sequence hashes per request id (so blocks are never shared by accident). */
function hashes(requestId: string, n: number): BigUint64Array {
  let base = 0xcbf29ce484222325n;
  for (const ch of requestId)
    base = BigInt.asUintN(64, (base ^ BigInt(ch.charCodeAt(0))) * 0x100000001b3n);
  const out = new BigUint64Array(n);
  for (let i = 0; i < n; i++) out[i] = BigInt.asUintN(64, base + BigInt(i) * 0x9e3779b97f4a7c15n);
  return out;
}

interface Router {
  readonly tracker: LoadTracker;
  readonly sync: LoadSync;
}

type Transport = "resp" | "rest";

async function router(
  id: bigint,
  transport: Transport,
  now: () => number,
  extra: Partial<LoadSyncOptions> = {},
): Promise<Router> {
  const tracker = new LoadTracker({ blockSize: BLOCK, routerId: id });
  tracker.updateWorkers([W]);
  const sync = await startLoadSync({
    url: transport === "resp" ? redis.url : bridge.url,
    pubsub: openPubSubTransport,
    token: transport === "rest" ? bridge.token : undefined,
    tracker,
    routerId: id,
    now,
    // A channel per test, so one test's routers never hear another's.
    channel: `test:load-sync:${crypto.randomUUID()}`,
    heartbeatMs: 50,
    deadAfterMs: 300,
    ...extra,
  });
  open.push(sync);
  return { tracker, sync };
}

function add(r: Router, requestId: string, blocks: number, now: number): void {
  r.tracker.addRequest(
    { requestId, worker: W, seqHashes: hashes(requestId, blocks), isl: blocks * BLOCK, overlap: 0 },
    now,
  );
}

/** Both routers on one channel. */
async function pair(
  transport: Transport,
  now: () => number,
  extra: Partial<LoadSyncOptions> = {},
): Promise<[Router, Router]> {
  const channel = `test:load-sync:${crypto.randomUUID()}`;
  const a = await router(1n, transport, now, { channel, ...extra });
  const b = await router(2n, transport, now, { channel, ...extra });
  return [a, b];
}

for (const transport of ["resp", "rest"] as const) {
  describe(`load sync over ${transport === "resp" ? "RESP pub/sub" : "Upstash REST (stream)"}`, () => {
    test("add, prefill-done and free on A show up in B's load, and the other way round", async () => {
      const clock = manualClock();
      const [a, b] = await pair(transport, clock.now);

      add(a, "a-1", 4, clock.t);
      await until(() => b.tracker.activeBlocks(KEY) === 4, "B to see A's 4 blocks");
      expect(b.tracker.activeTokens(KEY, clock.t)).toBe(4 * BLOCK);
      expect(b.tracker.hasRemoteRequest(1n, "a-1")).toBe(true);

      a.tracker.markPrefillCompleted("a-1", clock.t);
      await until(() => b.tracker.activeTokens(KEY, clock.t) === 0, "B to see A's prefill done");
      expect(b.tracker.activeBlocks(KEY)).toBe(4);

      add(b, "b-1", 3, clock.t);
      await until(
        () => a.tracker.activeBlocks(KEY) === 7,
        "A to see B's 3 blocks next to its own 4",
      );
      expect(a.tracker.activeTokens(KEY, clock.t)).toBe(3 * BLOCK);

      a.tracker.free("a-1", clock.t);
      await until(() => !b.tracker.hasRemoteRequest(1n, "a-1"), "B to see A's free");
      expect(b.tracker.activeBlocks(KEY)).toBe(3);
      expect(b.tracker.activeRequests(KEY)).toBe(1);

      b.tracker.free("b-1", clock.t);
      await until(() => a.tracker.activeRequests(KEY) === 0, "A to see B's free");
      expect(a.tracker.activeBlocks(KEY)).toBe(0);
      expect(b.sync.stats().invalidMessages + a.sync.stats().invalidMessages).toBe(0);
      expect(a.sync.stats().droppedEvents).toBe(0);
    });

    test("a burst of 600 adds arrives in batches of at most 256 events", async () => {
      const clock = manualClock();
      const [a, b] = await pair(transport, clock.now);
      for (let i = 0; i < 600; i++) add(a, `burst-${i}`, 1, clock.t);
      await until(
        () => b.tracker.activeRequests(KEY) === 600,
        () => `B to see 600 requests (has ${b.tracker.activeRequests(KEY)})`,
      );
      // B may hear the last message before A's PUBLISH reply is back: wait for A to settle all
      // 600 (published or dropped; B also gets dropped ones through a snapshot), then assert.
      const s = await until(
        () => {
          const st = a.sync.stats();
          return st.publishedEvents + st.droppedEvents === 600 ? st : undefined;
        },
        () => `A to settle 600 events (${JSON.stringify(a.sync.stats())})`,
      );
      expect(s.droppedEvents).toBe(0);
      expect(s.publishedEvents).toBe(600);
      expect(s.publishedMessages).toBeGreaterThanOrEqual(3); // ceil(600 / 256)
      expect(b.sync.stats().gaps).toBe(0);
    });

    test("a router that starts late gets the load already booked (snapshot on first sight)", async () => {
      const clock = manualClock();
      const channel = `test:load-sync:${crypto.randomUUID()}`;
      const a = await router(1n, transport, clock.now, { channel });
      add(a, "early-1", 2, clock.t);
      add(a, "early-2", 5, clock.t);
      a.tracker.markPrefillCompleted("early-1", clock.t);
      const settled = await until(() => {
        const st = a.sync.stats();
        return st.publishedEvents + st.droppedEvents === 3 ? st : undefined;
      }, "A to publish its events");
      expect(settled.droppedEvents).toBe(0);

      const b = await router(2n, transport, clock.now, { channel });
      await until(() => b.tracker.activeRequests(KEY) === 2, "B to learn A's earlier requests");
      expect(b.tracker.activeBlocks(KEY)).toBe(7);
      expect(b.tracker.activeTokens(KEY, clock.t)).toBe(5 * BLOCK); // early-1's prefill is done
      expect(b.sync.stats().snapshotsApplied).toBeGreaterThanOrEqual(1);
      // And it keeps following.
      a.tracker.free("early-2", clock.t);
      await until(
        () => b.tracker.activeRequests(KEY) === 1,
        "B to see the free after the snapshot",
      );
    });

    test("A dies without freeing: B frees A's requests once A has been silent for deadAfterMs", async () => {
      const clock = manualClock();
      const [a, b] = await pair(transport, clock.now);
      add(a, "doomed-1", 4, clock.t);
      add(a, "doomed-2", 2, clock.t);
      add(b, "b-own", 1, clock.t);
      await until(() => b.tracker.activeRequests(KEY) === 3, "B to see A's two requests");
      // The kv picker's count of other routers (SchedulingContext.otherRouters) while A lives.
      expect(b.sync.peerCount()).toBe(1);

      await a.sync.stop(); // the crash: no frees are published
      const ticks = b.sync.stats().ticks;
      await until(() => b.sync.stats().ticks >= ticks + 3, "three heartbeats on B");
      expect(b.tracker.activeRequests(KEY)).toBe(3); // not silent long enough yet (clock frozen)

      clock.t += 301;
      await until(() => b.sync.stats().expiredPeers === 1, "B to declare A dead");
      expect(b.sync.peerCount()).toBe(0);
      expect(b.tracker.hasRemoteRequest(1n, "doomed-1")).toBe(false);
      expect(b.tracker.hasRemoteRequest(1n, "doomed-2")).toBe(false);
      expect(b.tracker.hasRequest("b-own")).toBe(true);
      expect(b.tracker.activeBlocks(KEY)).toBe(1);
      expect(b.sync.stats().expiredRequests).toBe(2);
      expect(b.sync.stats().remoteRequests).toBe(0);
    });

    test("starting while Redis is down does not fail; the routers sync once it is up", async () => {
      await redis.stop();
      // A clock that moves, so a resync request lost while B's publisher reconnects is asked again.
      const t = () => performance.now();
      const [a, b] = await pair(transport, t, { commandTimeoutMs: 300, deadAfterMs: 10_000 });
      expect(b.sync.stats().receiving).toBe(false);
      add(a, "early", 2, t()); // dropped: nowhere to publish
      await redis.restart();
      await until(
        () => a.sync.stats().publishing && b.sync.stats().receiving,
        "both routers to reach Redis",
        15_000,
      );
      add(a, "later", 3, t());
      await until(() => b.tracker.hasRemoteRequest(1n, "later"), "B to see A's add", 15_000);
      // "early" was never published; B learns it from A's snapshot (A's seq ran ahead of B's view).
      await until(
        () => b.tracker.hasRemoteRequest(1n, "early"),
        "B to get the dropped add from a snapshot",
        15_000,
      );
      expect(b.tracker.activeBlocks(KEY)).toBe(5);
    }, 30_000);

    test("Redis killed and restarted mid-run: nothing throws, propagation resumes, missed events are repaired", async () => {
      const [a, b] = await pair(transport, () => performance.now(), {
        deadAfterMs: 10_000,
        commandTimeoutMs: 300,
      });
      const t = () => performance.now();
      add(a, "before", 2, t());
      add(a, "freed-during", 3, t());
      await until(() => b.tracker.activeRequests(KEY) === 2, "B to see A's first requests");

      await redis.stop();
      // The request path keeps working while Redis is away.
      expect(() => add(a, "during", 4, t())).not.toThrow();
      expect(() => a.tracker.free("freed-during", t())).not.toThrow();
      await until(
        () => a.sync.stats().droppedEvents >= 2,
        "A to drop the events it cannot publish",
      );
      expect(b.tracker.hasRemoteRequest(1n, "during")).toBe(false);

      await redis.restart();
      await until(
        () => a.sync.stats().publishing && b.sync.stats().receiving,
        "A to publish and B to receive again",
        15_000,
      );
      add(a, "after", 1, t());
      await until(
        () => b.tracker.hasRemoteRequest(1n, "after"),
        "B to see an add made after the restart",
        15_000,
      );
      // The outage's add and free reach B through a snapshot (A's seq moved on while B missed it).
      await until(
        () =>
          b.tracker.hasRemoteRequest(1n, "during") &&
          !b.tracker.hasRemoteRequest(1n, "freed-during"),
        "B to repair the missed events",
        15_000,
      );
      expect(b.tracker.activeBlocks(KEY)).toBe(2 + 4 + 1);
      expect(b.sync.stats().snapshotsApplied).toBeGreaterThanOrEqual(1);
      expect(b.sync.stats().reconnects).toBeGreaterThanOrEqual(1);
    }, 30_000);
  });
}
