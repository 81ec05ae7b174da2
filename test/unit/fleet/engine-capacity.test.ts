/**
 * Reading the engines' own KV capacity (src/fleet/engine-capacity.ts) from text in their real
 * formats: vLLM's `vllm:cache_config_info` as prometheus_client writes it (HELP/TYPE lines, label
 * names sorted, every CacheConfig field as Python's str(), "None" for unset, value 1.0), and
 * SGLang's server info JSON.
 */
import { describe, expect, test } from "bun:test";
import {
  blocksFromTokens,
  capacityOfRank,
  checkedBlocks,
  MAX_KV_TOKENS_PER_RANK,
  readSglangKvCapacity,
  readVllmKvCapacity,
  type KvCapacityReading,
} from "../../../src/fleet/engine-capacity.ts";

const HEAD = `# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
`;

/**
 * vLLM 0.10/0.11 behind one API server with two DP engines: one series per `engine`, both with the
 * API server's num_gpu_blocks, the sum of the two engines' 16,608 blocks of 16 tokens.
 */
function vllmDp(engines: readonly string[], numGpuBlocks: string, blockSize = "16"): string {
  return (
    HEAD +
    engines
      .map(
        (e) =>
          `vllm:cache_config_info{block_size="${blockSize}",cache_dtype="auto",calculate_kv_scales="False",cpu_kvcache_space_bytes="None",` +
          `cpu_offload_gb="0",enable_prefix_caching="True",engine="${e}",gpu_memory_utilization="0.9",is_attention_free="False",` +
          `kv_cache_memory_bytes="None",kv_offloading_backend="None",kv_offloading_size="None",kv_sharing_fast_prefill="False",` +
          `mamba_cache_dtype="auto",mamba_page_size_padded="None",mamba_ssm_cache_dtype="auto",num_cpu_blocks="None",` +
          `num_gpu_blocks="${numGpuBlocks}",num_gpu_blocks_override="None",prefix_caching_hash_algo="sha256",sliding_window="None",` +
          `swap_space="4",swap_space_bytes="4294967296"} 1.0\n`,
      )
      .join("") +
    `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
`
  );
}

/** Newer vLLM: CacheConfig also carries kv_cache_size_tokens, one engine's capacity (not summed over DP). */
const VLLM_WITH_TOKENS =
  HEAD +
  `vllm:cache_config_info{_block_size_resolved="True",block_size="32",cache_dtype="auto",effective_attention_block_size="32",` +
  `enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.92",kv_cache_dtype_skip_layers="[]",kv_cache_max_concurrency="3.97",` +
  `kv_cache_size_tokens="520000",num_cpu_blocks="None",num_gpu_blocks="16250",prefix_caching_hash_algo="sha256"} 1.0\n`;

/** vLLM 0.8 (V1, before DP metrics): one series, no engine label. */
const VLLM_NO_ENGINE =
  HEAD +
  `vllm:cache_config_info{block_size="16",cache_dtype="auto",calculate_kv_scales="False",cpu_offload_gb="0",enable_prefix_caching="True",` +
  `gpu_memory_utilization="0.9",is_attention_free="False",num_cpu_blocks="None",num_gpu_blocks="2048",num_gpu_blocks_override="None",` +
  `prefix_caching_hash_algo="builtin",sliding_window="None",swap_space="4",swap_space_bytes="4294967296"} 1.0\n`;

function ranks(r: KvCapacityReading | undefined, n: number): (number | undefined)[] {
  return Array.from({ length: n }, (_, i) => capacityOfRank(r!, i));
}

describe("vLLM: vllm:cache_config_info", () => {
  test("per DP engine: the API server's summed num_gpu_blocks x block_size shared by its engines, in the router's blocks", () => {
    const r = readVllmKvCapacity(vllmDp(["0", "1"], "33216"), 16);
    expect(r?.problems).toEqual([]);
    expect(ranks(r, 2)).toEqual([16_608, 16_608]);
    // A router hashing 64-token blocks: a quarter as many, whole blocks only.
    expect(ranks(readVllmKvCapacity(vllmDp(["0", "1"], "33217"), 64), 2)).toEqual([4152, 4152]);
  });

  test("one engine: num_gpu_blocks x vLLM's block size / the router's, rounded down", () => {
    expect(ranks(readVllmKvCapacity(vllmDp(["0"], "1000", "16"), 32), 1)).toEqual([500]);
    expect(ranks(readVllmKvCapacity(vllmDp(["0"], "1001", "16"), 32), 1)).toEqual([500]);
  });

  test("kv_cache_size_tokens, where vLLM has it, is one engine's capacity and wins over the block count", () => {
    const r = readVllmKvCapacity(VLLM_WITH_TOKENS, 16);
    expect(ranks(r, 1)).toEqual([32_500]);
    expect(r?.problems).toEqual([]);
  });

  test("no engine label (vLLM before DP metrics): every rank gets it", () => {
    const r = readVllmKvCapacity(VLLM_NO_ENGINE, 16);
    expect(r?.everyRank).toBe(2048);
    expect(ranks(r, 3)).toEqual([2048, 2048, 2048]);
  });

  test("a page without the gauge says nothing", () => {
    expect(
      readVllmKvCapacity(
        `# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine="0",model_name="m"} 1.0\n`,
        16,
      ),
    ).toBeUndefined();
    expect(readVllmKvCapacity("", 16)).toBeUndefined();
  });

  test("values no cache can have are problems, never capacities", () => {
    const cases: [string, RegExp][] = [
      [vllmDp(["0"], "None"), /num_gpu_blocks is not set/],
      [vllmDp(["0"], "0"), /less than one 16-token block/],
      [vllmDp(["0"], "-5"), /num_gpu_blocks -5 is negative/],
      [vllmDp(["0"], "NaN"), /num_gpu_blocks "NaN" is not a whole number/],
      [vllmDp(["0"], "12.5"), /not a whole number/],
      [vllmDp(["0"], String(2 ** 40)), /more than any engine's KV cache holds/],
      [vllmDp(["0"], "100", "0"), /block_size 0 is not a block size/],
      [vllmDp(["x"], "100"), /engine label "x" is not a DP rank/],
      [
        HEAD + `vllm:cache_config_info{num_gpu_blocks="100",block_size="16} 1.0\n`,
        /unreadable line/,
      ],
    ];
    for (const [text, why] of cases) {
      const r = readVllmKvCapacity(text, 16);
      expect(r).toBeDefined();
      expect(ranks(r, 1)).toEqual([undefined]);
      expect(r!.problems.join("; ")).toMatch(why);
    }
  });

  test("one bad engine does not spoil the others", () => {
    const text =
      vllmDp(["0"], "2000") +
      `vllm:cache_config_info{block_size="16",engine="1",num_gpu_blocks="None"} 1.0\n`;
    const r = readVllmKvCapacity(text, 16);
    expect(ranks(r, 2)).toEqual([1000, undefined]);
    expect(r!.problems).toEqual(["engine 1: num_gpu_blocks is not set"]);
  });
});

describe("SGLang: server info max_total_num_tokens", () => {
  /** The shape of GET /get_server_info: server_args, the scheduler's ready message, internal_states, version. */
  const info = (maxTotal: unknown) => ({
    model_path: "Qwen/Qwen3-8B",
    page_size: 1,
    dp_size: 1,
    max_total_num_tokens: maxTotal,
    max_req_input_len: 40954,
    internal_states: [
      {
        last_gen_throughput: 0,
        memory_usage: { weight: 15.3, kvcache: 52.1, token_capacity: maxTotal },
      },
    ],
    version: "0.5.4",
  });

  test("the token pool in the router's blocks, for every rank", () => {
    const r = readSglangKvCapacity(info(829_914), 16);
    expect(r?.problems).toEqual([]);
    expect(ranks(r, 2)).toEqual([51_869, 51_869]);
  });

  test("no field: nothing said; a value no pool can have: a problem", () => {
    expect(readSglangKvCapacity({ model_path: "m" }, 16)).toBeUndefined();
    expect(readSglangKvCapacity("not an object", 16)).toBeUndefined();
    expect(readSglangKvCapacity(null, 16)).toBeUndefined();
    for (const [bad, why] of [
      [0, /less than one/],
      [-1, /negative/],
      [12.5, /not a whole number/],
      ["800000", /not a whole number/],
      [null, /null is not/],
      [1e15, /more than any/],
    ] as const) {
      const r = readSglangKvCapacity(info(bad), 16);
      expect(ranks(r, 1)).toEqual([undefined]);
      expect(r!.problems.join()).toMatch(why);
    }
  });
});

describe("bounds", () => {
  test("tokens to blocks and reported blocks keep to one cache's worth", () => {
    expect(blocksFromTokens(MAX_KV_TOKENS_PER_RANK, 16)).toBe(MAX_KV_TOKENS_PER_RANK / 16);
    expect(blocksFromTokens(MAX_KV_TOKENS_PER_RANK + 1, 16)).toBeTypeOf("string");
    expect(blocksFromTokens(NaN, 16)).toBeTypeOf("string");
    expect(blocksFromTokens(15, 16)).toBeTypeOf("string");
    expect(checkedBlocks(16_384, 16)).toBe(16_384);
    expect(checkedBlocks(0, 16)).toBeTypeOf("string");
    expect(checkedBlocks(1.5, 16)).toBeTypeOf("string");
    expect(checkedBlocks(2 ** 30, 16)).toBeTypeOf("string");
  });
});
