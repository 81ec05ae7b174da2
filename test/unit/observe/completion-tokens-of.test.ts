/** A whole answer's output tokens, read from its usage in the tail without parsing the body. */
import { expect, test } from "bun:test";
import { completionTokensOf } from "../../../src/observe/request-observation.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

test("vLLM's and SGLang's whole answers: usage.completion_tokens", () => {
  const vllm = JSON.stringify({
    id: "cmpl-1",
    choices: [{ index: 0, text: "x".repeat(2000), finish_reason: "length" }],
    usage: {
      prompt_tokens: 12,
      total_tokens: 29,
      completion_tokens: 17,
      prompt_tokens_details: null,
    },
  });
  expect(completionTokensOf(bytes(vllm))).toBe(17);
  expect(
    completionTokensOf(
      bytes(
        '{"usage": {"completion_tokens" :\n 1234 , "completion_tokens_details": {"reasoning_tokens": 3}}}',
      ),
    ),
  ).toBe(1234);
});

test("absent, cut off, or only inside the text (escaped): 0", () => {
  expect(completionTokensOf(bytes('{"choices":[{"text":"hi"}]}'))).toBe(0);
  expect(completionTokensOf(bytes('{"usage":{"completion_tokens":'))).toBe(0);
  expect(completionTokensOf(bytes('{"text":"say \\"completion_tokens\\": 5 please"}'))).toBe(0);
  expect(completionTokensOf(new Uint8Array(0))).toBe(0);
});

test("only the tail is searched: a usage far before the end is not found", () => {
  const early = `{"usage":{"completion_tokens":9},"pad":"${"y".repeat(4096)}"}`;
  expect(completionTokensOf(bytes(early))).toBe(0);
});
