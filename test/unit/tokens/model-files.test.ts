import { describe, expect, test } from "bun:test";
import { loadModelFiles, pickChatTemplate } from "../../../src/tokens/model-files.ts";

const TOKENIZER = JSON.stringify({ model: { type: "BPE" }, added_tokens: [] });

function reader(files: Record<string, string>) {
  return async (path: string) => {
    const f = files[path];
    if (f === undefined) throw new Error(`ENOENT ${path}`);
    return f;
  };
}

describe("loadModelFiles", () => {
  test("special tokens as strings or AddedToken dicts; unset ones left out", async () => {
    const m = await loadModelFiles(
      "/m",
      reader({
        "/m/tokenizer.json": TOKENIZER,
        "/m/tokenizer_config.json": JSON.stringify({
          bos_token: { content: "<s>", lstrip: false },
          eos_token: "</s>",
          unk_token: null,
          chat_template: "T",
        }),
      }),
    );
    expect(m.specialTokens).toEqual({ bos_token: "<s>", eos_token: "</s>" });
    expect(m.chatTemplates).toBe("T");
  });
  test("chat_template.jinja wins over tokenizer_config; chat_template.json is the fallback", async () => {
    const base = {
      "/m/tokenizer.json": TOKENIZER,
      "/m/tokenizer_config.json": JSON.stringify({ chat_template: "config" }),
    };
    expect(
      (await loadModelFiles("/m", reader({ ...base, "/m/chat_template.jinja": "jinja" })))
        .chatTemplates,
    ).toBe("jinja");
    const noConfig = {
      "/m/tokenizer.json": TOKENIZER,
      "/m/chat_template.json": JSON.stringify({ chat_template: "json" }),
    };
    expect((await loadModelFiles("/m", reader(noConfig))).chatTemplates).toBe("json");
    expect(
      (await loadModelFiles("/m", reader({ "/m/tokenizer.json": TOKENIZER }))).chatTemplates,
    ).toBeUndefined();
  });
  test("named templates: tool_use with tools, default otherwise", async () => {
    const config = {
      chat_template: [
        { name: "default", template: "D" },
        { name: "tool_use", template: "T" },
      ],
    };
    const m = await loadModelFiles(
      "/m",
      reader({
        "/m/tokenizer.json": TOKENIZER,
        "/m/tokenizer_config.json": JSON.stringify(config),
      }),
    );
    expect(pickChatTemplate(m.chatTemplates, true)).toBe("T");
    expect(pickChatTemplate(m.chatTemplates, false)).toBe("D");
    expect(pickChatTemplate({ default: "D" }, true)).toBe("D");
  });
  test("errors name the file and the problem", async () => {
    expect(String(await loadModelFiles("/m", reader({})).catch((e) => e))).toContain(
      "/m/tokenizer.json: cannot be read",
    );
    expect(
      String(await loadModelFiles("/m", reader({ "/m/tokenizer.json": "{" })).catch((e) => e)),
    ).toContain("not valid JSON");
    expect(
      String(await loadModelFiles("/m", reader({ "/m/tokenizer.json": "{}" })).catch((e) => e)),
    ).toContain('no "model"');
    const badTemplate = {
      "/m/tokenizer.json": TOKENIZER,
      "/m/tokenizer_config.json": JSON.stringify({ chat_template: 3 }),
    };
    expect(String(await loadModelFiles("/m", reader(badTemplate)).catch((e) => e))).toContain(
      "chat_template must be",
    );
  });
});
