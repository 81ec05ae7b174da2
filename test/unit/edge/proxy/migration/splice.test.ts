/**
 * The splice (src/edge/proxy/migration/splice.ts): a continuation's chunks rewritten onto the
 * first stream: its id, created and model; no second role chunk; usage with the prompt counted
 * once; an error event is refused.
 */
import { describe, expect, test } from "bun:test";
import { Splicer } from "../../../../../src/edge/proxy/migration/splice.ts";
import { Transcript, textOf } from "../../../../../src/edge/proxy/migration/transcript.ts";

function first(): Transcript {
  const t = new Transcript();
  t.chunk({
    id: "chatcmpl-first",
    created: 100,
    model: "m",
    choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
  });
  t.chunk({
    id: "chatcmpl-first",
    created: 100,
    model: "m",
    choices: [{ index: 0, delta: { content: "ab" }, finish_reason: null }],
  });
  return t;
}

describe("splicing a continuation onto the first stream", () => {
  test("the role chunk is dropped, id, created and model are the first stream's, the text is added", () => {
    const t = first();
    const s = new Splicer(t, 2);
    expect(
      s.data(
        JSON.stringify({
          id: "chatcmpl-2",
          created: 200,
          model: "m2",
          choices: [
            {
              index: 0,
              delta: { role: "assistant", content: "" },
              logprobs: null,
              finish_reason: null,
            },
          ],
        }),
      ),
    ).toEqual({ ok: true, payload: undefined });
    const r = s.data(
      JSON.stringify({
        id: "chatcmpl-2",
        created: 200,
        model: "m2",
        choices: [{ index: 0, delta: { content: "c" }, logprobs: null, finish_reason: "length" }],
      }),
    );
    expect(r.ok).toBe(true);
    expect(JSON.parse((r as { payload: string }).payload)).toEqual({
      id: "chatcmpl-first",
      created: 100,
      model: "m",
      choices: [{ index: 0, delta: { content: "c" }, logprobs: null, finish_reason: "length" }],
    });
    expect(textOf(t.choices.get(0)!)).toBe("abc");
    expect(t.finished).toBe(true);
  });

  test("a role chunk that carries text keeps the text, not the role", () => {
    const s = new Splicer(first(), 2);
    const r = s.data(
      JSON.stringify({
        id: "x",
        choices: [{ index: 0, delta: { role: "assistant", content: "z" }, finish_reason: null }],
      }),
    );
    expect(JSON.parse((r as { payload: string }).payload).choices[0].delta).toEqual({
      content: "z",
    });
  });

  test("usage: the produced tokens move from the continuation's prompt to the completion, total adds up, cached capped", () => {
    const s = new Splicer(first(), 2);
    const r = s.data(
      JSON.stringify({
        id: "x",
        choices: [],
        usage: {
          prompt_tokens: 12,
          completion_tokens: 3,
          total_tokens: 15,
          prompt_tokens_details: { cached_tokens: 12 },
        },
      }),
    );
    expect(JSON.parse((r as { payload: string }).payload).usage).toEqual({
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      prompt_tokens_details: { cached_tokens: 10 },
    });
  });

  test("[DONE] passes and marks the answer whole; an error event or broken JSON is refused", () => {
    const t = first();
    const s = new Splicer(t, 2);
    expect(s.data("[DONE]")).toEqual({ ok: true, payload: "[DONE]" });
    expect(t.done).toBe(true);
    expect(s.data('{"error":{"message":"x"}}').ok).toBe(false);
    expect(s.data('{"object":"error","message":"x"}').ok).toBe(false);
    expect(s.data("{not json").ok).toBe(false);
  });
});

describe("logprobs in a continuation", () => {
  test("completions: text_offset goes on from the text sent; chat logprobs pass unchanged", () => {
    const t = new Transcript();
    t.chunk({ id: "cmpl-1", created: 1, model: "m", choices: [{ index: 0, text: "ab" }] });
    const s = new Splicer(t, 2, 2);
    const r = s.data(
      JSON.stringify({
        id: "cmpl-2",
        choices: [
          {
            index: 0,
            text: "cd",
            logprobs: {
              text_offset: [0, 1],
              token_logprobs: [-1, -2],
              tokens: ["c", "d"],
              top_logprobs: [{ c: -1 }, { d: -2 }],
            },
            finish_reason: null,
          },
        ],
      }),
    );
    const out = JSON.parse((r as { payload: string }).payload);
    expect(out.choices[0].logprobs.text_offset).toEqual([2, 3]);
    expect(out.choices[0].logprobs.tokens).toEqual(["c", "d"]);
    const chat = new Splicer(first(), 2, 2);
    const content = [{ token: "c", logprob: -1, bytes: [99], top_logprobs: [] }];
    const c = chat.data(
      JSON.stringify({ choices: [{ index: 0, delta: { content: "c" }, logprobs: { content } }] }),
    );
    expect(JSON.parse((c as { payload: string }).payload).choices[0].logprobs).toEqual({
      content,
    });
  });
});
