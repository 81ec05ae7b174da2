import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import type {
  VllmKvSubscriber,
  VllmKvSubscriberOptions,
} from "../../../src/runtime/bun/zmq/subscriber.ts";
import { ZmqEventSources } from "../../../src/runtime/bun/zmq/sources.ts";
import type { RegisterInput } from "../../../src/fleet/membership.ts";
import { WorkerProvisioner } from "../../../src/fleet/provisioner.ts";
import type { WorkerRecord } from "../../../src/fleet/registry.ts";

/** Subscribers that record how they were started; `failAt` makes that endpoint refuse. */
function fakeStart(failAt?: string) {
  const started: VllmKvSubscriberOptions[] = [];
  const stopped: string[] = [];
  const start = async (o: VllmKvSubscriberOptions): Promise<VllmKvSubscriber> => {
    if (o.endpoint === failAt) throw new Error("cannot connect");
    started.push(o);
    let running = true;
    return {
      libzmqVersion: "4.3.4",
      running: () => running,
      session: () => ({ state: "connected", resubscribes: 0 }),
      async stop() {
        running = false;
        stopped.push(o.endpoint);
      },
      stats: () => ({
        live: 3,
        replayed: 1,
        gaps: 1,
        lostBatches: 0,
        restarts: 0,
        replayRequests: 1,
        replayFailures: 0,
        lastSeq: 7,
        malformedFrames: 0,
        batches: 4,
        events: 9,
        decodeErrors: 0,
        handoffs: 2,
        nextEventId: 9n,
        decode: {} as never,
      }),
    };
  };
  return { start, started, stopped };
}

function fakeMembership() {
  const workers = new Map<bigint, WorkerRecord>();
  const inputs: RegisterInput[] = [];
  return {
    workers,
    inputs,
    async register(input: RegisterInput) {
      inputs.push(input);
      const id = input.id ?? 1n;
      const known = workers.get(id);
      if (known) return { worker: known, created: false, warnings: [] };
      const rec: WorkerRecord = {
        id,
        url: input.url,
        dpRanks: input.dpRanks ?? 1,
        healthy: true,
        reason: undefined,
      };
      workers.set(id, rec);
      return { worker: rec, created: true, warnings: [] };
    },
    remove(id: bigint) {
      const rec = workers.get(id);
      if (!rec) throw new RouterError("worker_not_found", "no");
      workers.delete(id);
      return rec;
    },
  };
}

describe("WorkerProvisioner with ZMQ event sources", () => {
  test("kv_events: registered without a /kv/query restore, one subscriber per rank on port + rank", async () => {
    const f = fakeStart();
    const m = fakeMembership();
    const sources = new ZmqEventSources({ blockSize: 16, onEvents: () => {}, start: f.start });
    const p = new WorkerProvisioner({ membership: m, sources });
    await p.register({
      url: "http://w:8000",
      id: 5n,
      kvEvents: {
        endpoint: "tcp://w:5557",
        replayEndpoint: "tcp://w:6000",
        dpRanks: 3,
        topic: "kv",
      },
    });
    expect(m.inputs[0]).toMatchObject({ restore: false, dpRanks: 3 });
    expect(
      f.started.map((o) => [o.endpoint, o.replayEndpoint, o.dpRank, o.topic, o.workerId]),
    ).toEqual([
      ["tcp://w:5557", "tcp://w:6000", 0, "kv", 5n],
      ["tcp://w:5558", "tcp://w:6001", 1, "kv", 5n],
      ["tcp://w:5559", "tcp://w:6002", 2, "kv", 5n],
    ]);
    expect(sources.describe(5n)).toMatchObject({
      dp_ranks: 3,
      ranks: [
        {
          dp_rank: 0,
          connected: true,
          last_seq: 7,
          gaps: 1,
          replays: 1,
          replays_failed: 0,
          replayed_batches: 1,
          batches_lost: 0,
        },
        {},
        {},
      ],
    });
    // Again: no second subscription.
    await p.register({
      url: "http://w:8000",
      id: 5n,
      kvEvents: { endpoint: "tcp://w:5557", dpRanks: 3, topic: "kv" },
    });
    expect(f.started).toHaveLength(3);
    await sources.unsubscribe(5n);
    expect(f.stopped).toHaveLength(3);
    expect(sources.describe(5n)).toBeUndefined();
  });

  test("a rank that cannot subscribe: the others are stopped and the new worker taken out again (503)", async () => {
    const f = fakeStart("tcp://w:5558");
    const m = fakeMembership();
    const p = new WorkerProvisioner({
      membership: m,
      sources: new ZmqEventSources({ blockSize: 16, onEvents: () => {}, start: f.start }),
    });
    const err = await p
      .register({
        url: "http://w:8000",
        id: 6n,
        kvEvents: { endpoint: "tcp://w:5557", dpRanks: 2, topic: "" },
      })
      .catch((e) => e);
    expect((err as RouterError).code).toBe("unavailable");
    expect((err as RouterError).message).toContain("cannot connect");
    expect(f.stopped).toEqual(["tcp://w:5557"]);
    expect(m.workers.size).toBe(0);
  });

  test("--policy approx (eventsUnused): kv_events registers the worker as asked but opens no stream", async () => {
    const f = fakeStart();
    const m = fakeMembership();
    const sources = new ZmqEventSources({ blockSize: 16, onEvents: () => {}, start: f.start });
    const p = new WorkerProvisioner({ membership: m, sources, eventsUnused: true });
    const res = await p.register({
      url: "http://w:8000",
      id: 7n,
      kvEvents: { endpoint: "tcp://w:5557", dpRanks: 2, topic: "" },
    });
    expect(res.created).toBe(true);
    expect(m.inputs[0]).toMatchObject({ restore: false, dpRanks: 2 });
    expect(f.started).toHaveLength(0);
    expect(sources.has(7n)).toBe(false);
    // The spec is still checked: a known worker with other ranks is refused as before.
    await expect(
      p.register({
        url: "http://w:8000",
        id: 7n,
        kvEvents: { endpoint: "tcp://w:5557", dpRanks: 3, topic: "" },
      }),
    ).rejects.toThrow("kv_events.dp_ranks");
  });

  test("no ZMQ here: kv_events is refused; without it, a plain registration with restore", async () => {
    const m = fakeMembership();
    const p = new WorkerProvisioner({ membership: m });
    await expect(
      p.register({ url: "http://w:1", kvEvents: { endpoint: "tcp://w:1", dpRanks: 1, topic: "" } }),
    ).rejects.toThrow("no ZMQ support");
    await p.register({ url: "http://w:1", dpRanks: 2 });
    expect(m.inputs.at(-1)).toMatchObject({ dpRanks: 2, restore: undefined });
  });
});
