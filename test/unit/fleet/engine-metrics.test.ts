import { describe, expect, test } from "bun:test";
import {
  busyEngineRanks,
  isEngineBusy,
  readEngineLoad,
} from "../../../src/fleet/engine-metrics.ts";
import { readSamples } from "../../../src/fleet/prometheus-text.ts";

/** The shape vLLM V1's PrometheusStatLogger exposes with two DP engines behind one API server (labels engine, model_name). */
const VLLM_DP2 = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
vllm:num_requests_running{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.0
vllm:num_requests_waiting{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.92
vllm:kv_cache_usage_perc{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.125
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 12.0
`;

/** vLLM before 0.10: the usage gauge was vllm:gpu_cache_usage_perc, no engine label. */
const VLLM_OLD = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 2.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 1.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.5
`;

/** SGLang's SchedulerMetricsCollector gauges (model_name label; no rank label with one scheduler). */
const SGLANG = `# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="Qwen/Qwen3-8B"} 8.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="Qwen/Qwen3-8B"} 0.52
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="Qwen/Qwen3-8B"} 4.0
sglang:cache_hit_rate{model_name="Qwen/Qwen3-8B"} 0.28
`;

describe("readSamples (Prometheus text, strict, only what is asked)", () => {
  test("labels, escapes, timestamps, special values; other metrics untouched", () => {
    const text = [
      '# HELP a_b help with "quotes"',
      'a_b{x="1",y="q\\"uote\\\\d\\nn"} 1.5e2 1700000000000',
      "a_b 7",
      'a_b{z="w",} +Inf',
      "a_b NaN",
      "other{x=broken} 3",
      "",
    ].join("\n");
    const { samples, errors } = readSamples(text, new Set(["a_b"]));
    expect(errors).toEqual([]);
    expect(samples.map((s) => [s.labels, s.value])).toEqual([
      [{ x: "1", y: 'q"uote\\d\nn' }, 150],
      [{}, 7],
      [{ z: "w" }, Infinity],
      [{}, NaN],
    ]);
  });

  test("a malformed line of a wanted metric is reported, not guessed", () => {
    const { samples, errors } = readSamples(
      'm{x=1} 3\nm{x="1"} abc\nm{x="1" 3\nm 1 2 3\nm 4\n',
      new Set(["m"]),
    );
    expect(samples.map((s) => s.value)).toEqual([4]);
    expect(errors).toHaveLength(4);
    expect(errors[0]).toContain("must be quoted");
  });
});

describe("readEngineLoad", () => {
  test("vLLM with two DP engines: one load per rank from the engine label", () => {
    const l = readEngineLoad(VLLM_DP2, 2);
    expect(l.engine).toBe("vllm");
    expect(l.ranks).toEqual([
      { dpRank: 0, running: 3, waiting: 7, kvUsage: 0.92 },
      { dpRank: 1, running: 1, waiting: 0, kvUsage: 0.125 },
    ]);
    expect(l.errors).toEqual([]);
  });

  test("old vLLM names are read; an unlabelled series counts for every rank", () => {
    expect(readEngineLoad(VLLM_OLD, 1).ranks).toEqual([
      { dpRank: 0, running: 2, waiting: 1, kvUsage: 0.5 },
    ]);
    expect(readEngineLoad(VLLM_OLD, 2).ranks.map((r) => r.waiting)).toEqual([1, 1]);
    // Both usage names: the current one wins.
    const both = VLLM_OLD + 'vllm:kv_cache_usage_perc{model_name="m"} 0.25\n';
    expect(readEngineLoad(both, 1).ranks[0]!.kvUsage).toBe(0.25);
  });

  test("SGLang: queue length, running requests, token usage", () => {
    const l = readEngineLoad(SGLANG, 1);
    expect(l.engine).toBe("sglang");
    expect(l.ranks).toEqual([{ dpRank: 0, running: 8, waiting: 4, kvUsage: 0.52 }]);
    const ranked = readEngineLoad(
      'sglang:num_queue_reqs{dp_rank="1"} 5\nsglang:num_queue_reqs{dp_rank="0"} 2\n',
      2,
    );
    expect(ranked.ranks.map((r) => r.waiting)).toEqual([2, 5]);
  });

  test("no engine names: engine undefined, no numbers; ranks beyond dpRanks ignored", () => {
    const l = readEngineLoad("process_cpu_seconds_total 3\n", 1);
    expect(l.engine).toBeUndefined();
    expect(l.ranks).toEqual([{ dpRank: 0 }]);
    expect(readEngineLoad(VLLM_DP2, 1).ranks).toEqual([
      { dpRank: 0, running: 3, waiting: 7, kvUsage: 0.92 },
    ]);
  });
});

describe("readEngineLoad: the KV capacity on the same page", () => {
  const CACHE_INFO = `# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.9",num_cpu_blocks="None",num_gpu_blocks="4096",sliding_window="None"} 1.0
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="1",gpu_memory_utilization="0.9",num_cpu_blocks="None",num_gpu_blocks="4096",sliding_window="None"} 1.0
`;

  test("with the router's block size, vllm:cache_config_info comes back beside the load, which it does not change", () => {
    const l = readEngineLoad(VLLM_DP2 + CACHE_INFO, 2, 32);
    expect(l.ranks).toEqual(readEngineLoad(VLLM_DP2, 2).ranks);
    expect(l.errors).toEqual([]);
    // 4,096 blocks of 16 tokens summed over 2 engines = 1,024 blocks of 32 tokens each.
    expect(l.kvCapacity?.byRank).toEqual(
      new Map([
        [0, 1024],
        [1, 1024],
      ]),
    );
  });

  test("without a block size, or on a page without the gauge, there is no capacity", () => {
    expect(readEngineLoad(VLLM_DP2 + CACHE_INFO, 2).kvCapacity).toBeUndefined();
    expect(readEngineLoad(VLLM_DP2, 2, 16).kvCapacity).toBeUndefined();
    expect(readEngineLoad(SGLANG, 1, 16).kvCapacity).toBeUndefined();
  });

  test("a malformed capacity line is the capacity's problem, not the load's error", () => {
    const l = readEngineLoad(
      VLLM_DP2 + 'vllm:cache_config_info{num_gpu_blocks="4096" 1.0\n',
      2,
      16,
    );
    expect(l.errors).toEqual([]);
    expect(l.kvCapacity?.problems[0]).toContain("unreadable line");
  });
});

describe("busy from engine metrics", () => {
  test("KV usage past --busy-threshold or waiting past --busy-waiting; limits off = never busy", () => {
    expect(isEngineBusy({ dpRank: 0, kvUsage: 0.95 }, { kvUsage: 0.9 })).toBe(true);
    expect(isEngineBusy({ dpRank: 0, kvUsage: 0.9 }, { kvUsage: 0.9 })).toBe(false);
    expect(isEngineBusy({ dpRank: 0, waiting: 3 }, { waiting: 2 })).toBe(true);
    expect(isEngineBusy({ dpRank: 0, waiting: 3, kvUsage: 1 }, {})).toBe(false);
    const load = readEngineLoad(VLLM_DP2, 2);
    expect([...busyEngineRanks([[5n, load]], { kvUsage: 0.9 })]).toEqual(["5:0"]);
    expect([...busyEngineRanks([[5n, load]], { waiting: 10 })]).toEqual([]);
    expect([...busyEngineRanks([[5n, load]], {})]).toEqual([]);
  });
});
