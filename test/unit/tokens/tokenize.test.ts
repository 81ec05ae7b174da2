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
});

describe("tokenizeChat", () => {
  test("renders the fixed template and opens the assistant turn", () => {
    const msgs = [{ role: "system", content: "be brief" }, { role: "user", content: "hi" }];
    expect(renderChat(msgs)).toBe("<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\n");
    expect(tokenizeChat(msgs)).toEqual(tokenizeText("<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\n"));
  });
  test("a later turn extends the earlier prompt plus the answer, token for token", () => {
    const turn1 = [{ role: "user", content: "hi" }];
    const turn2 = [...turn1, { role: "assistant", content: "hello" }, { role: "user", content: "more" }];
    const t1 = tokenizeChat(turn1);
    const t2 = tokenizeChat(turn2);
    expect([...t2.subarray(0, t1.length)]).toEqual([...t1]);
    expect(new TextDecoder().decode(Uint8Array.from(t2.subarray(t1.length, t1.length + 5)))).toBe("hello");
  });
});
