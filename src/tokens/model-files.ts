/**
 * The files of a Hugging Face model directory that decide its prompt tokens: tokenizer.json,
 * tokenizer_config.json, and the chat template (chat_template.jinja, tokenizer_config's
 * `chat_template`, or chat_template.json). Reads through an injected `readText`, so it does
 * no I/O of its own; every failure is an Error naming the file and what is wrong with it.
 */
import type { ReadText } from "./engine-tokenizer.ts";

/** A chat template source: one template, or named ones (transformers picks "default" / "tool_use"). */
export type ChatTemplates = string | Readonly<Record<string, string>>;

export interface ModelFiles {
  readonly dir: string;
  readonly tokenizerJsonPath: string;
  readonly tokenizerJson: string;
  readonly tokenizer: TokenizerJson;
  readonly config: Record<string, unknown>;
  /** undefined: the model has no chat template (chat requests are rejected). */
  readonly chatTemplates: ChatTemplates | undefined;
  /** bos/eos/unk/sep/pad/cls/mask token strings that are set, as transformers' special_tokens_map. */
  readonly specialTokens: Readonly<Record<string, string>>;
}

/** The parts of tokenizer.json this library reads itself (the rest is the tokenizer library's). */
export interface TokenizerJson {
  added_tokens?: AddedTokenJson[];
  normalizer?: { type?: string; normalizers?: { type?: string }[] } | null;
  pre_tokenizer?: PreTokenizerJson | null;
  model?: { type?: string };
}
export interface AddedTokenJson {
  id: number;
  content: string;
  special?: boolean;
  lstrip?: boolean;
  rstrip?: boolean;
  single_word?: boolean;
  normalized?: boolean;
}
export interface PreTokenizerJson {
  type?: string;
  pretokenizers?: PreTokenizerJson[];
  add_prefix_space?: boolean;
  prepend_scheme?: string;
}

/** transformers' SPECIAL_TOKENS_ATTRIBUTES minus additional_special_tokens (5.x special_tokens_map). */
const SPECIAL_TOKEN_KEYS = [
  "bos_token",
  "eos_token",
  "unk_token",
  "sep_token",
  "pad_token",
  "cls_token",
  "mask_token",
];

function join(dir: string, name: string): string {
  return dir.endsWith("/") ? dir + name : `${dir}/${name}`;
}

async function readOptional(readText: ReadText, path: string): Promise<string | undefined> {
  try {
    return await readText(path);
  } catch {
    return undefined;
  }
}

function parseJson(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${path}: not valid JSON (${(e as Error).message})`);
  }
}

/** A token in tokenizer_config.json: a string or an AddedToken dict `{content, ...}`. */
function tokenString(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (
    v !== null &&
    typeof v === "object" &&
    typeof (v as { content?: unknown }).content === "string"
  ) {
    return (v as { content: string }).content;
  }
  return undefined;
}

/** `chat_template` as transformers accepts it: a string, or a list of `{name, template}`. */
function chatTemplatesOf(v: unknown, path: string): ChatTemplates | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "string") return v;
  if (Array.isArray(v)) {
    const named: Record<string, string> = {};
    for (const [i, t] of v.entries()) {
      const { name, template } = (t ?? {}) as { name?: unknown; template?: unknown };
      if (typeof name !== "string" || typeof template !== "string") {
        throw new Error(
          `${path}: chat_template[${i}] must be {"name": string, "template": string}`,
        );
      }
      named[name] = template;
    }
    return named;
  }
  throw new Error(`${path}: chat_template must be a string or a list of {name, template}`);
}

export async function loadModelFiles(dir: string, readText: ReadText): Promise<ModelFiles> {
  const tokenizerJsonPath = join(dir, "tokenizer.json");
  let tokenizerJson: string;
  try {
    tokenizerJson = await readText(tokenizerJsonPath);
  } catch (e) {
    throw new Error(
      `${tokenizerJsonPath}: cannot be read (${(e as Error).message}); a model directory needs tokenizer.json`,
    );
  }
  const tokenizer = parseJson(tokenizerJson, tokenizerJsonPath) as TokenizerJson;
  if (tokenizer === null || typeof tokenizer !== "object" || typeof tokenizer.model !== "object") {
    throw new Error(`${tokenizerJsonPath}: not a tokenizers file (no "model")`);
  }
  const configPath = join(dir, "tokenizer_config.json");
  const configText = await readOptional(readText, configPath);
  const config = (configText === undefined ? {} : parseJson(configText, configPath)) as Record<
    string,
    unknown
  >;
  if (config === null || typeof config !== "object" || Array.isArray(config)) {
    throw new Error(`${configPath}: must hold a JSON object`);
  }
  // transformers 5.x: a chat_template.jinja file wins over tokenizer_config's `chat_template`;
  // chat_template.json is the processor's template, used by vLLM when the tokenizer has none.
  let chatTemplates: ChatTemplates | undefined = await readOptional(
    readText,
    join(dir, "chat_template.jinja"),
  );
  chatTemplates ??= chatTemplatesOf(config.chat_template, configPath);
  if (chatTemplates === undefined) {
    const p = join(dir, "chat_template.json");
    const t = await readOptional(readText, p);
    if (t !== undefined)
      chatTemplates = chatTemplatesOf(
        (parseJson(t, p) as { chat_template?: unknown }).chat_template,
        p,
      );
  }
  const specialTokens: Record<string, string> = {};
  for (const k of SPECIAL_TOKEN_KEYS) {
    const s = tokenString(config[k]);
    if (s !== undefined) specialTokens[k] = s;
  }
  return { dir, tokenizerJsonPath, tokenizerJson, tokenizer, config, chatTemplates, specialTokens };
}

/**
 * transformers' get_chat_template (tokenization_utils_base.py, 5.18): with named templates,
 * "tool_use" when tools are given and it exists, else "default"; a single template as is.
 */
export function pickChatTemplate(
  templates: ChatTemplates | undefined,
  hasTools: boolean,
): string | undefined {
  if (templates === undefined || typeof templates === "string") return templates;
  if (hasTools && templates.tool_use !== undefined) return templates.tool_use;
  return templates.default;
}
