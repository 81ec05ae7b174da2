/**
 * The bench's warm-up (bench/replay/warmup.ts) and the histogram difference that keeps it out of
 * the replay's figures (prometheus.ts histogramSince). The routers here are a Bun.serve that
 * counts what it is sent: this is a unit test of one module, and what it checks is what
 * warmUp sends and how it reports failures.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mulberry32 } from "../../../src/core/mulberry32.ts";
import { histogramSince, readHistogram } from "../../../bench/replay/prometheus.ts";
import { histogramQuantile } from "../../../bench/replay/stats.ts";
import { promptTokens, type TraceRequest } from "../../../bench/replay/trace.ts";
import { warmUp, warmUpPrompt } from "../../../bench/replay/warmup.ts";

const req = (
  index: number,
  hashIds: number[],
  inputLength = hashIds.length * 512,
): TraceRequest => ({
  index,
  timestamp: index,
  inputLength,
  outputLength: 4,
  hashIds,
});

interface Seen {
  lengths: number[];
  maxInFlight: number;
  maxTokens: number[];
}

const servers: ReturnType<typeof Bun.serve>[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true);
});

/** A router stand-in that records each prompt's length and how many requests it held at once; `status` is what it answers. */
function fakeRouter(status = 200): { url: string; seen: Seen } {
  const seen: Seen = { lengths: [], maxInFlight: 0, maxTokens: [] };
  let inFlight = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      inFlight++;
      seen.maxInFlight = Math.max(seen.maxInFlight, inFlight);
      const body = (await request.json()) as { prompt: number[] | string; max_tokens: number };
      seen.lengths.push(body.prompt.length);
      seen.maxTokens.push(body.max_tokens);
      // Hold the answer a little, so that requests overlap when the client sends them together.
      await Bun.sleep(5);
      inFlight--;
      return new Response(
        status === 200 ? 'data: {"choices":[{"text":"x"}]}\n\ndata: [DONE]\n\n' : "engine down",
        { status },
      );
    },
  });
  servers.push(server);
  return { url: `http://127.0.0.1:${server.port}`, seen };
}

describe("warm-up prompts", () => {
  test("the same seed gives the same prompts; each is as long as asked, in the trace's token range", () => {
    const a = warmUpPrompt(700, mulberry32(1), "tokens") as number[];
    const b = warmUpPrompt(700, mulberry32(1), "tokens") as number[];
    expect(a).toEqual(b);
    expect(a.length).toBe(700);
    expect(Math.max(...a)).toBeLessThan(32000);
    expect(Math.min(...a)).toBeGreaterThanOrEqual(0);
    const text = warmUpPrompt(300, mulberry32(1), "text") as string;
    expect(text).toMatch(/^[a-z]{300}$/);
  });

  test("no warm-up block matches one of the trace's (its first block differs from every trace block)", () => {
    const trace = Array.from({ length: 50 }, (_, i) => req(i, [i, i + 1, i + 2]));
    const traceBlocks = new Set(
      trace.flatMap((r) =>
        [0, 1, 2].map((b) =>
          Array.from(promptTokens(r).subarray(b * 512, (b + 1) * 512)).join(","),
        ),
      ),
    );
    const rand = mulberry32(7);
    for (let i = 0; i < 50; i++) {
      const p = warmUpPrompt(512, rand, "tokens") as number[];
      expect(traceBlocks.has(p.join(","))).toBe(false);
    }
  });
});

describe("warmUp", () => {
  test("each router gets perRouter requests with the trace's first lengths, at most 4 at a time, one token each", async () => {
    const r1 = fakeRouter();
    const r2 = fakeRouter();
    const trace = [req(0, [1], 300), req(1, [2], 500), req(2, [3], 700)];
    await warmUp(trace, {
      routerUrls: [r1.url, r2.url],
      perRouter: 7,
      promptFormat: "tokens",
      seed: 1,
    });
    for (const { seen } of [r1, r2]) {
      expect(seen.lengths.length).toBe(7);
      // Lanes take prompts in order, so the lengths arrive in the trace's cycle, at most a lane out of step.
      expect(seen.lengths.toSorted((x, y) => x - y)).toEqual([300, 300, 300, 500, 500, 700, 700]);
      expect(seen.maxInFlight).toBeLessThanOrEqual(4);
      expect(seen.maxInFlight).toBeGreaterThan(1);
      expect(seen.maxTokens.every((n) => n === 1)).toBe(true);
    }
  });

  test("perRouter 0 sends nothing; a count that is not a whole number ≥ 0 is refused with what is wrong", async () => {
    const r = fakeRouter();
    await warmUp([req(0, [1])], {
      routerUrls: [r.url],
      perRouter: 0,
      promptFormat: "tokens",
      seed: 1,
    });
    expect(r.seen.lengths).toEqual([]);
    await expect(
      warmUp([req(0, [1])], {
        routerUrls: [r.url],
        perRouter: 2.5,
        promptFormat: "tokens",
        seed: 1,
      }),
    ).rejects.toThrow("warm-up requests per router must be a whole number >= 0, got 2.5");
  });

  test("a router that answers with an error fails the warm-up, naming the router and the status", async () => {
    const bad = fakeRouter(503);
    await expect(
      warmUp([req(0, [1])], {
        routerUrls: [bad.url],
        perRouter: 2,
        promptFormat: "tokens",
        seed: 1,
      }),
    ).rejects.toThrow(`warm-up request to ${bad.url}: HTTP 503: engine down`);
  });
});

describe("histogramSince", () => {
  const text = (counts: [string, number][], sum: number) =>
    counts
      .map(([le, c]) => `switchyard_ttft_prediction_error_ratio_bucket{le="${le}"} ${c}`)
      .join("\n") +
    `\nswitchyard_ttft_prediction_error_ratio_sum ${sum}\nswitchyard_ttft_prediction_error_ratio_count ${counts.at(-1)![1]}\n`;

  test("only what was observed between the two readings: the warm-up's bad predictions leave the quantiles", () => {
    // Warm-up: 10 first tokens, all off by more than 1. Replay: 20 more, all within 0.1.
    const before = readHistogram(
      text(
        [
          ["0.1", 0],
          ["1", 0],
          ["+Inf", 10],
        ],
        30,
      ),
      "switchyard_ttft_prediction_error_ratio",
    )!;
    const after = readHistogram(
      text(
        [
          ["0.1", 20],
          ["1", 20],
          ["+Inf", 30],
        ],
        31,
      ),
      "switchyard_ttft_prediction_error_ratio",
    )!;
    const since = histogramSince(after, before);
    expect(since.buckets).toEqual([
      { le: 0.1, count: 20 },
      { le: 1, count: 20 },
      { le: Infinity, count: 20 },
    ]);
    expect(since.count).toBe(20);
    expect(since.sum).toBeCloseTo(1, 10);
    expect(histogramQuantile(since.buckets, 0.9)).toBeLessThanOrEqual(0.1);
    // Read whole, the warm-up's third puts the p90 in the top bucket (the quantile reads its lower bound, 1).
    expect(histogramQuantile(after.buckets, 0.9)).toBe(1);
  });

  test("no earlier reading: everything counts", () => {
    const after = readHistogram(
      text(
        [
          ["1", 3],
          ["+Inf", 4],
        ],
        5,
      ),
      "switchyard_ttft_prediction_error_ratio",
    )!;
    expect(histogramSince(after, undefined)).toEqual(after);
  });
});
