/**
 * The registration-time capacity probe (src/fleet/engine-capacity-probe.ts) with an injected fetch:
 * which paths it asks, SGLang's old route after the new one, and what a failing engine leaves.
 */
import { describe, expect, test } from "bun:test";
import { capacityOfRank } from "../../../src/fleet/engine-capacity.ts";
import { probeKvCapacity } from "../../../src/fleet/engine-capacity-probe.ts";

const VLLM_PAGE = `# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="1234"} 1.0
`;

function engine(pages: Record<string, () => Response>) {
  const asked: string[] = [];
  const fetch = async (url: string, init: RequestInit) => {
    asked.push(new URL(url).pathname);
    expect(init.signal).toBeDefined(); // every call has a deadline
    return (pages[new URL(url).pathname] ?? (() => new Response("not found", { status: 404 })))();
  };
  return { asked, fetch };
}

describe("probeKvCapacity", () => {
  test("vLLM: its /metrics gauge; SGLang's routes answer 404", async () => {
    const e = engine({ "/metrics": () => new Response(VLLM_PAGE) });
    const r = await probeKvCapacity("http://v:8000", {
      blockSize: 16,
      timeoutMs: 1000,
      fetch: e.fetch,
    });
    expect(r?.source).toContain("vllm:cache_config_info");
    expect(capacityOfRank(r!, 0)).toBe(1234);
    expect(e.asked.sort()).toEqual(["/get_server_info", "/metrics", "/server_info"]);
  });

  test("SGLang: /server_info where it is, else the older /get_server_info", async () => {
    const info = () =>
      Response.json({ max_total_num_tokens: 160_000, page_size: 1, version: "0.5.4" });
    const newer = engine({
      "/server_info": info,
      "/metrics": () => new Response("sglang:num_running_reqs 0\n"),
    });
    const r = await probeKvCapacity("http://s:30000", {
      blockSize: 16,
      timeoutMs: 1000,
      fetch: newer.fetch,
    });
    expect(capacityOfRank(r!, 0)).toBe(10_000);
    expect(newer.asked).not.toContain("/get_server_info");

    const older = engine({ "/get_server_info": info });
    const o = await probeKvCapacity("http://s:30000", {
      blockSize: 32,
      timeoutMs: 1000,
      fetch: older.fetch,
    });
    expect(capacityOfRank(o!, 0)).toBe(5_000);
  });

  test("an engine that says nothing, answers garbage or fails: undefined", async () => {
    const silent = engine({ "/metrics": () => new Response("process_cpu_seconds_total 1\n") });
    expect(
      await probeKvCapacity("http://x", { blockSize: 16, timeoutMs: 1000, fetch: silent.fetch }),
    ).toBeUndefined();
    const garbage = engine({ "/server_info": () => new Response("{not json") });
    expect(
      await probeKvCapacity("http://x", { blockSize: 16, timeoutMs: 1000, fetch: garbage.fetch }),
    ).toBeUndefined();
    const down = async () => {
      throw new Error("ECONNREFUSED");
    };
    expect(
      await probeKvCapacity("http://x", { blockSize: 16, timeoutMs: 1000, fetch: down }),
    ).toBeUndefined();
  });
});
