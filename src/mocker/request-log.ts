/**
 * The simulated engine's request log (--request-log FILE): one JSON line per request at its first
 * token, with what the engine really did: when the request arrived, when it got its rank's prefill
 * lane, when its first token came (epoch milliseconds, to the microsecond, so several engines' and
 * routers' logs on one host line up), and how many prompt tokens it computed. Held against a
 * router's access log (its predicted_ttft_ms, joined on the x-request-id the router forwards), it
 * says which requests were queued ahead of a prediction that missed (bench/replay/race-misses.ts).
 *
 * Lines are appended whole (O_APPEND), so several engines may share a file. A write that fails is
 * logged once and the log stops; the engine goes on serving.
 */
import { appendFileSync } from "node:fs";
import type { WorkerId } from "../core/ids.ts";
import type { PrefillRecord } from "./engine.ts";

export function requestLogWriter(
  path: string,
  workerId: WorkerId,
  log: (line: string) => void,
  timeOrigin = performance.timeOrigin,
): (r: PrefillRecord) => void {
  const worker = workerId.toString();
  const epoch = (t: number) => Math.round((timeOrigin + t) * 1000) / 1000;
  let failed = false;
  return (r) => {
    if (failed) return;
    const line = JSON.stringify({
      request_id: r.requestId ?? null,
      worker,
      dp_rank: r.dpRank,
      arrived_at: epoch(r.arrivedAt),
      prefill_started_at: epoch(r.prefillStartedAt),
      first_token_at: epoch(r.firstTokenAt),
      prompt_tokens: r.promptTokens,
      cached_tokens: r.cachedTokens,
      computed_tokens: r.computedTokens,
    });
    try {
      appendFileSync(path, line + "\n");
    } catch (e) {
      failed = true;
      log(`request log: cannot write ${path}; no more lines will be written (${String(e)})`);
    }
  };
}
