/**
 * Index truth after loss (issue 12 §6), with real processes: a router in front of one
 * simulated engine that pushes its KV events over HTTP.
 * - The engine is killed and started again on the same port while idle: no event says
 *   so, yet the router must drop the old process's blocks before routing to it (the next
 *   request used to get 14 blocks of overlap on an empty cache).
 * - An admin event posted with the engine's next event id must not push the engine's own
 *   event off its id (25 blocks used to go missing for good).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { freePorts, startMain, stopAll, until, type Proc } from "../support/processes.ts";
import {
  BS,
  compareBlocks,
  engineBlocks,
  registerWorkers,
  routerBlocks,
  send,
  startRouter,
  urlOf,
  workers,
} from "../integration/multi-router-cluster.ts";

setDefaultTimeout(30_000);

let router: Proc | undefined;
let engine: Proc | undefined;
let routerUrl = "";
let enginePort: number | undefined;

function startEngine(): Promise<Proc> {
  return startMain([
    "mocker",
    "--port",
    String(enginePort),
    "--router-url",
    routerUrl,
    "--event-batch-ms",
    "2",
    "--block-size",
    String(BS),
    "--seed",
    "1",
    "--decode-ms-per-step",
    "1",
  ]);
}

const cachedOnRouter = async () => (await workers(routerUrl))[0]?.cached_blocks ?? -1;

beforeAll(async () => {
  // The router first, on a port of its own choosing; then the engine, told where to push.
  router = await startRouter([], 0, ["--health-interval", "0.2", "--health-timeout", "0.5"]);
  routerUrl = urlOf(router);
  [enginePort] = freePorts(1);
  engine = await startEngine();
  await registerWorkers(routerUrl, [engine]);
});

afterAll(async () => {
  await stopAll([router, engine]);
});

describe("index truth after loss", () => {
  test("an engine restarted while idle: its old blocks leave the index before it is routed to", async () => {
    // Token ids, not text: text prompts are also matched against the router's own decisions.
    const p = Array.from({ length: 15 * BS }, (_, i) => 1000 + i);
    const first = await send(routerUrl, { prompt: p, max_tokens: 1 });
    expect(first.status).toBe(200);
    await until(
      async () => (await cachedOnRouter()) >= 14,
      "the router to index the first request's blocks",
    );

    engine!.proc.kill("SIGKILL");
    await engine!.proc.exited;
    engine = await startEngine(); // same port, same worker id, an empty cache, no events
    await until(
      async () => (await cachedOnRouter()) === 0,
      "the router to drop the restarted engine's old blocks",
      5_000,
    );
    // The blocks are dropped inside the health check that then marks the worker healthy again
    // (restart-detector.ts): on a busy machine a request sent in between finds no healthy worker.
    await until(
      async () => (await workers(routerUrl))[0]?.healthy === true,
      "the restarted engine to be healthy again",
      5_000,
    );

    const again = await send(routerUrl, { prompt: p, max_tokens: 1 });
    expect(again.status).toBe(200);
    expect(again.overlap).toBe(0);
  });

  test("an admin event with the engine's next id does not drop the engine's own event", async () => {
    const eng = urlOf(engine!);
    const dump = (await (await fetch(`${eng}/kv/query?dp_rank=0`)).json()) as {
      tree_dump: { last_event_id: number | null };
    };
    const nextId = (dump.tree_dump.last_event_id ?? -1) + 1;
    const workerId = String(engine!.info.worker_id ?? (await workers(routerUrl))[0]!.id);
    const forged = [
      {
        worker_id: workerId,
        event: {
          event_id: nextId,
          dp_rank: 0,
          data: {
            stored: { parent_hash: null, blocks: [{ block_hash: 424242, tokens_hash: 424242 }] },
          },
        },
      },
    ];
    const posted = await fetch(`${routerUrl}/v1/kv/events`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(forged),
    });
    expect(await posted.json()).toEqual({ accepted: 1, dropped: 0 });

    const tokens = Array.from({ length: 25 * BS }, (_, i) => 5000 + i);
    const res = await send(routerUrl, { prompt: tokens, max_tokens: 1 }); // the engine's event nextId: 25 blocks
    expect(res.status).toBe(200);
    let last = "";
    await until(
      async () => {
        const truth = await engineBlocks([eng]);
        const indexed = await routerBlocks(routerUrl);
        const missing = [...truth].filter((b) => !indexed.has(b));
        last = `${compareBlocks(truth, indexed).detail}; missing from the router: ${missing.length}`;
        return truth.size >= 25 && missing.length === 0;
      },
      () => `every block of the engine to be in the router's index (${last})`,
      5_000,
    );
    expect((await routerBlocks(routerUrl)).has(`${workerId}/424242/424242`)).toBe(true); // the admin event applied too
  });
});
