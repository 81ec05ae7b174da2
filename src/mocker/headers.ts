/**
 * The headers the simulated engine reads (the router's dp-rank choice) and writes on every
 * completion answer (which rank served it, how much of the prompt was cached, which worker),
 * so tests and benchmarks can check a routing decision from the answer alone. No routes.
 */
import type { WorkerId } from "../core/ids.ts";
import type { GenerateStart } from "./engine.ts";
import { dpRankValue } from "./requests.ts";

/** The router's header naming the dp rank it chose. */
export const DP_RANK_HEADER = "x-switchyard-dp-rank";
export const CACHED_TOKENS_HEADER = "x-mocker-cached-tokens";

/** The rank the router asked for in `x-switchyard-dp-rank` (undefined: none; a bad value throws a 400). */
export function requestedRank(req: Request, dpRanks: number): number | undefined {
  return dpRankValue(req.headers.get(DP_RANK_HEADER), dpRanks, DP_RANK_HEADER);
}

/** The headers of one completion answer, streamed or not. */
export function answerHeaders(
  start: GenerateStart,
  streaming: boolean,
  workerId: WorkerId,
): Record<string, string> {
  return {
    "content-type": streaming ? "text/event-stream" : "application/json",
    ...(streaming ? { "cache-control": "no-cache" } : {}),
    [CACHED_TOKENS_HEADER]: String(start.cachedTokens),
    "x-mocker-dp-rank": String(start.dpRank),
    "x-mocker-worker-id": workerId.toString(),
  };
}
