/**
 * Every token id of every reference case (test/vectors/tokens, made by transformers +
 * HF tokenizers from generate.py) with every encoder (the byte-level BPE of
 * bpe-library.ts — both of its merge paths —, @huggingface/tokenizers, the native HF
 * tokenizers), on every real tokenizer committed (Qwen3, Llama 3.1, Mistral NeMo, DeepSeek V3,
 * Gemma 3, GPT-4o, gpt-oss): chat
 * requests (rendered text and ids), plain texts (with and without special tokens), the
 * piece-by-piece encoding the segment cache relies on, and the cache under a tight bound.
 */
import { describe, expect, test } from "bun:test";
import { gunzipSync } from "node:zlib";
import { readFileSync, readdirSync } from "node:fs";
import { readTextWithBun } from "../../../src/runtime/bun/tokens/load-on-bun.ts";
import {
  type BpeTokenizerJson,
  byteLevelBpePlan,
  createBpeLibrary,
} from "../../../src/tokens/bpe-library.ts";
import type { HfEngineTokenizer } from "../../../src/tokens/hf-engine-tokenizer.ts";
import { type ChatTemplateRequest, loadEngineTokenizer } from "../../../src/tokens/index.ts";
import { createNativeLibrary } from "../../../src/runtime/bun/tokens/native-library.ts";

interface Case {
  id: string;
  kind: "chat" | "text";
  request?: ChatTemplateRequest;
  rendered?: string;
  text?: string;
  add_special_tokens?: boolean;
  ids: number[];
}

const ROOT = `${import.meta.dir}/../../..`;
/** Hundreds of cases of up to 23k tokens: seconds each on a loaded 2-core machine (bun's default is 5 s). */
const TIMEOUT_MS = 60_000;
/** Every case set in the folder (generate.py writes the committed ones; see its header for more). */
const MODELS = readdirSync(`${ROOT}/test/vectors/tokens`)
  .filter((f) => f.endsWith(".json.gz"))
  .map((f) => f.slice(0, -".json.gz".length));

function vectors(model: string): { model: string; chat_template: string | null; cases: Case[] } {
  return JSON.parse(
    gunzipSync(readFileSync(`${ROOT}/test/vectors/tokens/${model}.json.gz`)).toString("utf8"),
  );
}

function tokenizerDir(model: string): string {
  const doc = vectors(model);
  return doc.model.startsWith("/") ? doc.model : `${ROOT}/${doc.model}`;
}

/** First differing index, to make a failure readable. */
function firstDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

/** Committed case sets; the later families are smaller (generate.py's N_CHAT_MORE), two have no chat template. */
const COMMITTED: Record<string, { chats: number }> = {
  qwen3: { chats: 260 },
  llama3_1: { chats: 260 },
  qwen3_parts: { chats: 260 },
  mistral_nemo: { chats: 160 },
  deepseek_v3: { chats: 160 },
  gemma3: { chats: 160 },
  gpt4o: { chats: 0 },
  gptoss: { chats: 0 },
};

const FIRST_SETS = new Set(["qwen3", "llama3_1", "qwen3_parts"]);

test("the committed case sets are all there", () => {
  for (const m of Object.keys(COMMITTED)) expect(MODELS).toContain(m);
});

/** Whether the byte-level BPE takes this tokenizer (Gemma 3's byte-fallback BPE goes to the library). */
function bpeTakes(dir: string): boolean {
  return (
    typeof byteLevelBpePlan(
      JSON.parse(readFileSync(`${dir}/tokenizer.json`, "utf8")) as BpeTokenizerJson,
    ) !== "string"
  );
}

for (const model of MODELS) {
  const doc = vectors(model);
  const dir = doc.model.startsWith("/") ? doc.model : `${ROOT}/${doc.model}`;
  const bpe = bpeTakes(dir);
  // "bpe": the default pure path (bpe-library.ts); "hf-js": @huggingface/tokenizers forced.
  for (const variant of ["bpe", "hf-js", "native"] as const) {
    const impl = variant === "native" ? "native" : "pure";
    describe(`vectors ${model} / ${variant}`, () => {
      // A case set with its own template: the model's files, that template in tokenizer_config.json.
      const readText = async (path: string) => {
        const text = await readTextWithBun(path);
        if (doc.chat_template === null || !path.endsWith("tokenizer_config.json")) return text;
        return JSON.stringify({ ...JSON.parse(text), chat_template: doc.chat_template });
      };
      const load = (cacheTokens?: number) =>
        loadEngineTokenizer(dir, {
          impl,
          readText,
          nativeLibrary: createNativeLibrary,
          cacheTokens,
          byteLevelBpe: variant === "bpe",
        });

      test(
        `${doc.cases.length} cases: rendered text and every id`,
        async () => {
          const tok = await load();
          expect(tok.segmentCache).toBe(true);
          expect(tok.implementation.includes("byte-level BPE (pure JS")).toBe(
            variant === "bpe" && bpe,
          );
          const failures: string[] = [];
          for (const c of doc.cases) {
            if (c.kind === "chat") {
              const rendered = tok.renderChat(c.request!);
              if (rendered !== c.rendered) {
                const at = firstDiff(
                  [...rendered].map((x) => x.codePointAt(0)!),
                  [...c.rendered!].map((x) => x.codePointAt(0)!),
                );
                failures.push(`${c.id}: rendered text differs at char ${at}`);
                continue;
              }
            }
            const ids =
              c.kind === "chat"
                ? await tok.encodeChat(c.request!)
                : await tok.encodeText(c.text!, c.add_special_tokens!);
            const at = firstDiff(ids, c.ids);
            if (at >= 0)
              failures.push(
                `${c.id}: ids differ at ${at} (got ${ids.length} ids, want ${c.ids.length})`,
              );
          }
          expect(failures).toEqual([]);
          expect(doc.cases.filter((c) => c.kind === "chat").length).toBe(
            COMMITTED[model]?.chats ?? doc.cases.filter((c) => c.kind === "chat").length,
          );
          expect(Math.max(...doc.cases.map((c) => c.ids.length))).toBeGreaterThanOrEqual(8192);
        },
        TIMEOUT_MS,
      );

      // Texts only (no chat template): the segment cache is for chats. The later families run
      // the cache's tests with their default encoder only (the suite's time: ~8 case sets).
      const defaultVariant = bpe ? "bpe" : "hf-js";
      if (
        doc.cases.some((c) => c.kind === "chat") &&
        (FIRST_SETS.has(model) || variant === defaultVariant)
      ) {
        test(
          "pieces between added tokens encode independently (the segment cache's premise), uncached",
          async () => {
            const tok = (await load()) as HfEngineTokenizer;
            const failures: string[] = [];
            for (const c of doc.cases) {
              if (c.kind !== "chat") continue;
              const ids = await tok.encodeSegmented(c.rendered!, undefined);
              if (firstDiff(ids, c.ids) >= 0) failures.push(c.id);
            }
            expect(failures).toEqual([]);
          },
          TIMEOUT_MS,
        );

        test(
          "a tight cache bound holds and the cached path still gives every id",
          async () => {
            const bound = 4096;
            const tok = (await load(bound)) as HfEngineTokenizer;
            const cache = tok.cacheState!;
            let maxHeld = 0;
            let evicted = false;
            for (const c of doc.cases) {
              if (c.kind !== "chat") continue;
              // Twice: the second time mostly from the cache.
              for (let k = 0; k < 2; k++) {
                const ids = await tok.encodeChat(c.request!);
                expect(firstDiff(ids, c.ids)).toBe(-1);
              }
              maxHeld = Math.max(maxHeld, cache.heldTokens);
              if (cache.heldTokens < maxHeld) evicted = true;
            }
            expect(maxHeld).toBeLessThanOrEqual(bound);
            expect(evicted).toBe(true);
          },
          TIMEOUT_MS,
        );
      }
    });
  }
}

describe("the byte-level BPE's two merge paths and decode", () => {
  for (const model of MODELS.filter((m) => !m.includes("_parts") && bpeTakes(tokenizerDir(m)))) {
    test(
      `${model}: every id through the heap path alone, the scan path alone, and decode as the library`,
      async () => {
        const doc = vectors(model);
        const dir = doc.model.startsWith("/") ? doc.model : `${ROOT}/${doc.model}`;
        const json = await readTextWithBun(`${dir}/tokenizer.json`);
        const plan = byteLevelBpePlan(JSON.parse(json) as BpeTokenizerJson);
        if (typeof plan === "string") throw new Error(plan);
        const config = JSON.parse(await readTextWithBun(`${dir}/tokenizer_config.json`)) as Record<
          string,
          unknown
        >;
        const heapOnly = createBpeLibrary(plan, config, 0);
        const scanOnly = createBpeLibrary(plan, config, Number.MAX_SAFE_INTEGER);
        const library = await loadEngineTokenizer(dir, {
          readText: readTextWithBun,
          byteLevelBpe: false,
        });
        const failures: string[] = [];
        for (const c of doc.cases) {
          const [text, special] =
            c.kind === "chat" ? [c.rendered!, false] : [c.text!, c.add_special_tokens!];
          for (const [name, lib] of [
            ["heap", heapOnly],
            ["scan", scanOnly],
          ] as const) {
            if (firstDiff(lib.encode(text, special) as Uint32Array, c.ids) >= 0)
              failures.push(`${c.id} ${name}`);
          }
          const ids = Uint32Array.from(c.ids);
          if (heapOnly.decode(ids) !== (await library.decode(ids))) failures.push(`${c.id} decode`);
        }
        expect(failures).toEqual([]);
      },
      TIMEOUT_MS,
    );
  }
});
