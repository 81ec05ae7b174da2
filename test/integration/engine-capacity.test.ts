/**
 * A real engine's KV capacity reaches the router's load books (the time-based kv caps its credit
 * with it): two stand-in engines, real HTTP servers on free ports in this process, speak what vLLM
 * and SGLang serve (vLLM: no /v1/engine/info, `vllm:cache_config_info` on /metrics with two DP
 * engines; SGLang: no /v1/engine/info, `max_total_num_tokens` in GET /get_server_info). They are
 * registered through the router's own composition (src/runtime/compose/, real fetch), and the
 * books are read where the scheduler reads them (the tracker's per-rank slot). Then the Bun
 * runtime's metrics scrape (src/runtime/bun/engine-load.ts, wired as src/runtime/bun.ts wires it)
 * hands the vLLM engine's new capacity over after it "restarts" with a larger cache.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { loadConfig } from "../../src/config/load.ts";
import { portableBatchHasher } from "../../src/core/block-hash.ts";
import { createLogger } from "../../src/observe/logger.ts";
import { composeRouter, type ComposedRouter } from "../../src/runtime/compose/index.ts";
import { EngineLoad } from "../../src/runtime/bun/engine-load.ts";
import { until } from "../support/processes.ts";

setDefaultTimeout(20_000);

/** vLLM's page with two DP engines behind one API server: num_gpu_blocks is their sum. */
function vllmMetrics(numGpuBlocks: number): string {
  const series = (engine: number) =>
    `vllm:cache_config_info{block_size="16",cache_dtype="auto",calculate_kv_scales="False",cpu_offload_gb="0",enable_prefix_caching="True",` +
    `engine="${engine}",gpu_memory_utilization="0.9",is_attention_free="False",num_cpu_blocks="None",num_gpu_blocks="${numGpuBlocks}",` +
    `num_gpu_blocks_override="None",prefix_caching_hash_algo="sha256",sliding_window="None",swap_space="4",swap_space_bytes="4294967296"} 1.0\n`;
  return `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 0.0
vllm:num_requests_running{engine="1",model_name="m"} 0.0
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
${series(0)}${series(1)}`;
}

let vllmBlocks = 8_000;
const served: ReturnType<typeof Bun.serve>[] = [];
function standIn(routes: Record<string, () => Response>): string {
  const s = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) =>
      (
        routes[`${req.method} ${new URL(req.url).pathname}`] ??
        (() => new Response("not found", { status: 404 }))
      )(),
  });
  served.push(s);
  return `http://127.0.0.1:${s.port}`;
}

let c: ComposedRouter;
const logLines: string[] = [];
let vllmUrl = "";
let sglangUrl = "";
let badUrl = "";

beforeAll(async () => {
  vllmUrl = standIn({
    "GET /health": () => new Response(null, { status: 200 }),
    "GET /metrics": () =>
      new Response(vllmMetrics(vllmBlocks), {
        headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
      }),
  });
  sglangUrl = standIn({
    "GET /health": () => new Response(null, { status: 200 }),
    "GET /get_server_info": () =>
      Response.json({
        model_path: "Qwen/Qwen3-8B",
        page_size: 1,
        dp_size: 1,
        max_total_num_tokens: 163_840,
        max_req_input_len: 40954,
        internal_states: [{}],
        version: "0.5.4",
      }),
  });
  // An engine whose report no cache can have: the books stay unknown and the log says why.
  badUrl = standIn({ "GET /get_server_info": () => Response.json({ max_total_num_tokens: -1 }) });
  const config = loadConfig({
    argv: ["--block-size", "16", "--health-interval", "60", "--engine-metrics-interval", "0.05"],
    env: {},
  });
  c = await composeRouter(
    config,
    {
      hasher: portableBatchHasher,
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      localHosts: () => ["127.0.0.1"],
    },
    createLogger("info", (l) => logLines.push(l)),
  );
});

afterAll(async () => {
  c?.stopWork();
  await c?.close();
  for (const s of served) s.stop(true);
});

function capacity(url: string, dpRank: number): number | undefined {
  const w = c.registry.list().find((x) => x.url === url)!;
  return c.router.tracker.slotOf(`${w.id}:${dpRank}`)?.kvCapacityBlocks;
}

describe("a real engine's KV capacity in the router's books", () => {
  test("registration asks vLLM's /metrics and SGLang's server info; a value no cache can have stays unknown, logged", async () => {
    await c.membership.register({ url: vllmUrl, dpRanks: 2 });
    await c.membership.register({ url: sglangUrl });
    await c.membership.register({ url: badUrl });
    // vLLM: 8,000 blocks of 16 tokens summed over its two engines.
    expect([capacity(vllmUrl, 0), capacity(vllmUrl, 1)]).toEqual([4_000, 4_000]);
    // SGLang: 163,840 tokens in 16-token blocks.
    expect(capacity(sglangUrl, 0)).toBe(10_240);
    expect(capacity(badUrl, 0)).toBeUndefined();
    expect(
      logLines.some((l) => l.includes("KV capacity") && l.includes("-1 tokens is negative")),
    ).toBe(true);
  });

  test("the metrics scrape hands a changed capacity over (an engine restarted with a larger cache)", async () => {
    const engineLoad = new EngineLoad();
    const config = loadConfig({
      argv: ["--block-size", "16", "--engine-metrics-interval", "0.05"],
      env: {},
    });
    engineLoad.wire(config, {
      workers: () => c.registry.list(),
      engineHeaders: {},
      admission: c.admission,
      metrics: c.metrics,
      now: c.now,
      log: createLogger("error", () => {}),
      kvCapacity: (w, blocks) =>
        void (c.registry.has(w.workerId) && c.router.members.setKvCapacity(w, blocks)),
    });
    vllmBlocks = 12_000;
    engineLoad.start();
    try {
      await until(
        async () => (capacity(vllmUrl, 0) === 6_000 && capacity(vllmUrl, 1) === 6_000) || undefined,
        "the scraped capacity in the books",
      );
      // SGLang's page says nothing about capacity: what registration found stays.
      expect(capacity(sglangUrl, 0)).toBe(10_240);
    } finally {
      engineLoad.stop();
    }
  });
});
