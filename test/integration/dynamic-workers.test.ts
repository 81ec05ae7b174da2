/**
 * A worker registered at run time with its KV event stream (issue 13): the router starts
 * with no workers; POST /v1/workers with `kv_events` subscribes to the engine's publisher
 * (the python stand-in for vLLM's ZmqEventPublisher), its blocks are indexed from the
 * stream and requests are routed on them; DELETE unsubscribes (the publisher sees the
 * subscription go), drops its blocks and forgets it. Needs libzmq5, python3-zmq, python3-msgpack.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { parseJsonBigintSafe } from "../../src/core/json.ts";
import { workerIdFromUrl } from "../../src/core/worker-id.ts";
import { startMain, until, type Proc } from "../support/processes.ts";
import { startStandInVllm, type StandInVllm } from "../support/stand-in-vllm.ts";
import {
  pythonZmqProblem,
  VllmPublisherProcess,
  type PublisherEvent,
} from "../support/vllm-kv-publisher.ts";

setDefaultTimeout(30_000);

const BS = 16;
const TOKENS = Array.from({ length: 3 * BS }, (_, i) => 5000 + i);
let publisher: VllmPublisherProcess | undefined;
let vllm: StandInVllm | undefined;
let router: Proc | undefined;
let vllmUrl = "";
let routerUrl = "";

beforeAll(async () => {
  const problem = pythonZmqProblem();
  if (problem) throw new Error(problem);
  vllm = startStandInVllm();
  vllmUrl = vllm.url;
  publisher = await VllmPublisherProcess.start();
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    String(BS),
    "--health-interval",
    "0.2",
  ]);
  routerUrl = String(router.info.url);
});

afterAll(async () => {
  await router?.stop();
  await publisher?.stop();
  await vllm?.server.stop(true);
});

const post = (body: unknown, base = routerUrl) =>
  fetch(`${base}/v1/workers`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

/** Once the router at `base` counts the worker healthy, one completion on TOKENS (its body read). */
async function completeWhenHealthy(base: string): Promise<Response> {
  await until(
    async () =>
      ((await (await fetch(`${base}/health`)).json()) as { healthy_workers: number })
        .healthy_workers === 1,
    "the worker to pass a health check",
  );
  const res = await fetch(`${base}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", prompt: [...TOKENS, 9], max_tokens: 1 }),
  });
  await res.text();
  return res;
}

async function indexedBlocks(): Promise<number> {
  const dump = parseJsonBigintSafe(await (await fetch(`${routerUrl}/debug/kv/dump`)).text()) as {
    events: { worker_id: unknown; event: { data: { stored?: { blocks: unknown[] } } } }[];
  };
  let n = 0;
  for (const ev of dump.events)
    if (BigInt(ev.worker_id as bigint) === workerIdFromUrl(vllmUrl))
      n += ev.event.data.stored?.blocks.length ?? 0;
  return n;
}

describe("a worker registered at run time with kv_events", () => {
  test("a bad kv_events is a 400 naming the field", async () => {
    const r = await post({ url: vllmUrl, kv_events: { endpoint: "http://nope:1" } });
    expect(r.status).toBe(400);
    const body = (await r.json()) as { error: { message: string } };
    expect(body.error.message).toContain("kv_events.endpoint");
    const typo = await post({ url: vllmUrl, kv_events: { endpoint: publisher!.pub, dp_rank: 2 } });
    expect(((await typo.json()) as { error: { message: string } }).error.message).toContain(
      "kv_events.dp_rank: unknown field",
    );
    const mismatch = await post({
      url: vllmUrl,
      dp_ranks: 2,
      kv_events: { endpoint: publisher!.pub, dp_ranks: 3 },
    });
    expect(mismatch.status).toBe(400);
    expect(((await mismatch.json()) as { error: { message: string } }).error.message).toContain(
      "differ",
    );
    expect(
      ((await (await fetch(`${routerUrl}/v1/workers`)).json()) as { workers: unknown[] }).workers,
    ).toEqual([]);
  });

  test("POST subscribes; its stream fills the index; requests use it", async () => {
    const r = await post({
      url: vllmUrl,
      kv_events: { endpoint: publisher!.pub, replay_endpoint: publisher!.replay },
    });
    expect(r.status).toBe(201);
    await publisher!.waitSubscriber();
    const stored: PublisherEvent = {
      type: "BlockStored",
      block_hashes: [11, 12, 13],
      parent_block_hash: null,
      token_ids: TOKENS,
      block_size: BS,
      lora_id: null,
      medium: "GPU",
    };
    await publisher!.publish([{ events: [stored] }], "map");
    await until(async () => (await indexedBlocks()) === 3, "the stored blocks in the index");
    expect(vllm!.hits.get("/kv/query") ?? 0).toBe(0); // fed by its stream, never restored

    const ws = (await (await fetch(`${routerUrl}/v1/workers`)).json()) as {
      workers: {
        id: string;
        kv_events: {
          endpoint: string;
          replay_endpoint: string;
          ranks: { connected: boolean; last_seq: number; batches: number }[];
        };
      }[];
    };
    const kv = ws.workers[0]!.kv_events;
    expect([kv.endpoint, kv.replay_endpoint]).toEqual([publisher!.pub, publisher!.replay]);
    expect(kv.ranks).toEqual([
      expect.objectContaining({ connected: true, last_seq: 0, batches: 1 }),
    ]);

    const res = await completeWhenHealthy(routerUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-switchyard-overlap-blocks")).toBe("3");
  });

  test("registering it again changes nothing (200, one subscription)", async () => {
    const r = await post({
      url: vllmUrl,
      kv_events: { endpoint: publisher!.pub, replay_endpoint: publisher!.replay },
    });
    expect(r.status).toBe(200);
    const ws = (await (await fetch(`${routerUrl}/v1/workers`)).json()) as {
      workers: { kv_events: { ranks: unknown[] } }[];
    };
    expect(ws.workers[0]!.kv_events.ranks).toHaveLength(1);
  });

  test("a lost batch is replayed from the engine's buffer and shows in the subscription's counters", async () => {
    const more = (hash: number, parent: number, i: number): PublisherEvent => ({
      type: "BlockStored",
      block_hashes: [hash],
      parent_block_hash: parent,
      token_ids: TOKENS.slice(i * BS, (i + 1) * BS).map((t) => t + 100),
      block_size: BS,
      lora_id: null,
      medium: "GPU",
    });
    // seq 1 is buffered but never sent (a lost message); seq 2 arrives and reveals the gap.
    await publisher!.publish(
      [{ events: [more(21, 13, 0)], send: false }, { events: [more(22, 21, 1)] }],
      "map",
    );
    await until(
      async () => (await indexedBlocks()) === 5,
      "both new blocks indexed (the lost one through the replay)",
    );
    const ws = (await (await fetch(`${routerUrl}/v1/workers`)).json()) as {
      workers: {
        kv_events: {
          ranks: {
            last_seq: number;
            gaps: number;
            replays_failed: number;
            replayed_batches: number;
            batches_lost: number;
          }[];
        };
      }[];
    };
    expect(ws.workers[0]!.kv_events.ranks[0]).toMatchObject({
      last_seq: 2,
      gaps: 1,
      replays_failed: 0,
      replayed_batches: 1,
      batches_lost: 0,
    });
  });

  test("a frame past the message limit: /v1/workers shows the session down, the router subscribes again and events flow", async () => {
    type Rank = { connected: boolean; session: string; resubscribes: number };
    const rank = async () =>
      (
        (await (await fetch(`${routerUrl}/v1/workers`)).json()) as {
          workers: { kv_events: { ranks: Rank[] } }[];
        }
      ).workers[0]!.kv_events.ranks[0]!;
    expect(await rank()).toMatchObject({ connected: true, session: "connected", resubscribes: 0 });
    // 80 MiB, past the 64 MiB limit: libzmq ends the session and, by itself, never reconnects.
    // Before: nothing more was ever applied, and this still said connected: true.
    await publisher!.publishOversized(80 * 1024 * 1024);
    await until(
      async () => (await rank()).connected === false,
      "the rank to show its session down",
      5_000,
    );
    await until(
      async () => (await rank()).resubscribes === 1 && (await rank()).connected,
      "a new session",
      10_000,
    );
    await publisher!.waitSubscriber();
    const more: PublisherEvent = {
      type: "BlockStored",
      block_hashes: [31],
      parent_block_hash: 22,
      token_ids: TOKENS.slice(0, BS).map((t) => t + 300),
      block_size: BS,
      lora_id: null,
      medium: "GPU",
    };
    await publisher!.publish([{ events: [more] }], "map");
    await until(
      async () => (await indexedBlocks()) === 6,
      "the next block indexed through the new session",
    );
  });

  test("DELETE unsubscribes, drops its blocks and forgets it; later events are not applied", async () => {
    const id = workerIdFromUrl(vllmUrl).toString();
    const r = await fetch(`${routerUrl}/v1/workers/${id}`, { method: "DELETE" });
    expect(r.status).toBe(200);
    expect(await publisher!.waitUnsubscribed()).toBe(false);
    expect(await indexedBlocks()).toBe(0);
    expect(
      ((await (await fetch(`${routerUrl}/v1/workers`)).json()) as { workers: unknown[] }).workers,
    ).toEqual([]);
    // Nobody listens any more: a new block never reaches the index.
    await publisher!.publish([
      {
        events: [
          {
            type: "BlockStored",
            block_hashes: [14],
            parent_block_hash: 13,
            token_ids: TOKENS.slice(0, BS),
            block_size: BS,
            lora_id: null,
            medium: "GPU",
          },
        ],
      },
    ]);
    const metrics = await (await fetch(`${routerUrl}/metrics`)).text();
    expect(await indexedBlocks()).toBe(0);
    expect(metrics).toContain("switchyard_index_blocks 0");
  });
});

describe("the same registration on a --policy approx router", () => {
  let approx: Proc | undefined;
  afterAll(async () => {
    await approx?.stop();
  });

  test("201, the worker is routable, and no stream is opened (approx would drop every event)", async () => {
    approx = await startMain([
      "serve",
      "--port",
      "0",
      "--host",
      "127.0.0.1",
      "--block-size",
      String(BS),
      "--health-interval",
      "0.2",
      "--policy",
      "approx",
    ]);
    const url = String(approx.info.url);
    const r = await post(
      { url: vllmUrl, kv_events: { endpoint: publisher!.pub, replay_endpoint: publisher!.replay } },
      url,
    );
    expect(r.status).toBe(201);
    const ws = (await (await fetch(`${url}/v1/workers`)).json()) as {
      workers: { url: string; kv_events?: unknown }[];
    };
    expect(ws.workers.map((w) => w.url)).toEqual([vllmUrl]);
    expect(ws.workers[0]!.kv_events).toBeUndefined();
    expect((await completeWhenHealthy(url)).status).toBe(200);
  });
});
