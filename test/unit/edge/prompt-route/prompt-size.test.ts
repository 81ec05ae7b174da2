/**
 * --max-prompt-chars: a prompt longer than the limit is a 413 naming its field and the flag,
 * counted before any tokenizing or hashing, whatever the field's shape; at the limit it is
 * routed as before.
 */
import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../../src/core/errors.ts";
import { readPrompt } from "../../../../src/edge/prompt-route/prompt-routing.ts";
import { checkPromptSize } from "../../../../src/edge/prompt-route/prompt-size.ts";
import { rejectionOf, thrownBy } from "../../../support/errors.ts";
import { harness, jsonResponse } from "../harness.ts";

const limited = undefined;
const LIMIT = 10;

describe("prompt size limit", () => {
  test("at the limit: routed; one past it: 413 naming the field and the flag", async () => {
    expect(
      (await readPrompt(limited, { prompt: "0123456789" }, "completions", LIMIT)).tokens.length,
    ).toBe(10);
    const e = await rejectionOf(
      RouterError,
      readPrompt(limited, { prompt: "0123456789x" }, "completions", LIMIT),
    );
    expect(e.code).toBe("payload_too_large");
    expect(e.field).toBe("prompt");
    expect(e.message).toBe("prompt: the prompt is longer than 10 characters (--max-prompt-chars)");
  });

  test("every shape counts: token ids one each, chat message contents and parts, a batch, other routes' fields", async () => {
    expect(
      (
        await rejectionOf(
          RouterError,
          readPrompt(
            limited,
            { prompt: Array.from({ length: 11 }, (_, i) => i) },
            "completions",
            LIMIT,
          ),
        )
      ).field,
    ).toBe("prompt");
    expect(
      (
        await rejectionOf(
          RouterError,
          readPrompt(limited, { prompt: ["abcdef", "ghijkl"] }, "completions", LIMIT),
        )
      ).field,
    ).toBe("prompt");
    const chat = { messages: [{ role: "user", content: [{ type: "text", text: "abcdefghijk" }] }] };
    expect((await rejectionOf(RouterError, readPrompt(limited, chat, "chat", LIMIT))).field).toBe(
      "messages",
    );
    expect(
      (
        await rejectionOf(
          RouterError,
          readPrompt(limited, { input: "abcdefghijk" }, "embeddings", LIMIT),
        )
      ).field,
    ).toBe("input");
    expect(
      (
        await rejectionOf(
          RouterError,
          readPrompt(limited, { text: "abcdefghijk" }, "generate", LIMIT),
        )
      ).field,
    ).toBe("text");
  });

  test("the walk stops once past the limit (a huge batch is not walked to its end)", () => {
    const huge = Array.from({ length: 1_000_000 }, () => "x".repeat(100));
    const t0 = performance.now();
    thrownBy(RouterError, () => checkPromptSize(huge, "prompt", 1000));
    expect(performance.now() - t0).toBeLessThan(50);
  });

  test("through the app: 413 in OpenAI's shape, nothing sent to an engine", async () => {
    const h = harness({
      workers: [{ id: 1n, url: "http://w1:1" }],
      fetch: async () => jsonResponse({}),
      maxPromptChars: 10,
    });
    const r = await h.request("/v1/completions", {
      json: { prompt: "0123456789x", max_tokens: 1 },
    });
    expect(r.status).toBe(413);
    const body = (await r.json()) as { error: { code: string; param: string; message: string } };
    expect(body.error).toMatchObject({ code: "payload_too_large", param: "prompt" });
    expect(body.error.message).toContain("--max-prompt-chars");
    expect(h.calls.length).toBe(0);
  });
});
