import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import { parseConversation, toolDicts } from "../../../src/tokens/conversation.ts";
import { thrownBy } from "../../support/errors.ts";

const fieldOf = (fn: () => unknown) => thrownBy(RouterError, fn).field;

describe("parseConversation (vLLM's chat_utils)", () => {
  test("string format: text parts joined by a newline, null content and null text parts give nothing", () => {
    const conv = parseConversation(
      [
        {
          role: "user",
          content: [
            "a",
            { type: "text", text: "b" },
            { type: "text", text: null },
            { type: "refusal", refusal: "r" },
          ],
        },
        { role: "assistant", content: null },
      ],
      "string",
    );
    expect(conv).toEqual([
      { role: "user", content: "a\nb\nr" },
      { role: "assistant", content: "" },
    ]);
  });
  test("openai format: content as text parts, a plain string too", () => {
    expect(parseConversation([{ role: "user", content: "hi" }], "openai")).toEqual([
      { role: "user", content: [{ type: "text", text: "hi" }] },
    ]);
  });
  test("tool calls: arguments parsed to objects, empty ones to {}, an empty list dropped; the request is not mutated", () => {
    const call = { id: "c1", type: "function", function: { name: "f", arguments: '{"x": 1}' } };
    const req = [
      {
        role: "assistant",
        content: "",
        tool_calls: [call, { id: "c2", type: "function", function: { name: "g", arguments: "" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "42", name: "f" },
      { role: "assistant", content: "ok", tool_calls: [], reasoning: "because" },
    ];
    const conv = parseConversation(req, "string");
    expect(conv[0]!.tool_calls).toEqual([
      { id: "c1", type: "function", function: { name: "f", arguments: { x: 1 } } },
      { id: "c2", type: "function", function: { name: "g", arguments: {} } },
    ]);
    expect(call.function.arguments).toBe('{"x": 1}');
    expect(conv[1]).toEqual({ role: "tool", content: "42", tool_call_id: "c1", name: "f" });
    expect(conv[2]).toEqual({
      role: "assistant",
      content: "ok",
      reasoning: "because",
      reasoning_content: "because",
    });
  });
  test("bad input names the field", () => {
    expect(fieldOf(() => parseConversation({}, "string"))).toBe("messages");
    expect(fieldOf(() => parseConversation([null], "string"))).toBe("messages[0]");
    expect(fieldOf(() => parseConversation([{ role: "user", content: 5 }], "string"))).toBe(
      "messages[0].content",
    );
    expect(
      fieldOf(() =>
        parseConversation([{ role: "user", content: [{ type: "text", text: 1 }] }], "string"),
      ),
    ).toBe("messages[0].content[0].text");
    const badArgs = [
      { role: "assistant", tool_calls: [{ function: { name: "f", arguments: "{nope" } }] },
    ];
    expect(fieldOf(() => parseConversation(badArgs, "string"))).toBe(
      "messages[0].tool_calls[0].function.arguments",
    );
  });
});

describe("toolDicts (pydantic model_dump of vLLM's ChatCompletionToolsParam)", () => {
  test("declared fields first with nulls for unset ones, then the client's extras", () => {
    const dumped = toolDicts([{ function: { strict: true, name: "f" }, extra: 1 }]);
    expect(JSON.stringify(dumped)).toBe(
      '[{"type":"function","function":{"name":"f","description":null,"parameters":null,"strict":true},"extra":1}]',
    );
  });
  test("no tools is null; bad tools are named", () => {
    expect(toolDicts(undefined)).toBeNull();
    expect(toolDicts(null)).toBeNull();
    expect(fieldOf(() => toolDicts({}))).toBe("tools");
    expect(fieldOf(() => toolDicts([{ type: "custom", function: { name: "f" } }]))).toBe(
      "tools[0].type",
    );
    expect(fieldOf(() => toolDicts([{ function: { name: "f", parameters: [] } }]))).toBe(
      "tools[0].function.parameters",
    );
  });
});
