/**
 * `--scheduler v1`: the simulated engine's steps follow vLLM V1's scheduler,
 * vllm/v1/core/sched/scheduler.py `Scheduler.schedule()` at vllm-project/vllm 00024d31:
 *     token_budget = self.max_num_scheduled_tokens
 *     # First, schedule the RUNNING requests.
 *     while req_index < len(self.running) and token_budget > 0:
 *         num_new_tokens = (request.num_tokens_with_spec + request.num_output_placeholders
 *                           - request.num_computed_tokens)
 *         num_new_tokens = min(num_new_tokens, token_budget)
 *         ...
 *         token_budget -= num_new_tokens
 *     # Next, schedule the WAITING requests.
 *     while self.waiting and token_budget > 0:
 *         if len(self.running) == self.max_num_running_reqs:
 *             break
 * (a decode needs 1 token, a partly computed prompt its next chunk; a waiting request's cached
 * prefix is found when it is first scheduled, and its chunk is cut to what is left of the budget:
 * chunked prefill, on by default in V1). The engine runs on virtual time; the timing is 1 ms per
 * computed prompt token, no overhead, 10 ms per decode step, no batch slowdown, so a step takes
 * 10 ms if it decodes plus 1 ms per prompt token it computes.
 */
import { describe, expect, test } from "bun:test";
import type { RouterEvent } from "../../src/core/events.ts";
import { type GenerateRequest, MockEngine, rankLoad } from "../../src/mocker/engine.ts";
import { AbortedError } from "../../src/mocker/fifo.ts";
import { type MockerOptions, resolveMockerOptions } from "../../src/mocker/options.ts";
import { stepMs } from "../../src/mocker/timing.ts";
import { settle, VirtualClock } from "../unit/mocker/virtual-clock.ts";

const BASE: MockerOptions = {
  scheduler: "v1",
  blockSize: 4,
  kvBlocks: 64,
  prefillUsPerToken: 1000,
  prefillOverheadMs: 0,
  decodeMsPerStep: 10,
  decodeBatchFactor: 0,
};

function setup(opts: MockerOptions = {}) {
  const clock = new VirtualClock();
  const events: RouterEvent[] = [];
  const engine = new MockEngine({
    config: resolveMockerOptions({ ...BASE, ...opts }),
    workerId: 7n,
    clock,
    emit: (e) => events.push(e),
  });
  return { clock, engine, events };
}

const prompt = (n: number, base = 0) => Uint32Array.from({ length: n }, (_, i) => base + i);

function track(
  engine: MockEngine,
  clock: VirtualClock,
  req: Partial<GenerateRequest> & { tokens: Uint32Array },
) {
  const rec = { startAt: NaN, cached: NaN, tokenAt: [] as number[] };
  const done = engine.generate(
    { maxTokens: 3, dpRank: 0, ...req },
    {
      start: (s) => {
        rec.startAt = clock.now();
        rec.cached = s.cachedTokens;
      },
      token: () => rec.tokenAt.push(clock.now()),
    },
  );
  done.catch(() => {});
  return { rec, done };
}

describe("vLLM V1 steps (--scheduler v1)", () => {
  test("the default scheduler is v1, with vLLM's default budget of 8192 tokens a step", () => {
    const c = resolveMockerOptions({});
    expect(c.scheduler).toBe("v1");
    expect(c.maxNumBatchedTokens).toBe(8192);
  });

  test("an isolated request takes what it takes on the FIFO lane: its prefill, then a step per token", async () => {
    const { clock, engine } = setup();
    const a = track(engine, clock, { tokens: prompt(8) });
    await clock.run();
    expect(a.rec.tokenAt).toEqual([8, 18, 28]);
    expect(await a.done).toMatchObject({ promptTokens: 8, cachedTokens: 0, completionTokens: 3 });
  });

  test("prompts that arrive together are computed in one step: both first tokens at its end", async () => {
    const { clock, engine } = setup();
    const a = track(engine, clock, { tokens: prompt(8, 0), maxTokens: 1 });
    const b = track(engine, clock, { tokens: prompt(8, 100), maxTokens: 1 });
    await clock.run();
    expect(a.rec.tokenAt).toEqual([16]);
    expect(b.rec.tokenAt).toEqual([16]);
  });

  test("a prompt joins the running decodes' step, so its first token waits for their batch too", async () => {
    const { clock, engine } = setup();
    const a = track(engine, clock, { tokens: prompt(4, 0), maxTokens: 5 });
    await clock.run(5); // a prefilled at 4 and runs its first decode step (4 -> 14)
    const b = track(engine, clock, { tokens: prompt(8, 100), maxTokens: 2 });
    await clock.run();
    // b waits for the step in flight (until 14), then shares a step with a's decode: 10 + 8 ms.
    expect(b.rec.startAt).toBe(14);
    expect(b.rec.tokenAt).toEqual([32, 42]);
    expect(a.rec.tokenAt).toEqual([4, 14, 32, 42, 52]);
  });

  test("chunked prefill: a long prompt takes what the decodes leave of the budget, step after step, and the decodes go on", async () => {
    const { clock, engine } = setup({ maxNumBatchedTokens: 4 });
    const a = track(engine, clock, { tokens: prompt(2, 0), maxTokens: 8 });
    await clock.run(3);
    const b = track(engine, clock, { tokens: prompt(10, 100), maxTokens: 1 });
    await clock.run();
    // Steps from 12 on: a's decode (1 token, 10 ms) + 3 of b's prompt tokens (3 ms), three
    // times, then the last token of b's prompt: 12 -> 25 -> 38 -> 51 -> 62.
    expect(b.rec.tokenAt).toEqual([62]);
    expect(a.rec.tokenAt).toEqual([2, 12, 25, 38, 51, 62, 72, 82]);
  });

  test("at most max concurrency (vLLM's max_num_seqs) run; the next is scheduled when one finishes", async () => {
    const { clock, engine } = setup({ maxConcurrency: 1 });
    const a = track(engine, clock, { tokens: prompt(4, 0), maxTokens: 2 });
    const b = track(engine, clock, { tokens: prompt(4, 50), maxTokens: 1 });
    await settle();
    expect(rankLoad(engine.ranks[0]!)).toEqual({
      running: 1,
      waiting: 1,
      decoding: 0,
      prefilling: 1,
    });
    await clock.run();
    expect(a.rec.tokenAt).toEqual([4, 14]);
    expect(b.rec.startAt).toBe(14);
    expect(b.rec.tokenAt).toEqual([18]);
    expect(rankLoad(engine.ranks[0]!)).toEqual({
      running: 0,
      waiting: 0,
      decoding: 0,
      prefilling: 0,
    });
  });

  test("the cached prefix is looked up when the request is first scheduled; cached tokens are not computed", async () => {
    const { clock, engine } = setup();
    track(engine, clock, { tokens: prompt(10), maxTokens: 1 });
    await clock.run();
    const t0 = clock.now();
    const b = track(engine, clock, { tokens: prompt(10), maxTokens: 1 });
    await clock.run();
    expect(b.rec.cached).toBe(8);
    expect(b.rec.tokenAt[0]! - t0).toBe(2);
  });

  test("an abort ends the request at once: nothing stored, its step's other work goes on", async () => {
    const { clock, engine, events } = setup();
    const ctl = new AbortController();
    const a = track(engine, clock, { tokens: prompt(8, 0), maxTokens: 2, signal: ctl.signal });
    const b = track(engine, clock, { tokens: prompt(8, 100), maxTokens: 1 });
    await clock.run(3);
    ctl.abort();
    expect(
      await a.done.then(
        () => "finished",
        (e: unknown) => e,
      ),
    ).toBeInstanceOf(AbortedError);
    await clock.run();
    expect(a.rec.tokenAt).toEqual([]);
    expect(b.rec.tokenAt).toEqual([16]);
    expect(events.filter((e) => e.event.data.type === "stored").length).toBe(1); // b's blocks only
    expect(engine.counters.aborted).toBe(1);
    expect(engine.ranks[0]!.kv.cache.pinnedCount).toBe(0);
  });

  test("a step's time: the decode batch's cost plus each prompt chunk's overhead and tokens", () => {
    const m = {
      prefillUsPerToken: 40,
      prefillOverheadMs: 1,
      decodeMsPerStep: 10,
      decodeBatchFactor: 0.02,
      speedup: 1,
    };
    expect(stepMs(0, 1, 1000, m)).toBeCloseTo(41);
    expect(stepMs(11, 0, 0, m)).toBeCloseTo(12);
    expect(stepMs(11, 2, 1000, m)).toBeCloseTo(12 + 2 + 40);
    expect(stepMs(11, 2, 1000, { ...m, speedup: 2 })).toBeCloseTo(27);
  });
});
