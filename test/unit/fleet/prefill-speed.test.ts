/**
 * An engine's own prefill speed from its cumulative counters (fleet/prefill-speed.ts), how the
 * metrics page is read for them (engine-metrics.ts, vLLM V1's two histogram sums) and how the
 * scraper hands the speeds on.
 */
import { describe, expect, test } from "bun:test";
import { EngineMetricsScraper } from "../../../src/fleet/engine-metrics-scraper.ts";
import { readEngineLoad } from "../../../src/fleet/engine-metrics.ts";
import { MIN_PREFILL_TOKENS, PrefillSpeeds } from "../../../src/fleet/prefill-speed.ts";

describe("PrefillSpeeds", () => {
  test("the first reading counts from the engine's start; later ones from the last reading", () => {
    const s = new PrefillSpeeds();
    expect(s.update(1n, 0, { seconds: 0.5, tokens: 10_000 })).toBeCloseTo(0.05, 12);
    expect(s.update(1n, 0, { seconds: 0.5 + 0.2 * 5, tokens: 15_000 })).toBeCloseTo(0.2, 12); // it slowed down: 0.2 ms a token since
  });

  test(`fewer than ${MIN_PREFILL_TOKENS} tokens since the last reading give none, and accumulate until there are enough`, () => {
    const s = new PrefillSpeeds();
    expect(s.update(1n, 0, { seconds: 0.04, tokens: 2_000 })).toBeUndefined();
    expect(s.update(1n, 0, { seconds: 0.06, tokens: 3_000 })).toBeUndefined();
    expect(s.update(1n, 0, { seconds: 0.1, tokens: 5_000 })).toBeCloseTo(0.02, 12);
    expect(s.update(1n, 0, { seconds: 0.12, tokens: 6_000 })).toBeUndefined();
  });

  test("counters that go down are a restarted engine's: the next reading counts from zero", () => {
    const s = new PrefillSpeeds();
    expect(s.update(1n, 0, { seconds: 1, tokens: 50_000 })).toBeCloseTo(0.02, 12);
    expect(s.update(1n, 0, { seconds: 0.3, tokens: 6_000 })).toBeCloseTo(0.05, 12);
  });

  test("ranks and workers apart; a worker that left counts from zero when it is back; nonsense is no reading", () => {
    const s = new PrefillSpeeds();
    expect(s.update(1n, 0, { seconds: 0.1, tokens: 5_000 })).toBeCloseTo(0.02, 12);
    expect(s.update(1n, 1, { seconds: 0.3, tokens: 5_000 })).toBeCloseTo(0.06, 12);
    expect(s.update(2n, 0, { seconds: 0.2, tokens: 5_000 })).toBeCloseTo(0.04, 12);
    s.keepOnly(new Set([2n]));
    expect(s.update(1n, 0, { seconds: 0.2, tokens: 10_000 })).toBeCloseTo(0.02, 12); // from zero, not from 5,000
    for (const bad of [
      { seconds: Number.NaN, tokens: 9_000 },
      { seconds: -1, tokens: 9_000 },
      { seconds: 1, tokens: Number.POSITIVE_INFINITY },
    ]) {
      expect(s.update(3n, 0, bad)).toBeUndefined();
    }
    expect(s.update(3n, 0, { seconds: 0, tokens: 9_000 })).toBeUndefined(); // no time at all: not a speed
    expect(() => new PrefillSpeeds(0)).toThrow(/must be >= 1/);
  });
});

/** vLLM V1's two prefill histograms with two DP engines, as its PrometheusStatLogger writes them (buckets cut short). */
const VLLM_PREFILL = `# HELP vllm:request_prefill_time_seconds Histogram of time spent in PREFILL phase for request.
# TYPE vllm:request_prefill_time_seconds histogram
vllm:request_prefill_time_seconds_bucket{engine="0",le="0.3",model_name="m"} 3.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:request_prefill_time_seconds_count{engine="0",model_name="m"} 4.0
vllm:request_prefill_time_seconds_sum{engine="0",model_name="m"} 0.75
vllm:request_prefill_time_seconds_count{engine="1",model_name="m"} 2.0
vllm:request_prefill_time_seconds_sum{engine="1",model_name="m"} 0.5
# HELP vllm:request_prefill_kv_computed_tokens Histogram of new KV tokens computed during prefill (excluding cached tokens).
# TYPE vllm:request_prefill_kv_computed_tokens histogram
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="1.0",model_name="m"} 0.0
vllm:request_prefill_kv_computed_tokens_count{engine="0",model_name="m"} 4.0
vllm:request_prefill_kv_computed_tokens_sum{engine="0",model_name="m"} 25000.0
vllm:request_prefill_kv_computed_tokens_count{engine="1",model_name="m"} 2.0
vllm:request_prefill_kv_computed_tokens_sum{engine="1",model_name="m"} 5000.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
vllm:num_requests_waiting{engine="1",model_name="m"} 0.0
`;

describe("readEngineLoad: vLLM's prefill sums", () => {
  test("each rank's seconds and computed tokens from the two _sum series; buckets and counts are not read", () => {
    const l = readEngineLoad(VLLM_PREFILL, 2);
    expect(l.engine).toBe("vllm");
    expect(l.errors).toEqual([]);
    expect(l.ranks).toEqual([
      { dpRank: 0, waiting: 1, prefillSeconds: 0.75, prefillTokens: 25_000 },
      { dpRank: 1, waiting: 0, prefillSeconds: 0.5, prefillTokens: 5_000 },
    ]);
  });
});

describe("EngineMetricsScraper: prefill speeds", () => {
  test("each scrape hands on every rank with enough prefilled since the last reading; ranks without counters (SGLang) never", async () => {
    let page = VLLM_PREFILL;
    const speeds: [string, number][] = [];
    const s = new EngineMetricsScraper({
      workers: () => [
        { id: 7n, url: "http://a", dpRanks: 2 },
        { id: 8n, url: "http://b", dpRanks: 1 },
      ],
      intervalMs: 100,
      fetch: async (u) =>
        new Response(u === "http://a/metrics" ? page : 'sglang:num_queue_reqs{model_name="m"} 2\n'),
      now: () => 0,
      onPrefillSpeed: (w, ms) => speeds.push([`${w.workerId}:${w.dpRank}`, ms]),
    });
    await s.scrapeAll();
    expect(speeds.map(([k]) => k)).toEqual(["7:0", "7:1"]);
    expect(speeds[0]![1]).toBeCloseTo(0.03, 12);
    expect(speeds[1]![1]).toBeCloseTo(0.1, 12);
    // Rank 0 prefills 5,000 more tokens in 0.25 s; rank 1 nothing.
    page = page
      .replace('engine="0",model_name="m"} 0.75', 'engine="0",model_name="m"} 1.0')
      .replace('engine="0",model_name="m"} 25000.0', 'engine="0",model_name="m"} 30000.0');
    speeds.length = 0;
    await s.scrapeAll();
    expect(speeds).toHaveLength(1);
    expect(speeds[0]![0]).toBe("7:0");
    expect(speeds[0]![1]).toBeCloseTo(0.05, 12);
  });
});
