/**
 * A chat template rendered the way transformers renders it (utils/chat_template_utils.py,
 * transformers 5.18: `_compile_jinja_template`, `render_jinja_template`), on
 * @huggingface/jinja (with Python's string methods, jinja-compat.ts): trim_blocks + lstrip_blocks, `raise_exception`, `strftime_now`, and a
 * `tojson` with json.dumps' defaults (ensure_ascii=False, ", " and ": " separators), which
 * @huggingface/jinja already implements. `continue_final_message` uses transformers' tag trick.
 * Pure: the clock for strftime_now is injected. Template errors become RouterError.
 */
import { Environment, Interpreter, Template } from "@huggingface/jinja";
import { RouterError } from "../core/errors.ts";
import { applyJinjaCompat } from "./jinja-compat.ts";

/** What the template sees besides the messages (kwargs, special tokens, tools, ...). */
export type TemplateContext = Record<string, unknown>;

export interface CompiledChatTemplate {
  readonly source: string;
  /** transformers' `render_jinja_template` for one conversation. */
  render(
    messages: readonly Record<string, unknown>[],
    context: TemplateContext,
    continueFinalMessage: boolean,
  ): string;
}

/** transformers' continue_final_message marker (render_jinja_template, 5.18). */
const CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG ";

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/**
 * Python's strftime for the codes chat templates use (Llama 3.x: "%d %b %Y"), in UTC so the
 * result does not depend on the host's zone (servers run in UTC; vLLM uses local time).
 */
export function strftime(ms: number, format: string): string {
  const d = new Date(ms);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return format.replace(/%([a-zA-Z%])/g, (all, c: string) => {
    switch (c) {
      case "Y":
        return String(d.getUTCFullYear());
      case "y":
        return pad(d.getUTCFullYear() % 100);
      case "m":
        return pad(d.getUTCMonth() + 1);
      case "d":
        return pad(d.getUTCDate());
      case "e":
        return String(d.getUTCDate()).padStart(2, " ");
      case "B":
        return MONTHS[d.getUTCMonth()]!;
      case "b":
      case "h":
        return MONTHS[d.getUTCMonth()]!.slice(0, 3);
      case "A":
        return DAYS[d.getUTCDay()]!;
      case "a":
        return DAYS[d.getUTCDay()]!.slice(0, 3);
      case "H":
        return pad(d.getUTCHours());
      case "I":
        return pad(((d.getUTCHours() + 11) % 12) + 1);
      case "p":
        return d.getUTCHours() < 12 ? "AM" : "PM";
      case "M":
        return pad(d.getUTCMinutes());
      case "S":
        return pad(d.getUTCSeconds());
      case "j":
        return pad(Math.floor((ms - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000) + 1, 3);
      case "%":
        return "%";
      default:
        return all;
    }
  });
}

/** Python's range(stop) / range(start, stop[, step]). */
function pythonRange(a: number, b?: number, step = 1): number[] {
  const [start, stop] = b === undefined ? [0, a] : [a, b];
  if (step === 0) throw templateError("range() arg 3 must not be zero");
  const out: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}

function templateError(message: string): RouterError {
  return new RouterError("invalid_request", `chat template: ${message}`, "messages");
}

class JinjaChatTemplate implements CompiledChatTemplate {
  private readonly template: Template;

  constructor(
    readonly source: string,
    private readonly now: () => number,
  ) {
    applyJinjaCompat();
    try {
      this.template = new Template(source);
    } catch (e) {
      throw new Error(`chat template does not compile: ${(e as Error).message}`);
    }
  }

  render(
    messages: readonly Record<string, unknown>[],
    context: TemplateContext,
    continueFinalMessage: boolean,
  ): string {
    let chat = messages;
    let finalMessage = "";
    if (continueFinalMessage) {
      // transformers appends a tag to the final message's text, renders, and cuts at the tag.
      const last = messages[messages.length - 1];
      const content = last?.content;
      if (content === undefined || content === null) {
        throw new RouterError(
          "invalid_request",
          'continue_final_message is set but the final message has no "content" to continue',
          "messages",
        );
      }
      if (!this.source.includes("content")) {
        throw new RouterError(
          "invalid_request",
          'continue_final_message is set to "content" but this is not an accepted field in the chat_template',
          "continue_final_message",
        );
      }
      let tagged: unknown;
      if (Array.isArray(content)) {
        const blocks = content.map((b) =>
          b !== null && typeof b === "object" ? { ...(b as object) } : b,
        ) as Record<string, unknown>[];
        let i = blocks.length - 1;
        for (; i >= 0; i--) {
          const b = blocks[i];
          if (b !== null && typeof b === "object" && "text" in b) {
            finalMessage = String(b.text);
            b.text = `${finalMessage}${CONTINUE_TAG}`;
            break;
          }
        }
        if (i < 0)
          throw new RouterError(
            "invalid_request",
            "continue_final_message is set but we could not find any text to continue in the final message",
            "messages",
          );
        tagged = blocks;
      } else {
        finalMessage = String(content);
        tagged = `${finalMessage}${CONTINUE_TAG}`;
      }
      chat = [...messages.slice(0, -1), { ...last, content: tagged }];
    }
    let rendered: string;
    try {
      // Template.render refuses context names that shadow its globals, so build the
      // environment here: the same globals (jinja's and transformers'), then the context.
      const env = new Environment();
      const globals: Record<string, unknown> = {
        true: true,
        false: false,
        none: null,
        True: true,
        False: false,
        None: null,
        range: pythonRange,
        strftime_now: (format: string) => strftime(this.now(), format),
        raise_exception: (message: unknown) => {
          throw templateError(String(message));
        },
      };
      for (const [k, v] of Object.entries({ ...globals, ...context, messages: chat })) {
        if (k !== "namespace") env.set(k, v); // jinja's own namespace() stays
      }
      rendered = new Interpreter(env).run(this.template.parsed).value as string;
    } catch (e) {
      if (e instanceof RouterError) throw e;
      throw templateError((e as Error).message);
    }
    if (!continueFinalMessage) return rendered;
    const tag = CONTINUE_TAG.trim();
    if (!rendered.includes(finalMessage.trim()) || !rendered.includes(tag)) {
      throw new RouterError(
        "invalid_request",
        "continue_final_message is set but the final message does not appear in the chat after applying the chat template",
        "messages",
      );
    }
    const at = rendered.lastIndexOf(tag);
    // The template kept the tag's trailing space: cut exactly; otherwise it trimmed the message.
    return rendered.slice(at, at + CONTINUE_TAG.length) === CONTINUE_TAG
      ? rendered.slice(0, at)
      : rendered.slice(0, at).trimEnd();
  }
}

export function compileChatTemplate(source: string, now: () => number): CompiledChatTemplate {
  return new JinjaChatTemplate(source, now);
}
