import { describe, expect, test } from "bun:test";
import { computeBlockHashes } from "../../../src/core/block-hash.ts";
import type { RouterEvent } from "../../../src/core/events.ts";
import { engineBlockHashes } from "../../../src/mocker/engine-hash.ts";
import { type GenerateRequest, MockEngine } from "../../../src/mocker/engine.ts";
import { AbortedError } from "../../../src/mocker/fifo.ts";
import { resolveMockerOptions, type MockerOptions } from "../../../src/mocker/options.ts";
import { settle, VirtualClock } from "./virtual-clock.ts";

/**
 * 1 ms per uncached token, no overhead, 10 ms decode steps, no batch slowdown, on the FIFO
 * prefill lane (`--scheduler fifo`); vLLM V1's steps are step-scheduler.test.ts.
 */
const BASE: MockerOptions = {
  scheduler: "fifo",
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
    workerId: 42n,
    clock,
    emit: (e) => events.push(e),
  });
  return { clock, engine, events };
}

const prompt = (n: number, base = 0) => Uint32Array.from({ length: n }, (_, i) => base + i);

/** Run a request, recording when it started prefill and when each token came out. */
function track(
  engine: MockEngine,
  clock: VirtualClock,
  req: Partial<GenerateRequest> & { tokens: Uint32Array },
) {
  const rec = { startAt: NaN, cached: NaN, tokenAt: [] as number[], text: "" };
  const done = engine.generate(
    { maxTokens: 3, dpRank: 0, ...req },
    {
      start: (s) => {
        rec.startAt = clock.now();
        rec.cached = s.cachedTokens;
      },
      token: (t) => {
        rec.tokenAt.push(clock.now());
        rec.text += t;
      },
    },
  );
  done.catch(() => {}); // tests inspect rejections themselves; keep them from being unhandled
  return { rec, done };
}

describe("MockEngine", () => {
  test("an uncached request: first token after prefill, then one per decode step", async () => {
    const { clock, engine } = setup();
    const a = track(engine, clock, { tokens: prompt(8) });
    await clock.run();
    const r = await a.done;
    expect(a.rec.tokenAt).toEqual([8, 18, 28]);
    expect(r).toMatchObject({ promptTokens: 8, cachedTokens: 0, completionTokens: 3 });
    expect(r.text).toBe(a.rec.text);
    expect(r.text.length).toBe(3);
  });

  test("a repeated prompt is served from the cache and skips its prefill", async () => {
    const { clock, engine } = setup();
    track(engine, clock, { tokens: prompt(10) });
    await clock.run();
    const t0 = clock.now();
    const b = track(engine, clock, { tokens: prompt(10) });
    await clock.run();
    expect(b.rec.cached).toBe(8); // two full blocks; the partial block is never cached
    expect(b.rec.tokenAt[0]! - t0).toBe(2); // only the 2 uncached tokens
    expect(engine.counters).toMatchObject({
      requests: 2,
      promptTokens: 20,
      cachedTokens: 8,
      completionTokens: 6,
    });
  });

  test("prefills on one rank run one at a time, so uncached load queues", async () => {
    const { clock, engine } = setup();
    const a = track(engine, clock, { tokens: prompt(8, 0), maxTokens: 1 });
    const b = track(engine, clock, { tokens: prompt(8, 100), maxTokens: 1 });
    await clock.run();
    expect(a.rec.tokenAt).toEqual([8]);
    expect(b.rec.startAt).toBe(8);
    expect(b.rec.tokenAt).toEqual([16]);
  });

  test("different dp ranks prefill in parallel", async () => {
    const { clock, engine } = setup({ dpRanks: 2 });
    const a = track(engine, clock, { tokens: prompt(8, 0), maxTokens: 1, dpRank: 0 });
    const b = track(engine, clock, { tokens: prompt(8, 0), maxTokens: 1, dpRank: 1 });
    await clock.run();
    expect(a.rec.tokenAt).toEqual([8]);
    expect(b.rec.tokenAt).toEqual([8]);
    expect(b.rec.cached).toBe(0); // caches are per rank
  });

  test("beyond max concurrency requests wait FIFO for a running slot", async () => {
    const { clock, engine } = setup({ maxConcurrency: 1 });
    const a = track(engine, clock, { tokens: prompt(4, 0), maxTokens: 2 });
    const b = track(engine, clock, { tokens: prompt(4, 50), maxTokens: 1 });
    const c = track(engine, clock, { tokens: prompt(4, 90), maxTokens: 1 });
    await settle();
    expect(engine.ranks[0]!.slots.waiting).toBe(2);
    await clock.run();
    expect(a.rec.tokenAt).toEqual([4, 14]);
    expect(b.rec.startAt).toBe(14);
    expect(c.rec.startAt).toBe(18);
  });

  test("a decode step slows down with the number of decoding sequences", async () => {
    const { clock, engine } = setup({ decodeBatchFactor: 1, prefillUsPerToken: 0 });
    const a = track(engine, clock, { tokens: prompt(4, 0), maxTokens: 3 });
    const b = track(engine, clock, { tokens: prompt(4, 50), maxTokens: 3 });
    await clock.run();
    // a's first step was scheduled while it decoded alone (10 ms); every later step of
    // either runs with two decoding sequences: 10 × (1 + 1 × (2 − 1)) = 20 ms.
    expect(a.rec.tokenAt).toEqual([0, 10, 30]);
    expect(b.rec.tokenAt).toEqual([0, 20, 40]);
  });

  test("the stored blocks are announced with engine hashes and the router's tokens hashes", async () => {
    const { clock, engine, events } = setup();
    const tokens = prompt(9);
    track(engine, clock, { tokens });
    await clock.run();
    const local = computeBlockHashes(tokens, 4);
    const eng = engineBlockHashes(local);
    expect(events.length).toBe(1);
    expect(events[0]).toEqual({
      workerId: 42n,
      event: {
        eventId: 0n,
        dpRank: 0,
        data: {
          type: "stored",
          parentHash: null,
          blocks: [
            { blockHash: eng[0]!, tokensHash: local[0]! },
            { blockHash: eng[1]!, tokensHash: local[1]! },
          ],
        },
      },
    });
    expect(eng[0]).not.toBe(local[0]!);
  });

  test("a LoRA request's blocks are salted by the adapter name and never hit base blocks", async () => {
    const { clock, engine, events } = setup({ loras: ["adapter-a"] });
    const tokens = prompt(8);
    track(engine, clock, { tokens });
    await clock.run();
    const l = track(engine, clock, { tokens, loraName: "adapter-a" });
    await clock.run();
    expect(l.rec.cached).toBe(0);
    const stored = events[1]!.event.data;
    if (stored.type !== "stored") throw new Error("expected a Stored event");
    expect(stored.blocks.map((b) => b.tokensHash)).toEqual([
      ...computeBlockHashes(tokens, 4, { loraName: "adapter-a" }),
    ]);
  });

  test("an abort while queued leaves the queue and releases nothing it did not take", async () => {
    const { clock, engine } = setup({ maxConcurrency: 1 });
    const a = track(engine, clock, { tokens: prompt(4), maxTokens: 2 });
    const ctl = new AbortController();
    const b = track(engine, clock, { tokens: prompt(4, 50), signal: ctl.signal });
    await settle();
    ctl.abort();
    await expect(b.done).rejects.toBeInstanceOf(AbortedError);
    await clock.run();
    await a.done;
    expect(engine.ranks[0]!.slots.held).toBe(0);
    expect(engine.ranks[0]!.slots.waiting).toBe(0);
    expect(engine.counters.aborted).toBe(1);
  });

  test("an abort while decoding stops the tokens and unpins the blocks", async () => {
    const { clock, engine } = setup();
    const ctl = new AbortController();
    const a = track(engine, clock, { tokens: prompt(8), maxTokens: 100, signal: ctl.signal });
    await clock.run(30);
    ctl.abort();
    await clock.run();
    await expect(a.done).rejects.toBeInstanceOf(AbortedError);
    expect(a.rec.tokenAt.length).toBeLessThan(5);
    const rank = engine.ranks[0]!;
    expect(rank.kv.cache.pinnedCount).toBe(0);
    expect(rank.kv.cache.size).toBe(2); // computed blocks stay cached
    expect(rank.decoding).toBe(0);
  });

  test("an abort during prefill ends it at once: no blocks stored, the lane free for the next prompt", async () => {
    const { clock, engine, events } = setup();
    const ctl = new AbortController();
    // 400 tokens at 1 ms each: a 400 ms prefill, cut at 50 ms.
    const a = track(engine, clock, { tokens: prompt(400), maxTokens: 2, signal: ctl.signal });
    const b = track(engine, clock, { tokens: prompt(8, 1000), maxTokens: 1 });
    await clock.run(50);
    ctl.abort();
    await expect(a.done).rejects.toBeInstanceOf(AbortedError);
    await clock.run();
    await b.done;
    // Before: the aborted prefill ran to its end (400 ms) before the next one started.
    expect(b.rec.startAt).toBe(50);
    expect(a.rec.tokenAt).toEqual([]);
    const rank = engine.ranks[0]!;
    expect(rank.kv.cache.pinnedCount).toBe(0);
    expect(rank.kv.cache.size).toBe(2); // b's blocks only: a's were never computed
    expect(events.filter((e) => e.event.data.type === "stored").length).toBe(1);
    expect(engine.counters.aborted).toBe(1);
  });

  test("model names resolve to base, a loaded adapter, or unknown", () => {
    const { engine } = setup({ loras: ["a"], model: "base" });
    expect(engine.resolveModel(undefined)).toBeUndefined();
    expect(engine.resolveModel("base")).toBeUndefined();
    expect(engine.resolveModel("a")).toBe("a");
    expect(engine.resolveModel("b")).toBeNull();
  });

  test("ranks are picked round-robin unless the router names one", () => {
    const { engine } = setup({ dpRanks: 3 });
    expect([engine.pickRank(), engine.pickRank(), engine.pickRank(), engine.pickRank()]).toEqual([
      0, 1, 2, 0,
    ]);
    expect(engine.pickRank(2)).toBe(2);
  });

  test("the same prompt and seed give the same text; another seed another text", async () => {
    const texts: string[] = [];
    for (const seed of [1, 1, 2]) {
      const { clock, engine } = setup({ seed });
      const a = track(engine, clock, { tokens: prompt(8), maxTokens: 12 });
      await clock.run();
      texts.push(a.rec.text);
    }
    expect(texts[0]).toBe(texts[1]!);
    expect(texts[0]).not.toBe(texts[2]!);
    expect(texts[0]).toMatch(/^[a-z ]{12}$/);
  });
});
