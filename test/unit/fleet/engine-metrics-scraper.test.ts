import { describe, expect, test } from "bun:test";
import { EngineMetricsScraper } from "../../../src/fleet/engine-metrics-scraper.ts";

const VLLM = (waiting: number) =>
  `vllm:num_requests_waiting{engine="0",model_name="m"} ${waiting}\nvllm:num_requests_running{engine="0",model_name="m"} 1\n`;

describe("EngineMetricsScraper", () => {
  test("one report per worker; failures keep the last load beside the error; stale loads stop counting; removed workers are forgotten", async () => {
    let now = 0;
    const pages = new Map<string, () => Response>([
      ["http://a/metrics", () => new Response(VLLM(3))],
      ["http://b/metrics", () => new Response("nope", { status: 500 })],
    ]);
    let workers = [
      { id: 1n, url: "http://a", dpRanks: 1 },
      { id: 2n, url: "http://b", dpRanks: 1 },
    ];
    const asked: string[] = [];
    const s = new EngineMetricsScraper({
      workers: () => workers,
      intervalMs: 100,
      fetch: async (u, init) => {
        asked.push(u);
        expect(init.signal).toBeDefined(); // every scrape has a deadline
        return pages.get(u)!();
      },
      now: () => now,
    });
    await s.scrapeAll();
    expect(s.report(1n)?.load?.ranks).toEqual([{ dpRank: 0, waiting: 3, running: 1 }]);
    expect(s.report(2n)).toEqual({ error: "HTTP 500" });
    expect([...s.freshLoads()].map(([id]) => id)).toEqual([1n]);

    pages.set("http://a/metrics", () => {
      throw new Error("connection refused");
    });
    now = 50;
    await s.scrapeAll();
    expect(s.report(1n)).toMatchObject({ error: "connection refused", at: 0 });
    expect([...s.freshLoads()]).toHaveLength(1); // 50 ms old: still fresh (stale after 300)
    now = 400;
    expect([...s.freshLoads()]).toHaveLength(0);

    workers = [workers[1]!];
    await s.scrapeAll();
    expect(s.report(1n)).toBeUndefined();
    expect(asked.filter((u) => u === "http://a/metrics")).toHaveLength(2);
  });

  test("a page with vllm:cache_config_info hands each rank's capacity to the books every scrape; a bad value is unknown, logged once; a page without it leaves capacity alone", async () => {
    const info = (blocks: string) =>
      `# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n` +
      `vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="${blocks}"} 1.0\n` +
      `vllm:cache_config_info{block_size="16",engine="1",num_gpu_blocks="${blocks}"} 1.0\n`;
    let page = VLLM(0) + info("2000");
    const handed: string[] = [];
    const warned: string[] = [];
    let workers = [{ id: 7n, url: "http://a", dpRanks: 2 }];
    const s = new EngineMetricsScraper({
      workers: () => workers,
      intervalMs: 100,
      fetch: async () => new Response(page),
      now: () => 0,
      blockSize: 16,
      onKvCapacity: (w, blocks) => handed.push(`${w.workerId}:${w.dpRank}=${blocks}`),
      warn: (m) => warned.push(m),
    });
    await s.scrapeAll();
    expect(handed).toEqual(["7:0=1000", "7:1=1000"]); // 2,000 summed over the two engines
    page = VLLM(0) + info("-1");
    await s.scrapeAll();
    await s.scrapeAll();
    expect(handed.slice(2)).toEqual([
      "7:0=undefined",
      "7:1=undefined",
      "7:0=undefined",
      "7:1=undefined",
    ]);
    expect(warned.filter((w) => w.includes("KV capacity"))).toEqual([
      "worker 7 (http://a): KV capacity: vLLM's vllm:cache_config_info not taken: engine 0: num_gpu_blocks -1 is negative",
      "worker 7 (http://a): KV capacity: vLLM's vllm:cache_config_info not taken: engine 1: num_gpu_blocks -1 is negative",
    ]);
    page = VLLM(0) + info("4000"); // restarted with a larger cache
    await s.scrapeAll();
    expect(handed.slice(6)).toEqual(["7:0=2000", "7:1=2000"]);
    page = VLLM(0); // an engine that does not say
    await s.scrapeAll();
    expect(handed).toHaveLength(8);
    workers = [];
    page = VLLM(0) + info("2000");
    await s.scrapeAll();
    expect(handed).toHaveLength(8); // a removed worker is not scraped
  });

  test("without a block size or a receiver, capacity is not read", async () => {
    const s = new EngineMetricsScraper({
      workers: () => [{ id: 1n, url: "http://a", dpRanks: 1 }],
      intervalMs: 100,
      fetch: async () =>
        new Response(
          VLLM(0) + 'vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="64"} 1.0\n',
        ),
      now: () => 0,
    });
    await s.scrapeAll();
    expect(s.report(1n)?.load?.kvCapacity).toBeUndefined();
  });
});
