/**
 * SGLang's self-description, which SGLang's own clients read before and after a run:
 * GET /get_server_info (and /server_info, its newer name), GET /get_model_info. Read-only.
 *
 * SGLang answers /get_server_info with `{**dataclasses.asdict(server_args),
 * **scheduler_info, "internal_states": internal_states, "version": __version__}`
 * (python/sglang/srt/entrypoints/http_server.py `get_server_info` at sgl-project/sglang
 * 9c0549b7), where scheduler_info is the scheduler's ready message (`max_total_num_tokens`, the
 * token pool of one DP rank, and `max_req_input_len`) and internal_states one dict per DP rank.
 * bench_serving.py reads `internal_states[0].get("avg_spec_accept_length")` after a run with an
 * sglang backend (absent here: no speculative decoding); the router's capacity probe reads
 * `max_total_num_tokens` (src/fleet/engine-capacity.ts). Of server_args, only the fields a
 * client or an operator reads are given. /get_model_info is `{model_path, tokenizer_path,
 * is_generation}` (same file, `get_model_info`).
 */
import { type MockEngine, rankLoad } from "./engine.ts";
import { json, type Route } from "./http.ts";
import { maxModelLen } from "./options.ts";
import type { MockerTokenizer } from "./tokenizer.ts";

export interface SglangInfoDeps {
  readonly engine: MockEngine;
  readonly tokenizer: MockerTokenizer;
}

export const SGLANG_VERSION = "switchyard-sim";

export function sglangInfoRoutes(deps: SglangInfoDeps): Route[] {
  const { engine: eng, tokenizer } = deps;
  const c = eng.config;
  const tokensPerRank = maxModelLen(c);

  function serverInfo(): unknown {
    return {
      model_path: c.model,
      tokenizer_path: tokenizer.source,
      served_model_name: c.model,
      context_length: tokensPerRank,
      page_size: c.blockSize,
      dp_size: c.dpRanks,
      tp_size: 1,
      max_running_requests: c.maxConcurrency,
      chunked_prefill_size: c.scheduler === "v1" ? c.maxNumBatchedTokens : -1,
      disaggregation_mode: c.role === "both" ? "null" : c.role,
      max_total_num_tokens: tokensPerRank,
      max_req_input_len: tokensPerRank - 1,
      internal_states: eng.ranks.map((r) => ({
        // Tokens the rank's cache holds for running requests, as SGLang's token_usage.
        token_usage: r.kv.cache.pinnedCount / r.kv.cache.capacity,
        num_running_reqs: rankLoad(r).running,
        num_waiting_reqs: rankLoad(r).waiting,
      })),
      version: SGLANG_VERSION,
    };
  }

  const info = () => json(serverInfo());
  return [
    { method: "GET", path: "/get_server_info", handle: info },
    { method: "GET", path: "/server_info", handle: info },
    {
      method: "GET",
      path: "/get_model_info",
      handle: () =>
        json({ model_path: c.model, tokenizer_path: tokenizer.source, is_generation: true }),
    },
  ];
}
