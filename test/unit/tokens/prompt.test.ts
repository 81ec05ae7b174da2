import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import { promptTokens } from "../../../src/tokens/prompt.ts";
import { tokenizeChat, tokenizeText } from "../../../src/tokens/tokenize.ts";
import { thrownBy } from "../../support/errors.ts";

const errorOf = (fn: () => unknown): RouterError => thrownBy(RouterError, fn);

describe("promptTokens for completions", () => {
  test("a string prompt is tokenized", () => {
    expect(promptTokens({ prompt: "abc" })).toEqual(tokenizeText("abc"));
  });
  test("a token-id prompt is used as is", () => {
    expect([...promptTokens({ prompt: [5, 70000, 4294967295] })]).toEqual([5, 70000, 4294967295]);
  });
  test("a batch of one prompt is accepted", () => {
    expect(promptTokens({ prompt: ["abc"] })).toEqual(tokenizeText("abc"));
    expect([...promptTokens({ prompt: [[1, 2]] })]).toEqual([1, 2]);
  });
  test("a batch of several prompts is rejected with a message saying one is supported", () => {
    const e = errorOf(() => promptTokens({ prompt: ["a", "b"] }));
    expect(e.code).toBe("invalid_request");
    expect(e.message).toContain("only one prompt");
  });
  test("bad token ids name the offending index", () => {
    expect(errorOf(() => promptTokens({ prompt: [1, -2] })).field).toBe("prompt[1]");
    expect(errorOf(() => promptTokens({ prompt: [1, 1.5] })).field).toBe("prompt[1]");
    expect(errorOf(() => promptTokens({ prompt: [1, "x"] })).field).toBe("prompt[1]");
  });
  test("empty and missing prompts are rejected", () => {
    expect(errorOf(() => promptTokens({ prompt: "" })).code).toBe("invalid_request");
    expect(errorOf(() => promptTokens({ prompt: [] })).code).toBe("invalid_request");
    expect(errorOf(() => promptTokens({})).message).toContain("prompt");
    expect(errorOf(() => promptTokens("x")).code).toBe("invalid_request");
    expect(errorOf(() => promptTokens({ prompt: 5 })).field).toBe("prompt");
  });
});

describe("promptTokens for chat", () => {
  test("messages go through the chat template", () => {
    const messages = [{ role: "user", content: "hi" }];
    expect(promptTokens({ messages })).toEqual(tokenizeChat(messages));
  });
  test("text content parts are concatenated and null content is empty", () => {
    const parts = {
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "h" },
            { type: "text", text: "i" },
          ],
        },
      ],
    };
    expect(promptTokens(parts)).toEqual(tokenizeChat([{ role: "user", content: "hi" }]));
    expect(promptTokens({ messages: [{ role: "assistant", content: null }] })).toEqual(
      tokenizeChat([{ role: "assistant", content: "" }]),
    );
  });
  test("bad messages are rejected with the field path", () => {
    expect(errorOf(() => promptTokens({ messages: [] })).field).toBe("messages");
    expect(errorOf(() => promptTokens({ messages: [{ content: "x" }] })).field).toBe(
      "messages[0].role",
    );
    expect(
      errorOf(() =>
        promptTokens({ messages: [{ role: "user", content: [{ type: "image_url" }] }] }),
      ).field,
    ).toBe("messages[0].content[0]");
  });
});
