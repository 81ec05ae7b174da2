/**
 * A data-parallel vLLM engine (issue 13): two ranks, each with its own KV event publisher
 * (the python stand-in for vLLM's ZmqEventPublisher) on port P + rank and replay port R + rank,
 * as vLLM binds them. The router is told the rank count (--zmq-dp-ranks) and must subscribe
 * to both, index each rank's blocks under that rank, route a prompt to the rank that holds
 * it, and tell the engine the rank the way vLLM's and SGLang's API servers read it
 * (X-data-parallel-rank). The engine's HTTP side is a small vLLM-like server in this test
 * process that records the rank header of every completion. Needs libzmq5, python3-zmq,
 * python3-msgpack.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { computeBlockHashes } from "../../src/core/block-hash.ts";
import { parseJsonBigintSafe } from "../../src/core/json.ts";
import { workerIdFromUrl } from "../../src/core/worker-id.ts";
import { startMain, until, type Proc } from "../support/processes.ts";
import { startStandInVllm, type StandInVllm } from "../support/stand-in-vllm.ts";
import {
  pythonZmqProblem,
  VllmPublisherProcess,
  type PublisherEvent,
} from "../support/vllm-kv-publisher.ts";
import { consecutiveFreePorts } from "./zmq-ports.ts";

setDefaultTimeout(30_000);

const BS = 16;
const RANKS = 2;
const publishers: VllmPublisherProcess[] = [];
let vllm: StandInVllm | undefined;
let router: Proc | undefined;
let vllmUrl = "";
let routerUrl = "";
/** The X-data-parallel-rank header of each completion the engine got, by the prompt's first token. */
const rankSeen = new Map<number, string | null>();

/** Rank r's cached prompt: 2 blocks, distinct per rank. */
const tokensOf = (r: number) => Array.from({ length: 2 * BS }, (_, i) => 10_000 * (r + 1) + i);

beforeAll(async () => {
  const problem = pythonZmqProblem();
  if (problem) throw new Error(problem);
  vllm = startStandInVllm(async (req) => {
    const body = (await req.json()) as { prompt: number[] };
    rankSeen.set(body.prompt[0]!, req.headers.get("x-data-parallel-rank"));
  });
  vllmUrl = vllm.url;
  // vLLM's rule: rank r publishes on port + r (and replays on replay port + r).
  const ports = consecutiveFreePorts(2 * RANKS);
  for (let r = 0; r < RANKS; r++)
    publishers.push(
      await VllmPublisherProcess.start({
        pubPort: ports[0]! + r,
        replayPort: ports[0]! + RANKS + r,
      }),
    );
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
    "--zmq-endpoint",
    `${vllmUrl}=${publishers[0]!.pub}`,
    "--zmq-replay-endpoint",
    `${vllmUrl}=${publishers[0]!.replay}`,
    "--zmq-dp-ranks",
    `${vllmUrl}=${RANKS}`,
  ]);
  routerUrl = String(router.info.url);
});

afterAll(async () => {
  await router?.stop();
  await Promise.all(publishers.map((p) => p.stop()));
  await vllm?.server.stop(true);
});

/** tokens_hash values of the worker's stored blocks on each rank, from the router's index. */
async function indexedByRank(): Promise<Map<number, Set<bigint>>> {
  const dump = parseJsonBigintSafe(await (await fetch(`${routerUrl}/debug/kv/dump`)).text()) as {
    events: {
      worker_id: unknown;
      event: { dp_rank?: number; data: { stored?: { blocks: { tokens_hash: unknown }[] } } };
    }[];
  };
  const out = new Map<number, Set<bigint>>();
  for (const ev of dump.events) {
    if (BigInt(ev.worker_id as bigint) !== workerIdFromUrl(vllmUrl)) continue;
    const set = out.get(ev.event.dp_rank ?? 0) ?? new Set();
    for (const b of ev.event.data.stored?.blocks ?? []) set.add(BigInt(b.tokens_hash as bigint));
    out.set(ev.event.dp_rank ?? 0, set);
  }
  return out;
}

describe("a two-rank vLLM engine over ZMQ", () => {
  test("both ranks are subscribed and indexed, each under its own rank", async () => {
    for (const p of publishers) await p.waitSubscriber();
    const want = [0, 1].map((r) => computeBlockHashes(tokensOf(r), BS));
    const done = async () => {
      const got = await indexedByRank();
      return [0, 1].every((r) => want[r]!.every((h) => got.get(r)?.has(h) === true));
    };
    let n = 0;
    await until(async () => {
      if (await done()) return true;
      // The first batch carries the blocks; later empty ones make a late subscriber replay it.
      for (let r = 0; r < RANKS; r++) {
        const stored: PublisherEvent = {
          type: "BlockStored",
          block_hashes: [r * 100 + 1, r * 100 + 2],
          parent_block_hash: null,
          token_ids: tokensOf(r),
          block_size: BS,
          lora_id: null,
          medium: "GPU",
        };
        await publishers[r]!.publish([{ events: n === 0 ? [stored] : [], dp_rank: r }]);
      }
      n++;
      await Bun.sleep(20);
      return false;
    }, "both ranks' blocks in the index");
    const got = await indexedByRank();
    // Nothing of rank 0 leaked into rank 1 or back.
    expect(want[0]!.some((h) => got.get(1)?.has(h) === true)).toBe(false);
    expect(want[1]!.some((h) => got.get(0)?.has(h) === true)).toBe(false);

    const ws = (await (await fetch(`${routerUrl}/v1/workers`)).json()) as {
      workers: {
        dp_ranks: number;
        kv_events: {
          dp_ranks: number;
          ranks: {
            dp_rank: number;
            endpoint: string;
            connected: boolean;
            last_seq: number;
            batches_lost: number;
          }[];
        };
      }[];
    };
    expect(ws.workers).toHaveLength(1);
    expect(ws.workers[0]!.dp_ranks).toBe(2);
    const kv = ws.workers[0]!.kv_events;
    expect(kv.ranks.map((r) => [r.dp_rank, r.endpoint, r.connected, r.batches_lost])).toEqual([
      [0, publishers[0]!.pub, true, 0],
      [1, publishers[1]!.pub, true, 0],
    ]);
    expect(kv.ranks.every((r) => r.last_seq >= 0)).toBe(true);
  });

  test("a prompt goes to the rank that holds it, and the engine is told the rank (X-data-parallel-rank)", async () => {
    await until(
      async () =>
        ((await (await fetch(`${routerUrl}/health`)).json()) as { healthy_workers: number })
          .healthy_workers === 1,
      "the worker to pass a health check",
    );
    for (const r of [1, 0]) {
      const res = await fetch(`${routerUrl}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-data-parallel-rank": "7" }, // a client's value is replaced
        body: JSON.stringify({ model: "m", prompt: [...tokensOf(r), 1, 2, 3], max_tokens: 1 }),
      });
      expect(res.status).toBe(200);
      await res.text();
      expect(res.headers.get("x-switchyard-dp-rank")).toBe(String(r));
      expect(res.headers.get("x-switchyard-overlap-blocks")).toBe("2");
      expect(rankSeen.get(tokensOf(r)[0]!)).toBe(String(r));
    }
  });

  test("the registration canary on each rank: the stand-in's answers carry no usage, so it proves nothing and no rank leaves exact", async () => {
    type Rank = {
      dp_rank: number;
      state: string;
      canary: { ok: boolean; evidence: string } | null;
    };
    const ranks = await until(
      async () => {
        const { workers } = (await (await fetch(`${routerUrl}/v1/workers`)).json()) as {
          workers: { cache_truth?: Rank[] }[];
        };
        const view = workers[0]?.cache_truth ?? [];
        return view.length === RANKS && view.every((r) => r.canary !== null) ? view : null;
      },
      "a canary result on every rank",
      15_000,
    );
    for (const r of ranks) {
      expect(r.state).toBe("exact");
      expect(r.canary!.ok).toBe(true);
      expect(r.canary!.evidence).toContain("inconclusive: the engine's answer carries no usage");
    }
  });
});
