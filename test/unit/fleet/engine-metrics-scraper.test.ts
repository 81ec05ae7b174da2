import { describe, expect, test } from "bun:test";
import { EngineMetricsScraper } from "../../../src/fleet/engine-metrics-scraper.ts";

const VLLM = (waiting: number) => `vllm:num_requests_waiting{engine="0",model_name="m"} ${waiting}\nvllm:num_requests_running{engine="0",model_name="m"} 1\n`;

describe("EngineMetricsScraper", () => {
  test("one report per worker; failures keep the last load beside the error; stale loads stop counting; removed workers are forgotten", async () => {
    let now = 0;
    const pages = new Map<string, () => Response>([
      ["http://a/metrics", () => new Response(VLLM(3))],
      ["http://b/metrics", () => new Response("nope", { status: 500 })],
    ]);
    let workers = [{ id: 1n, url: "http://a", dpRanks: 1 }, { id: 2n, url: "http://b", dpRanks: 1 }];
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

    pages.set("http://a/metrics", () => { throw new Error("connection refused"); });
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
});
