import { describe, expect, test } from "bun:test";
import {
  MEDIA_PART_TOKENS,
  promptCharge,
  SPECIAL_PER_SEQUENCE,
  TEMPLATE_PER_CHAT,
  TEMPLATE_PER_MESSAGE,
  textBound,
  utf8Bytes,
} from "../../../src/protect/prompt-charge.ts";

const S = SPECIAL_PER_SEQUENCE;

describe("promptCharge", () => {
  test("exact tokens for the whole prompt field are the charge; never below the routed tokens", () => {
    expect(promptCharge("/v1/completions", { prompt: ["a", "b".repeat(500)] }, 7, 3)).toBe(7);
    expect(
      promptCharge(
        "/v1/chat/completions",
        { messages: [], tools: [{ description: "x".repeat(900) }] },
        42,
        42,
      ),
    ).toBe(42);
    expect(promptCharge("/detokenize", { tokens: [1, 2, 3] }, undefined, 1)).toBe(1);
  });

  test("a batch is every prompt, text in UTF-8 bytes, ids one each", () => {
    expect(promptCharge("/v1/completions", { prompt: ["ab", "é€"] }, undefined, 2)).toBe(
      2 + S + 5 + S,
    );
    expect(
      promptCharge(
        "/v1/completions",
        {
          prompt: [
            [1, 2],
            [3, 4, 5],
          ],
        },
        undefined,
        2,
      ),
    ).toBe(2 + S + 3 + S);
    expect(promptCharge("/v1/embeddings", { input: ["a", "bbbb"] }, undefined, 1)).toBe(
      1 + S + 4 + S,
    );
    expect(promptCharge("/generate", { text: "abc" }, undefined, 3)).toBe(3 + S);
  });

  test("a chat without the tokenizer: the template's allowance, names, tools and documents", () => {
    const messages = [{ role: "user", content: "hi", name: "n".repeat(100) }];
    const base = TEMPLATE_PER_CHAT + TEMPLATE_PER_MESSAGE + textBound(messages);
    expect(textBound(messages)).toBe(4 + 4 + 7 + 2 + 4 + 100);
    const tools = [{ type: "function", function: { name: "f", description: "d".repeat(1000) } }];
    expect(
      promptCharge(
        "/v1/chat/completions",
        { messages, tools, documents: [{ text: "t".repeat(50) }] },
        undefined,
        1,
      ),
    ).toBe(base + textBound(tools) + 4 + 50);
    expect(textBound(tools)).toBeGreaterThan(1000);
  });

  test("media parts: a fixed charge each, their bytes not counted", () => {
    const image = {
      type: "image_url",
      image_url: { url: `data:image/png;base64,${"A".repeat(100_000)}` },
    };
    expect(
      textBound([
        { type: "text", text: "hi" },
        image,
        { type: "input_audio", input_audio: { data: "zz" } },
      ]),
    ).toBe(4 + 4 + 4 + 2 + 2 * MEDIA_PART_TOKENS);
  });

  test("responses: input, instructions and tools", () => {
    const c = promptCharge(
      "/v1/responses",
      { input: "hi", instructions: "i".repeat(300) },
      undefined,
      2,
    );
    expect(c).toBe(TEMPLATE_PER_CHAT + TEMPLATE_PER_MESSAGE + 2 + 300);
  });

  test("pairs: a query is counted once per document", () => {
    expect(
      promptCharge(
        "/v1/rerank",
        { query: "q".repeat(100), documents: ["a", "bb", "ccc"] },
        undefined,
        1,
      ),
    ).toBe(3 * 100 + 6 + 3 * S);
    expect(promptCharge("/score", { text_1: "q", text_2: ["x".repeat(1000)] }, undefined, 1)).toBe(
      1 + 1000 + S,
    );
    expect(promptCharge("/score", { text_1: ["a", "bb"], text_2: ["c", "dd"] }, undefined, 1)).toBe(
      3 + 3 + 2 * S,
    );
  });

  test("utf8Bytes counts as TextEncoder does", () => {
    for (const s of ["", "abc", "é", "€", "😀", "a😀b", "\ud800x", "x\udc00"])
      expect(utf8Bytes(s)).toBe(new TextEncoder().encode(s).length);
  });
});
