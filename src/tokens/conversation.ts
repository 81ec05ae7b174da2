/**
 * An OpenAI chat request's messages and tools turned into what vLLM hands the chat template
 * (vllm/entrypoints/chat_utils.py, vLLM main 2026: `_parse_chat_message_content`,
 * `_parse_chat_message_content_parts`, `_postprocess_messages`; tools: serving_chat.py
 * `tool.model_dump()` of ChatCompletionToolsParam). Text parts only: a media part is
 * rejected (the router cannot expand image/audio placeholders). Bad input throws
 * RouterError("invalid_request") naming the field. Pure; never mutates the request.
 */
import { RouterError } from "../core/errors.ts";
import type { ContentFormat } from "./content-format.ts";

export type ConversationMessage = Record<string, unknown>;

function invalid(field: string, message: string): never {
  throw new RouterError("invalid_request", `${field}: ${message}`, field);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Part types whose text vLLM takes (MM_PARSER_MAP), and the key holding it. */
const TEXT_PARTS: Readonly<Record<string, string>> = {
  text: "text",
  input_text: "text",
  output_text: "text",
  refusal: "refusal",
  thinking: "thinking",
};

/** The texts of one message's content, in order; null parts of text/refusal are skipped as vLLM does. */
function contentTexts(content: unknown, field: string): string[] {
  if (content === undefined || content === null) return [];
  if (typeof content === "string") return [content];
  if (!Array.isArray(content))
    invalid(field, "must be a string, null or an array of content parts");
  const texts: string[] = [];
  content.forEach((part: unknown, i) => {
    const f = `${field}[${i}]`;
    if (typeof part === "string") {
      texts.push(part);
      return;
    }
    if (!isObject(part)) invalid(f, "must be a content part object");
    const type = part.type;
    const key = typeof type === "string" ? TEXT_PARTS[type] : undefined;
    if (key === undefined) {
      invalid(
        `${f}.type`,
        `only text content parts are supported by the router's tokenizer (got ${JSON.stringify(type ?? null)})`,
      );
    }
    const text = part[key];
    if (text === undefined || text === null) {
      if (type === "text" || type === "refusal") return; // PART_TYPES_TO_SKIP_NONE_CONTENT
      invalid(`${f}.${key}`, "must be a string");
    }
    if (typeof text !== "string") invalid(`${f}.${key}`, "must be a string");
    texts.push(text);
  });
  return texts;
}

/** vLLM's `_postprocess_messages`: tool-call arguments as dicts, empty tool_calls dropped. */
function toolCalls(calls: unknown, field: string): unknown[] {
  if (!Array.isArray(calls)) invalid(field, "must be an array");
  return calls.map((call: unknown, i) => {
    const f = `${field}[${i}]`;
    if (!isObject(call) || !isObject(call.function)) invalid(`${f}.function`, "must be an object");
    const fn = { ...call.function };
    const args = fn.arguments;
    if (args) {
      if (typeof args === "string") {
        try {
          fn.arguments = JSON.parse(args);
        } catch {
          invalid(`${f}.function.arguments`, "must be a JSON-encoded string");
        }
      } else if (typeof args !== "object") {
        invalid(`${f}.function.arguments`, "must be a JSON-encoded string");
      }
    } else {
      fn.arguments = {};
    }
    return { ...call, function: fn };
  });
}

function parseMessage(m: unknown, i: number, format: ContentFormat): ConversationMessage {
  const field = `messages[${i}]`;
  if (!isObject(m)) invalid(field, "must be an object");
  const role = m.role;
  if (typeof role !== "string" || role === "")
    invalid(`${field}.role`, "must be a non-empty string");
  const texts = contentTexts(m.content, `${field}.content`);
  const out: ConversationMessage = {
    role,
    content: format === "openai" ? texts.map((text) => ({ type: "text", text })) : texts.join("\n"),
  };
  if (role === "assistant") {
    if (m.tool_calls !== undefined && m.tool_calls !== null) {
      const calls = toolCalls(m.tool_calls, `${field}.tool_calls`);
      if (calls.length > 0) out.tool_calls = calls;
    }
    if (m.reasoning !== undefined && m.reasoning !== null) {
      out.reasoning = m.reasoning;
      out.reasoning_content = m.reasoning;
    }
  } else if (role === "tool" && "tool_call_id" in m) {
    out.tool_call_id = m.tool_call_id;
  }
  if (typeof m.name === "string") out.name = m.name;
  if (role === "developer") out.tools = m.tools ?? null;
  return out;
}

/**
 * The messages with every non-text content part removed, and whether any was: a request
 * with images/audio cannot get the engine's exact tokens here (the engine expands media
 * placeholders with its processor), but its text still routes approximately.
 */
export function withoutMediaParts(messages: unknown): { messages: unknown; dropped: boolean } {
  if (!Array.isArray(messages)) return { messages, dropped: false };
  let dropped = false;
  const out = messages.map((m: unknown) => {
    if (!isObject(m) || !Array.isArray(m.content)) return m;
    const content = m.content.filter(
      (p: unknown) =>
        typeof p === "string" ||
        !isObject(p) ||
        (typeof p.type === "string" && TEXT_PARTS[p.type] !== undefined),
    );
    if (content.length === m.content.length) return m;
    dropped = true;
    return { ...m, content };
  });
  return { messages: dropped ? out : messages, dropped };
}

export function parseConversation(messages: unknown, format: ContentFormat): ConversationMessage[] {
  if (!Array.isArray(messages) || messages.length === 0)
    invalid("messages", "must be a non-empty array");
  return messages.map((m, i) => parseMessage(m, i, format));
}

/**
 * vLLM's tool dicts: pydantic `model_dump()` of ChatCompletionToolsParam — declared fields
 * first in declaration order (`type`, `function{name, description, parameters}`; unset ones
 * as null), then the extra fields the client sent (OpenAIBaseModel allows extras).
 * undefined/null tools -> null (the template sees `tools` as None).
 */
export function toolDicts(tools: unknown): Record<string, unknown>[] | null {
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools)) invalid("tools", "must be an array");
  return tools.map((t: unknown, i) => {
    const f = `tools[${i}]`;
    if (!isObject(t)) invalid(f, "must be an object");
    if (t.type !== undefined && t.type !== "function") invalid(`${f}.type`, 'must be "function"');
    const fn = t.function;
    if (!isObject(fn)) invalid(`${f}.function`, "must be an object");
    if (typeof fn.name !== "string") invalid(`${f}.function.name`, "must be a string");
    if (
      fn.description !== undefined &&
      fn.description !== null &&
      typeof fn.description !== "string"
    ) {
      invalid(`${f}.function.description`, "must be a string");
    }
    if (fn.parameters !== undefined && fn.parameters !== null && !isObject(fn.parameters)) {
      invalid(`${f}.function.parameters`, "must be an object");
    }
    const { name, description, parameters, ...fnExtra } = fn;
    const { type: _type, function: _fn, ...toolExtra } = t;
    return {
      type: "function",
      function: {
        name,
        description: description ?? null,
        parameters: parameters ?? null,
        ...fnExtra,
      },
      ...toolExtra,
    };
  });
}
