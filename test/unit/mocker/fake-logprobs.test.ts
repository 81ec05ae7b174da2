/**
 * The simulated engine's logprobs (src/mocker/fake-logprobs.ts): a function of the engine seed
 * and each token's place in the fake text, so a continuation from token k writes the entries
 * the whole request writes from k on; vLLM's shapes for completions and chat.
 */
import { describe, expect, test } from "bun:test";
import { logprobsJson } from "../../../src/mocker/fake-logprobs.ts";
import { fakeToken } from "../../../src/mocker/fake-text.ts";

const tokens = (offset: number, from: number, n: number) =>
  Array.from({ length: n }, (_, i) => fakeToken(offset, from + i));

describe("fake logprobs", () => {
  test("completions: parallel lists, max(N, 1) alternatives, the sampled token first; a continuation writes the whole's tail", () => {
    const whole = JSON.parse(
      logprobsJson("completions", 3, { top: 3 }, 40, 0, tokens(40, 0, 6), 0),
    );
    expect(whole.text_offset).toEqual([0, 1, 2, 3, 4, 5]);
    expect(whole.tokens).toEqual(tokens(40, 0, 6));
    expect(whole.top_logprobs.map((m: object) => Object.keys(m).length)).toEqual(Array(6).fill(3));
    expect(Object.keys(whole.top_logprobs[0])[0]).toBe(whole.tokens[0]);
    expect(whole.top_logprobs[0][whole.tokens[0]]).toBe(whole.token_logprobs[0]);
    // The continuation after 2 tokens: its prompt is 2 longer, so its text starts 2 places on.
    const tail = JSON.parse(logprobsJson("completions", 3, { top: 3 }, 42, 0, tokens(42, 0, 4), 2));
    expect(tail.token_logprobs).toEqual(whole.token_logprobs.slice(2));
    expect(tail.top_logprobs).toEqual(whole.top_logprobs.slice(2));
    expect(tail.text_offset).toEqual([2, 3, 4, 5]);
    // Another engine seed: other logprobs.
    const other = JSON.parse(
      logprobsJson("completions", 4, { top: 3 }, 40, 0, tokens(40, 0, 6), 0),
    );
    expect(other.token_logprobs).not.toEqual(whole.token_logprobs);
    const none = JSON.parse(logprobsJson("completions", 3, { top: 0 }, 40, 0, tokens(40, 0, 1), 0));
    expect(Object.keys(none.top_logprobs[0])).toEqual([none.tokens[0]]);
  });

  test("chat: content entries with bytes and the first N top_logprobs", () => {
    const lp = JSON.parse(logprobsJson("chat", 3, { top: 2 }, 7, 0, tokens(7, 0, 2), 0));
    expect(lp.content).toHaveLength(2);
    expect(lp.content[0].token).toBe(fakeToken(7, 0));
    expect(lp.content[0].bytes).toEqual([...new TextEncoder().encode(fakeToken(7, 0))]);
    expect(lp.content[0].top_logprobs).toHaveLength(2);
    expect(lp.content[0].top_logprobs[0].logprob).toBe(lp.content[0].logprob);
    expect(
      JSON.parse(logprobsJson("chat", 3, { top: 0 }, 7, 0, ["a"], 0)).content[0].top_logprobs,
    ).toEqual([]);
  });
});
