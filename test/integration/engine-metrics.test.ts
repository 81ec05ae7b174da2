/**
 * The engines' own load (issue 13): the router scrapes the simulated engine's /metrics
 * (it exports vLLM's gauges: vllm:num_requests_running / _waiting / kv_cache_usage_perc, one
 * series per DP rank) and shows them in GET /v1/workers and /metrics; with --busy-waiting 0,
 * a rank whose engine reports a waiting request is busy, and a request arriving while every
 * rank is busy waits in the admission queue until the engine catches up. Real processes:
 * one simulated engine (two ranks, one running sequence each, slow decode) and one router.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

let engine: Proc | undefined;
let router: Proc | undefined;
let routerUrl = "";

interface RankView {
  dp_rank: number;
  running: number | null;
  waiting: number | null;
  kv_usage: number | null;
  busy: boolean;
}
interface WorkerView {
  dp_ranks: number;
  engine_metrics?: { engine: string | null; age_ms?: number; error?: string; ranks: RankView[] };
}

beforeAll(async () => {
  engine = await startMain([
    "mocker",
    "--port",
    "0",
    "--block-size",
    "16",
    "--dp-ranks",
    "2",
    "--max-concurrency",
    "1",
    "--decode-ms-per-step",
    "60",
    "--seed",
    "3",
  ]);
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    "16",
    "--worker",
    String(engine.info.url),
    "--engine-metrics-interval",
    "0.05",
    "--busy-waiting",
    "0",
    "--max-queue",
    "16",
    "--queue-timeout",
    "20",
    // The engine must be idle after registration: no canary sent to it by itself.
    "--canary=false",
  ]);
  routerUrl = String(router.info.url);
  await until(
    async () =>
      ((await (await fetch(`${routerUrl}/health`)).json()) as { healthy_workers: number })
        .healthy_workers === 1,
    "the engine to be healthy",
  );
});

afterAll(async () => {
  await stopAll([router, engine]);
});

async function worker(): Promise<WorkerView> {
  return ((await (await fetch(`${routerUrl}/v1/workers`)).json()) as { workers: WorkerView[] })
    .workers[0]!;
}

function complete(i: number, maxTokens: number): Promise<Response> {
  return fetch(`${routerUrl}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      prompt: `request ${i}: ${"tell me about routers ".repeat(4)}`,
      max_tokens: maxTokens,
    }),
  });
}

describe("engine metrics", () => {
  test("an idle engine's gauges read back per rank through GET /v1/workers", async () => {
    const w = await until(async () => {
      const v = await worker();
      return v.engine_metrics?.engine === "vllm" ? v : undefined;
    }, "the first scrape");
    expect(w.dp_ranks).toBe(2);
    expect(w.engine_metrics!.ranks).toEqual([
      { dp_rank: 0, running: 0, waiting: 0, kv_usage: 0, busy: false },
      { dp_rank: 1, running: 0, waiting: 0, kv_usage: 0, busy: false },
    ]);
    expect(w.engine_metrics!.error).toBeUndefined();
  });

  test("load shows up per rank; every rank busy sends a request to the queue until the engine catches up", async () => {
    // Four at once, before any scrape can see them: two per rank, one running and one waiting each.
    const first = [0, 1, 2, 3].map((i) => complete(i, 20));
    const busyBoth = await until(async () => {
      const v = await worker();
      const rs = v.engine_metrics?.ranks ?? [];
      // A running request holds KV blocks once its prefill started: usage above 0 too.
      return rs.length === 2 &&
        rs.every((r) => r.busy && (r.waiting ?? 0) >= 1 && r.running === 1 && (r.kv_usage ?? 0) > 0)
        ? rs
        : undefined;
    }, "both ranks reported busy (a waiting request each, KV in use)");
    expect(busyBoth.map((r) => r.dp_rank)).toEqual([0, 1]);
    await until(
      async () =>
        /switchyard_engine_load\{worker="\d+",dp_rank="1",metric="waiting"\} [1-9]/.test(
          await (await fetch(`${routerUrl}/metrics`)).text(),
        ),
      "the engine's waiting requests in the router's /metrics",
    );

    // Both ranks still have a queue for ~1 s (20 decode steps of 60 ms ahead): the late one waits in the router.
    const late = complete(9, 1);
    for (const r of [...first, late]) {
      const res = await r;
      expect(res.status).toBe(200);
      await res.text();
    }
    const after = await (await fetch(`${routerUrl}/metrics`)).text();
    expect(after).toMatch(/switchyard_admission_queue_length 0\b/);
    expect(after).toMatch(/switchyard_admission_wait_seconds_count 1\b/); // it was queued, then admitted
  });
});
