/**
 * The simulated engine's prefill histograms (mocker/prefill-stats.ts), as vLLM V1 writes them:
 * recorded when a request finishes, the prefill from taking the lane to the first token and the
 * tokens computed (cached ones left out), read back by the router's engine-metrics reader.
 */
import { describe, expect, test } from "bun:test";
import { readEngineLoad } from "../../../src/fleet/engine-metrics.ts";
import { MockEngine } from "../../../src/mocker/engine.ts";
import { renderMetrics } from "../../../src/mocker/metrics.ts";
import { resolveMockerOptions } from "../../../src/mocker/options.ts";
import { VirtualClock } from "./virtual-clock.ts";

const prompt = (n: number, base = 0) => Uint32Array.from({ length: n }, (_, i) => base + i);
const sink = { start: () => {}, token: () => {} };

describe("MockEngine's vLLM prefill histograms", () => {
  test("two requests on one rank, the second behind the first and half cached: each counts its own prefill, not its wait", async () => {
    const clock = new VirtualClock();
    const engine = new MockEngine({
      // The FIFO lane: b waits behind c without prefilling (v1 would compute both in one step).
      config: resolveMockerOptions({
        scheduler: "fifo",
        blockSize: 4,
        kvBlocks: 64,
        prefillUsPerToken: 1000,
        prefillOverheadMs: 2,
        decodeMsPerStep: 10,
        decodeBatchFactor: 0,
        dpRanks: 2,
      }),
      workerId: 1n,
      clock,
    });
    const a = engine.generate({ tokens: prompt(40), maxTokens: 2, dpRank: 0 }, sink);
    await clock.run();
    await a;
    // 40 tokens (20 cached from a), then b waits behind c: c prefills 8 first.
    const c = engine.generate({ tokens: prompt(8, 1000), maxTokens: 1, dpRank: 0 }, sink);
    const b = engine.generate(
      { tokens: prompt(40).map((t, i) => (i < 20 ? t : t + 5000)), maxTokens: 1, dpRank: 0 },
      sink,
    );
    await clock.run();
    await Promise.all([b, c]);
    const page = renderMetrics(engine);
    const load = readEngineLoad(page, 2);
    // a: 2 + 40 ms; c: 2 + 8 ms; b: 2 + 20 ms (its wait behind c is not prefill).
    expect(load.ranks[0]).toMatchObject({ prefillTokens: 40 + 8 + 20 });
    expect(load.ranks[0]!.prefillSeconds).toBeCloseTo((42 + 10 + 22) / 1000, 9);
    expect(load.ranks[1]).toMatchObject({ prefillSeconds: 0, prefillTokens: 0 });
    // The histogram lines as Prometheus reads them: cumulative buckets, +Inf = count.
    expect(page).toContain(
      'vllm:request_prefill_time_seconds_bucket{engine="0",model_name="switchyard-sim",le="0.3"} 3',
    );
    expect(page).toContain(
      'vllm:request_prefill_time_seconds_bucket{engine="0",model_name="switchyard-sim",le="+Inf"} 3',
    );
    expect(page).toContain(
      'vllm:request_prefill_time_seconds_count{engine="0",model_name="switchyard-sim"} 3',
    );
    expect(page).toContain(
      'vllm:request_prefill_kv_computed_tokens_bucket{engine="0",model_name="switchyard-sim",le="10.0"} 1',
    );
    expect(page).toContain(
      'vllm:request_prefill_kv_computed_tokens_bucket{engine="0",model_name="switchyard-sim",le="20.0"} 2',
    );
    expect(page).toContain(
      'vllm:request_prefill_kv_computed_tokens_bucket{engine="0",model_name="switchyard-sim",le="50.0"} 3',
    );
    expect(page).toContain("# TYPE vllm:request_prefill_kv_computed_tokens histogram");
  });
});
