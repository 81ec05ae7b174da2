import { describe, expect, test } from "bun:test";
import { placementTtfts } from "../../../bench/replay/placement.ts";
import type { RequestOutcome } from "../../../bench/replay/replay.ts";
import type { TraceRequest } from "../../../bench/replay/trace.ts";

const req = (index: number, timestamp: number, inputLength: number): TraceRequest => ({
  index,
  timestamp,
  inputLength,
  outputLength: 1,
  hashIds: [],
});
const out = (
  index: number,
  worker: string | undefined,
  promptTokens: number,
  cachedTokens: number,
  ok = true,
): RequestOutcome => ({
  index,
  ok,
  worker,
  ttftMs: 999,
  e2eMs: 999,
  promptTokens,
  cachedTokens,
  outputTokens: 1,
});

describe("placement TTFT (the engines' model for where each request went)", () => {
  // 100 µs per token, speedup 10: 1000 uncached tokens = (1 ms + 100 ms) / 10 = 10.1 ms.
  const timing = { prefillUsPerToken: 100, speedup: 10, arrivalScale: 1 };

  test("one lane per engine, in send order; cached tokens cost nothing; measured TTFTs are not read", () => {
    const trace = [req(0, 1000, 1000), req(1, 1010, 1000), req(2, 1020, 1000)];
    // 0 and 1 on engine a (1 arrives 1 ms after 0, waits for it), 2 on b with half of it cached.
    const t = placementTtfts(
      trace,
      [out(0, "a", 1000, 0), out(1, "a", 1000, 0), out(2, "b", 1000, 500)],
      timing,
    );
    expect(t).toHaveLength(3);
    expect(t[0]).toBeCloseTo(10.1, 9);
    expect(t[1]).toBeCloseTo(10.1 - 1 + 10.1, 9);
    expect(t[2]).toBeCloseTo((1 + 50) / 10, 9);
  });

  test("arrival scale stretches the sends; failed requests and unknown workers are left out", () => {
    const trace = [req(0, 0, 1000), req(1, 10, 1000), req(2, 20, 1000)];
    // At scale 100 request 1 is sent 100 ms after 0: no wait.
    const t = placementTtfts(
      trace,
      [
        out(0, "a", 1000, 0),
        out(1, "a", 1000, 0),
        out(2, undefined, 1000, 0),
        out(2, "a", 1000, 0, false),
      ],
      { ...timing, arrivalScale: 100 },
    );
    expect(t.map((x) => Number(x.toFixed(6)))).toEqual([10.1, 10.1]);
  });
});
