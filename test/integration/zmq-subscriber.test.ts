/**
 * The ZeroMQ KV event subscriber against a real publisher process (a python stand-in for
 * vLLM's ZmqEventPublisher: PUB + ROUTER replay, msgspec-identical payloads), through
 * Debian's libzmq5 over bun:ffi. Needs: apt-get install -y libzmq5 python3-zmq python3-msgpack.
 */
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import {
  clearedEvent,
  removedEvent,
  storedEvent,
  type RouterEvent,
} from "../../src/core/events.ts";
import { computeBlockHashes } from "../../src/core/block-hash.ts";
import {
  startVllmKvSubscriber,
  type VllmKvSubscriber,
  type VllmKvSubscriberOptions,
} from "../../src/runtime/bun/zmq/subscriber.ts";
import { until } from "../support/processes.ts";
import {
  pythonZmqProblem,
  VllmPublisherProcess,
  type PublisherBatch,
  type PublisherEvent,
} from "../support/vllm-kv-publisher.ts";

const W = 4242n;
const BS = 16;
const U64_MAX = 2n ** 64n - 1n;
/** sha256(b"block"), and what vLLM's int mode makes of it (its last 8 bytes, big-endian). */
const SHA_HEX = "496aca80e4d8f29fb8e8cd816c3afb48d3f103970b3a2ee1600c08ca67326dee";
const SHA_U64 = 6920916392769383918n;

const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);

function stored(
  hashes: (number | string)[],
  parent: number | string | null,
  tokens: number[],
  lora: string | null = null,
): PublisherEvent {
  return {
    type: "BlockStored",
    block_hashes: hashes,
    parent_block_hash: parent,
    token_ids: tokens,
    block_size: BS,
    lora_id: null,
    medium: "GPU",
    lora_name: lora,
  };
}
const removed = (hashes: (number | string)[]): PublisherEvent => ({
  type: "BlockRemoved",
  block_hashes: hashes,
  medium: "GPU",
});
const cleared: PublisherEvent = { type: "AllBlocksCleared" };

/** A Stored RouterEvent the way the router must see it: engine hashes + tokens_hash from §2.2. */
function expectStored(
  id: bigint,
  hashes: bigint[],
  parent: bigint | null,
  tokens: number[],
  lora?: string,
  dpRank = 0,
): RouterEvent {
  const local = computeBlockHashes(tokens, BS, { loraName: lora });
  return storedEvent(
    W,
    id,
    hashes.map((h, i) => ({ blockHash: h, tokensHash: local[i]! })),
    parent,
    dpRank,
  );
}

const procs: VllmPublisherProcess[] = [];
const subs: VllmKvSubscriber[] = [];

async function publisher(opts?: {
  pubPort?: number;
  replayPort?: number;
}): Promise<VllmPublisherProcess> {
  const p = await VllmPublisherProcess.start(opts);
  procs.push(p);
  return p;
}

async function subscriber(p: VllmPublisherProcess, extra: Partial<VllmKvSubscriberOptions> = {}) {
  const got: RouterEvent[] = [];
  const warnings: string[] = [];
  const sub = await startVllmKvSubscriber({
    endpoint: p.pub,
    replayEndpoint: p.replay,
    workerId: W,
    blockSize: BS,
    onEvents: (evs) => got.push(...evs),
    log: { info: () => {}, warn: (m) => warnings.push(m) },
    ...extra,
  });
  subs.push(sub);
  await p.waitSubscriber();
  const waitFor = (n: number) =>
    until(
      () => got.length >= n,
      () =>
        `${n} events (have ${got.length}; ${JSON.stringify(sub.stats(), (_, v) => (typeof v === "bigint" ? String(v) : v))})`,
    );
  return { sub, got, warnings, waitFor };
}

beforeAll(() => {
  const problem = pythonZmqProblem();
  if (problem !== undefined)
    throw new Error(`the ZeroMQ integration tests need a python publisher: ${problem}`);
});

afterEach(async () => {
  await Promise.all(subs.splice(0).map((s) => s.stop()));
  await Promise.all(procs.splice(0).map((p) => p.stop()));
});

/** Three batches: two Stored (int hashes incl. u64 max and a negative i64; a sha256 bytes hash with a LoRA), then Removed + Cleared in one batch. */
const SCENARIO: PublisherBatch[] = [
  { events: [stored(["int:18446744073709551615", "int:-5"], null, range(0, 32))] },
  { events: [stored([`hex:${SHA_HEX}`], "int:-5", range(32, 48), "adapter-a")] },
  { events: [removed(["int:-5"]), cleared], dp_rank: 0 },
];
const SCENARIO_EVENTS: RouterEvent[] = [
  expectStored(0n, [U64_MAX, U64_MAX - 4n], null, range(0, 32)),
  expectStored(1n, [SHA_U64], U64_MAX - 4n, range(32, 48), "adapter-a"),
  removedEvent(W, 2n, [U64_MAX - 4n]),
  clearedEvent(W, 3n),
];

describe("startVllmKvSubscriber with a vLLM-style publisher", () => {
  for (const format of ["array", "map"] as const) {
    test(`live batches (${format === "array" ? "positional events, vLLM ≈0.10" : "map events, newer vLLM"}) become RouterEvents with dense ids`, async () => {
      const p = await publisher();
      const { sub, got, waitFor } = await subscriber(p);
      expect(await p.publish(SCENARIO, format)).toEqual([0, 1, 2]);
      await waitFor(4);
      expect(got).toEqual(SCENARIO_EVENTS);
      expect(sub.stats()).toMatchObject({
        live: 3,
        replayed: 0,
        gaps: 0,
        lostBatches: 0,
        batches: 3,
        events: 4,
        nextEventId: 4n,
      });
    });
  }

  test("a message the subscriber missed is replayed from the ROUTER socket before the next live batch", async () => {
    const p = await publisher();
    const { sub, got, waitFor } = await subscriber(p);
    await p.publish([SCENARIO[0]!, { ...SCENARIO[1]!, send: false }, SCENARIO[2]!]);
    await waitFor(4);
    expect(got).toEqual(SCENARIO_EVENTS);
    expect(sub.stats()).toMatchObject({
      live: 2,
      replayed: 1,
      gaps: 1,
      lostBatches: 0,
      replayRequests: 1,
    });
  });

  test("a late joiner gets the history still in the publisher's replay buffer", async () => {
    const p = await publisher();
    await p.publish(SCENARIO.slice(0, 2)); // nobody listens yet
    const { sub, got, waitFor } = await subscriber(p);
    await p.publish([SCENARIO[2]!]);
    await waitFor(4);
    expect(got).toEqual(SCENARIO_EVENTS);
    expect(sub.stats()).toMatchObject({ live: 1, replayed: 2, gaps: 0, lostBatches: 0 });
  });

  test("without a replay endpoint a lost batch shows as an id gap of one", async () => {
    const p = await publisher();
    const { sub, got, warnings, waitFor } = await subscriber(p, { replayEndpoint: undefined });
    await p.publish([SCENARIO[0]!, { ...SCENARIO[1]!, send: false }, SCENARIO[2]!]);
    await waitFor(3);
    expect(got.map((e) => [e.event.eventId, e.event.data.type])).toEqual([
      [0n, "stored"],
      [2n, "removed"],
      [3n, "cleared"],
    ]);
    expect(sub.stats()).toMatchObject({ gaps: 1, lostBatches: 1, replayRequests: 0 });
    expect(warnings.some((w) => w.includes("lost"))).toBe(true);
  });

  test("a restarted engine (seq back at 0 on the same endpoint) is cleared before its new events", async () => {
    const first = await publisher();
    const ports = {
      pubPort: Number(first.pub.split(":").pop()),
      replayPort: Number(first.replay.split(":").pop()),
    };
    const { sub, got, waitFor } = await subscriber(first, { dpRank: 1 });
    await first.publish([SCENARIO[0]!, SCENARIO[0]!, SCENARIO[0]!]); // seqs 0..2
    await waitFor(3);
    await first.stop();

    const second = await publisher(ports);
    await second.waitSubscriber(); // the SUB reconnects and subscribes again by itself
    await second.publish([{ events: [stored([7], null, range(0, 16))] }]); // seq 0 again
    await waitFor(5);
    expect(got.slice(3)).toEqual([
      clearedEvent(W, 3n, 1),
      expectStored(4n, [7n], null, range(0, 16), undefined, 1),
    ]);
    expect(sub.stats().restarts).toBe(1);
  });

  test("the batch's data_parallel_rank is the events' rank", async () => {
    const p = await publisher();
    const { got, waitFor } = await subscriber(p, { dpRank: 0 });
    await p.publish([{ events: [cleared], dp_rank: 3 }]);
    await waitFor(1);
    expect(got).toEqual([clearedEvent(W, 0n, 3)]);
  });

  test("events of another block size, or of a medium no engine holds, are counted and never reach the router; a CPU tier's do, with their medium", async () => {
    const p = await publisher();
    const { sub, got, waitFor } = await subscriber(p);
    await p.publish([
      {
        events: [
          { ...stored([1], null, range(0, 32)), block_size: 32 } as PublisherEvent,
          { ...removed([1]), medium: "CPU" } as PublisherEvent,
          { ...removed([2]), medium: "EXTERNAL" } as PublisherEvent,
        ],
      },
      { events: [cleared] },
    ]);
    await waitFor(2);
    expect(got).toEqual([removedEvent(W, 0n, [1n], 0, "cpu"), clearedEvent(W, 1n)]);
    expect(sub.stats().decode).toMatchObject({ blockSizeMismatch: 1, otherMedium: 1, tier: 1 });
  });

  test("a frame over the message limit ends the session: subscribed again on a new socket, and events flow again (a gap replayed as usual)", async () => {
    const p = await publisher();
    const { sub, got, warnings, waitFor } = await subscriber(p, {
      maxMessageBytes: 64 * 1024,
      deadSessionMs: 300,
    });
    await p.publish([SCENARIO[0]!]);
    await waitFor(1);
    await until(() => sub.session().state === "connected", "the session to show connected");
    // Before: libzmq ended the session for good (it does not reconnect after a protocol
    // error), nothing more ever arrived, and the subscription still showed connected.
    await p.publishOversized(1024 * 1024);
    await until(
      () => sub.session().resubscribes === 1,
      () => `a new subscription (session ${JSON.stringify(sub.session())})`,
      5_000,
    );
    expect(warnings.some((w) => w.includes("subscribing again"))).toBe(true);
    await p.waitSubscriber();
    await until(() => sub.session().state === "connected", "the new session to show connected");
    // The next batch never reaches the new session (lost), the one after does: the gap is
    // replayed from the ROUTER socket, as on any session.
    await p.publish([{ ...SCENARIO[1]!, send: false }, SCENARIO[2]!]);
    await waitFor(4);
    expect(got).toEqual(SCENARIO_EVENTS);
    expect(sub.stats().malformedFrames).toBe(0);
  });

  test("a frame declaring more than the default limit never costs its size: the session is replaced, memory flat", async () => {
    const p = await publisher();
    const { sub, waitFor, got } = await subscriber(p, { deadSessionMs: 300 });
    await p.publish([SCENARIO[0]!]);
    await waitFor(1);
    const rss = process.memoryUsage().rss;
    await p.publishOversized(80 * 1024 * 1024); // past the 64 MiB default
    await until(() => sub.session().resubscribes === 1, "a new subscription", 10_000);
    expect(process.memoryUsage().rss - rss).toBeLessThan(64 * 1024 * 1024);
    await p.waitSubscriber();
    await p.publish([SCENARIO[1]!]);
    await waitFor(2);
    expect(got.length).toBe(2);
  }, 30_000);

  test("stop() closes the sockets: the publisher loses its subscriber", async () => {
    const p = await publisher();
    const { sub } = await subscriber(p);
    await sub.stop();
    await sub.stop(); // idempotent
    expect(await p.waitUnsubscribed()).toBe(false);
  });
});

describe("startVllmKvSubscriber without libzmq", () => {
  test("start fails with a message naming the package to install", async () => {
    const start = startVllmKvSubscriber({
      endpoint: "tcp://127.0.0.1:1",
      workerId: W,
      blockSize: BS,
      onEvents: () => {},
      libzmqPath: "/nonexistent/libzmq.so.5",
    });
    await expect(start).rejects.toThrow("apt-get install -y libzmq5");
  });
});
