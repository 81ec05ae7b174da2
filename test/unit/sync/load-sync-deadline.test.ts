/**
 * The load sync's Redis commands get an off-request-path deadline: a Redis that answers slowly
 * (a busy machine, a distant Upstash region), well inside a hang's second, loses no load event.
 * With a request's 50 ms budget each 200 ms answer timed out, dropped its message and marked the
 * connection down, so the batches behind it were refused too (the integration test
 * test/integration/load-sync.test.ts saw this as droppedEvents > 0 under load).
 * The transport is a stand-in (injected through `pubsub`) whose PUBLISH goes through the real
 * hang guard with the deadline startLoadSync gives it; the slow Redis answers on a timer, and a
 * 200 ms timer always fires before a 1 s one, so the test does not depend on the machine's speed.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { keyOf, worker } from "../../../src/core/ids.ts";
import { loadConfig } from "../../../src/config/load.ts";
import { LoadTracker } from "../../../src/router/books/load-tracker.ts";
import { startSync } from "../../../src/runtime/compose/sync.ts";
import {
  DEFAULT_SYNC_COMMAND_TIMEOUT_MS,
  startLoadSync,
  type LoadSync,
} from "../../../src/sync/load-sync.ts";
import type { RedisConnection } from "../../../src/sync/redis-connection.ts";
import { HangGuardConnection } from "../../../src/sync/redis-guard.ts";
import type {
  PubSubOpener,
  SyncTransport,
  SyncTransportOptions,
} from "../../../src/sync/transport.ts";
import { until } from "../../support/processes.ts";

const W = worker(3n);
const SLOW_MS = 200;

/** A live Redis that answers every command after SLOW_MS. */
function slowRedis(): RedisConnection {
  const later = (v: unknown) =>
    new Promise<unknown>((resolve) => setTimeout(() => resolve(v), SLOW_MS));
  return {
    kind: "resp",
    eval: () => later(null),
    evalsha: () => later(null),
    command: () => later(1),
    close: async () => {},
  };
}

/** Records the options the sync opened its transport with; publishes through the hang guard. */
function slowTransport(seen: SyncTransportOptions[]): PubSubOpener {
  return async (opts) => {
    seen.push(opts);
    const conn = new HangGuardConnection(slowRedis(), { timeoutMs: opts.commandTimeoutMs });
    const transport: SyncTransport = {
      kind: "pubsub",
      receiving: true,
      counters: { reconnects: 0, receiveErrors: 0 },
      publish: async (payload) => void (await conn.command(["PUBLISH", opts.channel, payload])),
      start: async () => {},
      close: () => conn.close(),
    };
    return transport;
  };
}

const open: LoadSync[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.stop()));
});

describe("load sync command deadline", () => {
  test("a Redis answering in 200 ms drops no event: the sync waits up to 1 s, not a request's 50 ms", async () => {
    const seen: SyncTransportOptions[] = [];
    const tracker = new LoadTracker({ blockSize: 16, routerId: 1n });
    tracker.updateWorkers([W]);
    const sync = await startLoadSync({
      url: "redis://127.0.0.1:1",
      pubsub: slowTransport(seen),
      tracker,
      routerId: 1n,
      now: () => 0,
    });
    open.push(sync);
    expect(seen[0]!.commandTimeoutMs).toBe(DEFAULT_SYNC_COMMAND_TIMEOUT_MS);

    // Three rounds: each new event waits behind a slow message in flight.
    for (let i = 0; i < 3; i++) {
      tracker.addRequest(
        {
          requestId: `r-${i}`,
          worker: W,
          seqHashes: BigUint64Array.of(BigInt(i + 1)),
          isl: 16,
          overlap: 0,
        },
        0,
      );
      await until(
        () => sync.stats().publishedEvents + sync.stats().droppedEvents === i + 1,
        `event ${i} to be published or dropped`,
      );
    }
    expect(sync.stats().droppedEvents).toBe(0);
    expect(sync.stats().publishedEvents).toBe(3);
    expect(tracker.activeRequests(keyOf(W))).toBe(3);
  });

  test("the router gives the sync at least that deadline under the default --redis-timeout, and more if asked", async () => {
    for (const [flag, want] of [
      ["0.05", DEFAULT_SYNC_COMMAND_TIMEOUT_MS],
      ["5", 5_000],
    ] as const) {
      const seen: SyncTransportOptions[] = [];
      const config = loadConfig({
        argv: ["--redis", "redis://127.0.0.1:1", "--redis-timeout", flag],
        env: {},
      });
      const tracker = new LoadTracker({ blockSize: 16, routerId: 2n });
      const log = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Parameters<
        typeof startSync
      >[2];
      const sync = await startSync(config, { pubsub: slowTransport(seen) }, log, {
        tracker,
        routerId: 2n,
        now: () => 0,
      });
      if (sync) open.push(sync);
      expect(seen[0]!.commandTimeoutMs).toBe(want);
    }
  });
});
