/**
 * Batches lost for good on a vLLM ZMQ stream (issue 12 §6): the router subscribes without
 * a replay endpoint, so a lost batch can never come back (as batches lost beyond vLLM's
 * replay buffer). The lost batch removes a block; the router must not keep claiming it
 * (319 such blocks used to stay in the index for good): the rank is wiped at the gap and
 * fills again from the events that follow. Real processes: the python stand-in for vLLM's
 * publisher, a router, and a small vLLM-like HTTP server here. Needs libzmq5, python3-zmq,
 * python3-msgpack.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import type { Server } from "bun";
import { computeBlockHashes } from "../../src/core/block-hash.ts";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";
import {
  pythonZmqProblem,
  VllmPublisherProcess,
  type PublisherEvent,
} from "../support/vllm-kv-publisher.ts";
import { BS, indexedTokenHashes, urlOf } from "../integration/multi-router-cluster.ts";

setDefaultTimeout(30_000);

let publisher: VllmPublisherProcess | undefined;
let vllm: Server<undefined> | undefined;
let router: Proc | undefined;
let vllmUrl = "";

beforeAll(async () => {
  const problem = pythonZmqProblem();
  if (problem) throw new Error(problem);
  vllm = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) =>
      new Response(new URL(req.url).pathname === "/health" ? "ok" : "not found", {
        status: new URL(req.url).pathname === "/health" ? 200 : 404,
      }),
  });
  vllmUrl = `http://127.0.0.1:${vllm.port}`;
  publisher = await VllmPublisherProcess.start();
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    String(BS),
    "--zmq-endpoint",
    `${vllmUrl}=${publisher.pub}`,
  ]);
});

afterAll(async () => {
  await stopAll([router]);
  await publisher?.stop();
  await vllm?.stop(true);
});

const indexed = (): Promise<Set<bigint>> => indexedTokenHashes(urlOf(router!), vllmUrl);

const stored = (hashes: number[], tokens: number[], parent: number | null): PublisherEvent => ({
  type: "BlockStored",
  block_hashes: hashes,
  parent_block_hash: parent,
  token_ids: tokens,
  block_size: BS,
  lora_id: null,
  medium: "GPU",
});

test("a batch lost for good (it removed a block) wipes the rank instead of leaving the block claimed", async () => {
  const first = Array.from({ length: 2 * BS }, (_, i) => 100 + i);
  const later = Array.from({ length: BS }, (_, i) => 900 + i);
  const [a, b] = computeBlockHashes(first, BS);
  const [c] = computeBlockHashes(later, BS);
  await publisher!.waitSubscriber();
  await publisher!.publish([{ events: [stored([1, 2], first, null)] }]);
  await until(async () => (await indexed()).has(b!), "the router to index the first blocks");

  await publisher!.publish([
    { events: [{ type: "BlockRemoved", block_hashes: [2] }], send: false },
  ]); // lost
  await publisher!.publish([{ events: [stored([3], later, null)] }]);
  let last = new Set<bigint>();
  await until(
    async () => (last = await indexed()).has(c!),
    "the router to index the block stored after the loss",
  );
  expect(last.has(b!)).toBe(false); // removed by the lost batch: never claimed again
  expect(last.has(a!)).toBe(false); // the rank was wiped at the gap: cold, not stale
  expect([...last]).toEqual([c!]);
});
