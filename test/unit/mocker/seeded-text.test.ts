import { describe, expect, test } from "bun:test";
import { fakeTextOffset, fakeToken } from "../../../src/mocker/fake-text.ts";
import { chatPromptTokens, completionPromptTokens } from "../../../src/tokens/prompt.ts";

/** What the engine writes: `n` tokens for `prompt` (the engine's loop, fake-text.ts). */
function write(prompt: Uint32Array, n: number, requestSeed?: number, engineSeed = 0): string {
  const offset = fakeTextOffset(engineSeed, prompt, requestSeed);
  let text = "";
  for (let i = 0; i < n; i++) text += fakeToken(offset, i);
  return text;
}

describe("seeded fake text: a continuation goes on with the same characters", () => {
  test("completions: prompt + text so far continues the text", () => {
    const prompt = "tell me a story about a router";
    const whole = write(completionPromptTokens(prompt), 40, 7);
    for (const k of [1, 5, 17, 39]) {
      const rest = write(completionPromptTokens(prompt + whole.slice(0, k)), 40 - k, 7);
      expect(whole.slice(0, k) + rest).toBe(whole);
    }
  });

  test("chat: messages + the partial assistant message (continue_final_message) continues the text", () => {
    const messages = [{ role: "user", content: "hello there" }];
    const whole = write(chatPromptTokens(messages), 30, 42);
    for (const k of [1, 12, 29]) {
      const cont = chatPromptTokens(
        [...messages, { role: "assistant", content: whole.slice(0, k) }],
        true,
      );
      expect(whole.slice(0, k) + write(cont, 30 - k, 42)).toBe(whole);
    }
  });

  test("the seed matters, and the engine seed too", () => {
    const p = completionPromptTokens("same prompt");
    expect(write(p, 30, 1)).not.toBe(write(p, 30, 2));
    expect(write(p, 30, 1, 0)).not.toBe(write(p, 30, 1, 5));
    expect(write(p, 30, 1)).toBe(write(p, 30, 1));
  });

  test("without a request seed the text still depends on the prompt's tokens", () => {
    expect(write(completionPromptTokens("abcd"), 30)).not.toBe(
      write(completionPromptTokens("abce"), 30),
    );
  });
});
