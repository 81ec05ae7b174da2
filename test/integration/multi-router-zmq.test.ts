/**
 * vLLM workers whose KV events come over ZeroMQ (`--zmq-endpoint URL=tcp://…`,
 * `--zmq-replay-endpoint`): two router processes subscribe to the same publisher (the python
 * stand-in for vLLM's ZmqEventPublisher) and both build the worker's index from its events.
 * The worker's HTTP side is a small vLLM-like server in this test process: no
 * /v1/engine/info and no /kv/query (it counts any request for either), so the routers must
 * not try to restore from it. Needs libzmq5, python3-zmq, python3-msgpack.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { computeBlockHashes } from "../../src/core/block-hash.ts";
import { workerIdFromUrl } from "../../src/core/worker-id.ts";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { startStandInVllm, type StandInVllm } from "../support/stand-in-vllm.ts";
import {
  pythonZmqProblem,
  VllmPublisherProcess,
  type PublisherEvent,
} from "../support/vllm-kv-publisher.ts";
import { BS, indexedTokenHashes, urlOf } from "./multi-router-cluster.ts";

setDefaultTimeout(30_000);

let publisher: VllmPublisherProcess | undefined;
let vllm: StandInVllm | undefined;
let routers: Proc[] = [];
let vllmUrl = "";

const TOKENS = Array.from({ length: 2 * BS }, (_, i) => 7000 + i);

beforeAll(async () => {
  const problem = pythonZmqProblem();
  if (problem) throw new Error(problem);
  vllm = startStandInVllm();
  vllmUrl = vllm.url;
  publisher = await VllmPublisherProcess.start();
  routers = await Promise.all(
    [0, 1].map(() =>
      startMain([
        "serve",
        "--port",
        "0",
        "--host",
        "127.0.0.1",
        "--block-size",
        String(BS),
        "--health-interval",
        "0.2",
        "--zmq-endpoint",
        `${vllmUrl}=${publisher!.pub}`,
        "--zmq-replay-endpoint",
        `${vllmUrl}=${publisher!.replay}`,
      ]),
    ),
  );
});

afterAll(async () => {
  await stopAll(routers);
  await publisher?.stop();
  await vllm?.server.stop(true);
});

/** tokens_hash values of the worker's stored blocks in a router's index. */
const indexed = (routerUrl: string): Promise<Set<bigint>> => indexedTokenHashes(routerUrl, vllmUrl);

/** Publish `events`, then empty batches until `done` holds: a late subscriber sees a seq and replays the rest. */
async function publishUntil(
  events: PublisherEvent[],
  done: () => Promise<boolean>,
  what: string,
): Promise<void> {
  await publisher!.waitSubscriber();
  await publisher!.publish([{ events }]);
  await until(async () => {
    if (await done()) return true;
    await publisher!.publish([{ events: [] }]);
    await Bun.sleep(20);
    return false;
  }, what);
}

describe("vLLM workers over ZMQ", () => {
  test("both routers index the worker's events; neither asked it for /kv/query or a restore", async () => {
    const expected = computeBlockHashes(TOKENS, BS);
    const stored: PublisherEvent = {
      type: "BlockStored",
      block_hashes: [901, 902],
      parent_block_hash: null,
      token_ids: TOKENS,
      block_size: BS,
      lora_id: null,
      medium: "GPU",
    };
    const both = async () => {
      for (const p of routers) {
        const got = await indexed(urlOf(p));
        if (!(got.has(expected[0]!) && got.has(expected[1]!))) return false;
      }
      return true;
    };
    await publishUntil([stored], both, "both routers to index the stored blocks");
    expect(vllm!.hits.get("/kv/query") ?? 0).toBe(0);
    for (const p of routers) {
      const ws = (await (await fetch(`${urlOf(p)}/v1/workers`)).json()) as {
        workers: { id: string; url: string }[];
      };
      expect(ws.workers).toEqual([
        expect.objectContaining({ id: workerIdFromUrl(vllmUrl).toString(), url: vllmUrl }),
      ]);
    }
  });

  test("a request with that prefix is routed with the overlap the events announced", async () => {
    for (const p of routers) {
      await until(
        async () =>
          ((await (await fetch(`${urlOf(p)}/health`)).json()) as { healthy_workers: number })
            .healthy_workers === 1,
        "the worker to pass a health check",
      );
      const r = await fetch(`${urlOf(p)}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", prompt: [...TOKENS, 1, 2, 3], max_tokens: 1 }),
      });
      expect(r.status).toBe(200);
      await r.text();
      expect(r.headers.get("x-switchyard-overlap-blocks")).toBe("2");
    }
  });

  test("AllBlocksCleared empties the worker's part of both indexes", async () => {
    const emptied = async () => {
      for (const p of routers) if ((await indexed(urlOf(p))).size > 0) return false;
      return true;
    };
    await publishUntil(
      [{ type: "AllBlocksCleared" }],
      emptied,
      "both routers to drop the worker's blocks",
    );
    expect(vllm!.hits.get("/kv/query") ?? 0).toBe(0);
  });
});
