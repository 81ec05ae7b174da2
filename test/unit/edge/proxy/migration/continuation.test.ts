/**
 * The continuation's body (src/edge/proxy/migration/continuation.ts) from the client's body and
 * what was sent: what is carried over, what is changed, and which requests are not continued.
 */
import { describe, expect, test } from "bun:test";
import {
  planContinuation,
  type ApiKind,
} from "../../../../../src/edge/proxy/migration/continuation.ts";
import { Transcript } from "../../../../../src/edge/proxy/migration/transcript.ts";

const enc = new TextEncoder();

function sent(
  kind: ApiKind,
  pieces: readonly string[],
  extra: Record<string, unknown> = {},
): Transcript {
  const t = new Transcript();
  if (kind === "chat")
    t.chunk({
      id: "c1",
      created: 5,
      model: "m",
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
    });
  for (const p of pieces) {
    const choice =
      kind === "chat"
        ? { index: 0, delta: { content: p }, finish_reason: null, ...extra }
        : { index: 0, text: p, finish_reason: null, ...extra };
    t.chunk({ id: "c1", created: 5, model: "m", choices: [choice] });
  }
  return t;
}

function plan(kind: ApiKind, body: Record<string, unknown>, t: Transcript) {
  const p = planContinuation(kind, enc.encode(JSON.stringify(body)), t);
  return {
    p,
    body:
      p.kind === "continue"
        ? (JSON.parse(new TextDecoder().decode(p.body)) as Record<string, unknown>)
        : undefined,
  };
}

describe("the continuation of a stream", () => {
  test("completions: prompt + text so far, max_tokens less what was produced, seed, stop and sampling kept", () => {
    const { p, body } = plan(
      "completions",
      {
        prompt: "hello",
        max_tokens: 10,
        seed: 7,
        stop: ["\n\n"],
        temperature: 0.3,
        top_p: 0.9,
        stream: true,
        stream_options: { include_usage: true },
      },
      sent("completions", ["a", "b", "c"]),
    );
    expect(p.kind).toBe("continue");
    expect(body).toEqual({
      prompt: "helloabc",
      max_tokens: 7,
      seed: 7,
      stop: ["\n\n"],
      temperature: 0.3,
      top_p: 0.9,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(p.kind === "continue" && p.produced).toBe(3);
  });

  test("chat: the partial assistant message, continue_final_message on, the generation prompt off", () => {
    const messages = [{ role: "user", content: "hi" }];
    const { body } = plan(
      "chat",
      { messages, max_completion_tokens: 8, min_tokens: 5, seed: 1 },
      sent("chat", ["ab", "c"]),
    );
    expect(body).toEqual({
      messages: [...messages, { role: "assistant", content: "abc" }],
      max_completion_tokens: 6,
      min_tokens: 3,
      seed: 1,
      continue_final_message: true,
      add_generation_prompt: false,
    });
  });

  test("chat that already continued its own final message: the text extends that message", () => {
    const messages = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "Sure: " },
    ];
    const { body } = plan(
      "chat",
      { messages, continue_final_message: true, add_generation_prompt: false },
      sent("chat", ["x"]),
    );
    expect(body!.messages).toEqual([messages[0], { role: "assistant", content: "Sure: x" }]);
  });

  test("nothing sent but the role: the request is sent again as it was", () => {
    const b = { messages: [{ role: "user", content: "hi" }], max_tokens: 4 };
    expect(plan("chat", b, sent("chat", [])).body).toEqual(b);
  });

  test("a token-id prompt continues with the engine's token ids, and is refused without them", () => {
    const ids = plan(
      "completions",
      { prompt: [1, 2, 3], max_tokens: 5 },
      sent("completions", ["x", "y"], { token_ids: [9] }),
    );
    expect(ids.body!.prompt).toEqual([1, 2, 3, 9, 9]);
    expect(ids.body!.max_tokens).toBe(3);
    const none = plan("completions", { prompt: [1, 2, 3] }, sent("completions", ["x"]));
    expect(none.p).toEqual({
      kind: "refused",
      why: "a token-id prompt, and the engine did not return its output's token ids",
    });
  });

  test("every output token spent: finished, no continuation", () => {
    expect(
      plan("completions", { prompt: "p", max_tokens: 2 }, sent("completions", ["a", "b"])).p,
    ).toEqual({ kind: "finished", produced: 2 });
  });

  test("not continued: n > 1, best_of, echo, guided decoding, a half-sent tool call, reasoning deltas", () => {
    const t = () => sent("completions", ["a"]);
    const why = (kind: ApiKind, b: Record<string, unknown>, tr = t()) => {
      const p = planContinuation(kind, enc.encode(JSON.stringify(b)), tr);
      return p.kind === "refused" ? p.why : p.kind;
    };
    expect(why("completions", { prompt: "p", n: 2 })).toBe("n > 1");
    expect(why("completions", { prompt: "p", best_of: 3 })).toBe("best_of > 1");
    expect(why("completions", { prompt: "p", echo: true })).toBe("echo");
    expect(why("completions", { prompt: "p", guided_json: { type: "object" } })).toBe(
      "guided decoding (guided_json)",
    );
    expect(
      why("chat", { messages: [], response_format: { type: "json_schema", json_schema: {} } }),
    ).toBe("guided decoding (response_format)");
    expect(
      why("chat", { messages: [], response_format: { type: "text" } }, sent("chat", ["a"])),
    ).toBe("continue");
    const tool = new Transcript();
    tool.chunk({
      choices: [
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, function: { name: "f", arguments: '{"a' } }] },
        },
      ],
    });
    expect(why("chat", { messages: [{ role: "user", content: "x" }] }, tool)).toBe(
      "a tool call was half-sent",
    );
    const reasoning = new Transcript();
    reasoning.chunk({ choices: [{ index: 0, delta: { reasoning_content: "hmm" } }] });
    expect(why("chat", { messages: [{ role: "user", content: "x" }] }, reasoning)).toBe(
      "reasoning deltas were sent",
    );
  });
});

describe("logprobs across a move", () => {
  test("the text sent is counted in code points for the next text_offset; tokens from logprobs entries", () => {
    const lp = (tokens: string[]) => ({
      logprobs: {
        text_offset: [0],
        token_logprobs: tokens.map(() => -1),
        tokens,
        top_logprobs: tokens.map((t) => ({ [t]: -1 })),
      },
    });
    const t = new Transcript();
    // Two tokens in one chunk (an engine batching its output): both counted as produced.
    t.chunk({ choices: [{ index: 0, text: "é😀", finish_reason: null, ...lp(["é", "😀"]) }] });
    t.chunk({ choices: [{ index: 0, text: "x", finish_reason: null, ...lp(["x"]) }] });
    const { p, body } = plan("completions", { prompt: "p", max_tokens: 10, logprobs: 2 }, t);
    expect(p.kind).toBe("continue");
    expect((p as { sentChars: number }).sentChars).toBe(3);
    expect((p as { produced: number }).produced).toBe(3);
    expect(body!.max_tokens).toBe(7);
    expect(body!.logprobs).toBe(2);
  });

  test("prompt_logprobs: not continued (the continuation's prompt is not the client's)", () => {
    const p = planContinuation(
      "completions",
      enc.encode(JSON.stringify({ prompt: "p", prompt_logprobs: 1 })),
      sent("completions", ["a"]),
    );
    expect(p).toEqual({ kind: "refused", why: "prompt_logprobs" });
  });
});
