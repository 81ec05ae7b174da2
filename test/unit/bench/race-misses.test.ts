import { describe, expect, test } from "bun:test";
import {
  classes,
  decisionsOf,
  engineRequestsOf,
  joinRequests,
  raceBucket,
  routerOf,
  summarizeClass,
} from "../../../bench/replay/race-misses.ts";
import { replayRequestId } from "../../../bench/replay/replay.ts";

const access = (id: string, predicted: number, observed: number, worker = "9") =>
  JSON.stringify({
    time: "2026-12-06T00:00:00.000Z",
    level: "info",
    msg: "request",
    request_id: id,
    worker,
    dp_rank: 0,
    predicted_ttft_ms: predicted,
    ttft_ms: observed,
    duration_ms: observed + 5,
  });
const engine = (id: string, arrived: number, lane: number, first: number, worker = "9") =>
  JSON.stringify({
    request_id: id,
    worker,
    dp_rank: 0,
    arrived_at: arrived,
    prefill_started_at: lane,
    first_token_at: first,
    prompt_tokens: 100,
    cached_tokens: 0,
    computed_tokens: 100,
  });

describe("race-misses (bench/replay/race-misses.ts)", () => {
  test("the replay's request ids name the router; others name none", () => {
    expect(routerOf(replayRequestId(2, 3, 17))).toBe(3);
    expect(routerOf("1163b159-d9d1-4a0a-a451-d8a92b36547f")).toBeUndefined();
  });

  test("a miss behind another router's request that reached the engine 3 ms before it is a race; one behind its own router's is not", () => {
    const r0 = replayRequestId(1, 0, 0);
    const r1 = replayRequestId(1, 1, 1);
    const r0b = replayRequestId(1, 0, 2);
    const r2 = replayRequestId(1, 2, 3);
    const accessLog = [
      "not json",
      access(r0, 100, 100),
      access(r1, 100, 300), // waited 200 ms behind r0, which its router (1) could not have counted
      access(r0b, 500, 200), // predicted too high: nothing was ahead of it
      JSON.stringify({
        msg: "request",
        request_id: "no-prediction",
        worker: "9",
        dp_rank: 0,
        predicted_ttft_ms: null,
        ttft_ms: 5,
      }),
      access(r2, 50, 40, "8"), // another engine: nothing ahead
    ].join("\n");
    const engineLog = [
      engine(r0, 1000, 1000, 1100),
      engine(r1, 1003, 1100, 1300),
      engine(r0b, 2000, 2000, 2200),
      engine(r2, 1001, 1001, 1040, "8"),
    ].join("\n");
    const decisions = decisionsOf(accessLog);
    expect(decisions.map((d) => d.requestId)).toEqual([r0, r1, r0b, r2]);
    const joined = joinRequests(decisions, engineRequestsOf(engineLog));
    expect(joined.map((m) => m.decision.requestId)).toEqual([r0, r2, r1, r0b]);
    const miss = joined.find((m) => m.decision.requestId === r1)!;
    expect(miss.othersAhead).toBe(1);
    expect(miss.ownAhead).toBe(0);
    expect(miss.youngestOtherMs).toBe(3);
    expect(raceBucket(miss)).toBe("< 5 ms");
    expect(raceBucket(joined.find((m) => m.decision.requestId === r0b)!)).toBe("none");
    const { tooLow, within, tooHigh } = classes(joined);
    expect(tooLow.map((m) => m.decision.requestId)).toEqual([r1]);
    expect(tooHigh.map((m) => m.decision.requestId)).toEqual([r0b]);
    expect(within.length).toBe(2);
    const s = summarizeClass(tooLow);
    expect(s).toMatchObject({ n: 1, observedMs: 300, predictedMs: 100, queuedMs: 97, ownMs: 200 });
    expect(s.buckets.get("< 5 ms")).toBe(1);
    expect(s.buckets.get("none")).toBe(0);
  });

  test("a request ahead from the same router counts as its own, however close", () => {
    const a = replayRequestId(1, 0, 0);
    const b = replayRequestId(1, 0, 4);
    const joined = joinRequests(
      decisionsOf([access(a, 10, 10), access(b, 10, 50)].join("\n")),
      engineRequestsOf([engine(a, 0, 0, 40), engine(b, 0.5, 40, 50)].join("\n")),
    );
    const m = joined.find((x) => x.decision.requestId === b)!;
    expect(m).toMatchObject({ othersAhead: 0, ownAhead: 1, youngestOtherMs: undefined });
  });
});
