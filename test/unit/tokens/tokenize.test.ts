import { describe, expect, test } from "bun:test";
import { renderChat, tokenizeChat, tokenizeText } from "../../../src/tokens/tokenize.ts";

describe("tokenizeText", () => {
  test("one token per UTF-8 byte", () => {
    expect([...tokenizeText("ab")]).toEqual([97, 98]);
    expect([...tokenizeText("é")]).toEqual([0xc3, 0xa9]);
    expect(tokenizeText("").length).toBe(0);
  });
  test("is deterministic", () => {
    expect(tokenizeText("hello world")).toEqual(tokenizeText("hello world"));
  });
  test("equals the UTF-8 encoding for any text: 4-byte characters, lone surrogates, long and very long strings", () => {
    const samples = [
      "plain ascii",
      "mixed: é ü 中文 🚀 \u0000 end",
      "lone surrogate \ud800 and \udc00",
      "x".repeat(5000) + "é".repeat(3000), // grows the reused buffer
      "short after long",
      "🚀".repeat(70_000) + "y".repeat(200_000), // past the reused buffer's limit
    ];
    for (const text of samples) {
      const want = Uint32Array.from(new TextEncoder().encode(text));
      expect(tokenizeText(text), text.slice(0, 20)).toEqual(want);
    }
  });
  test("results never share memory (the encoding buffer is reused between calls)", () => {
    const a = tokenizeText("first prompt");
    const b = tokenizeText("second");
    expect(new TextDecoder().decode(Uint8Array.from(a))).toBe("first prompt");
    expect(a.buffer).not.toBe(b.buffer);
  });
});

describe("tokenizeChat", () => {
  test("renders the fixed template and opens the assistant turn", () => {
    const msgs = [
      { role: "system", content: "be brief" },
      { role: "user", content: "hi" },
    ];
    expect(renderChat(msgs)).toBe("<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\n");
    expect(tokenizeChat(msgs)).toEqual(
      tokenizeText("<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\n"),
    );
  });
  test("a later turn extends the earlier prompt plus the answer, token for token", () => {
    const turn1 = [{ role: "user", content: "hi" }];
    const turn2 = [
      ...turn1,
      { role: "assistant", content: "hello" },
      { role: "user", content: "more" },
    ];
    const t1 = tokenizeChat(turn1);
    const t2 = tokenizeChat(turn2);
    expect([...t2.subarray(0, t1.length)]).toEqual([...t1]);
    expect(new TextDecoder().decode(Uint8Array.from(t2.subarray(t1.length, t1.length + 5)))).toBe(
      "hello",
    );
  });
});
