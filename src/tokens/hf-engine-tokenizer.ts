/**
 * EngineTokenizer over a model directory's files: vLLM's request -> template context
 * (conversation.ts, kwargs merge below), the chat template (chat-template.ts), then a
 * TokenizerLibrary, through the segment cache when the tokenizer allows it (segment-cache.ts).
 * It does not read files or pick the library: load.ts does.
 */
import { RouterError } from "../core/errors.ts";
import { type CompiledChatTemplate, compileChatTemplate } from "./chat-template.ts";
import { type ContentFormat, detectContentFormat } from "./content-format.ts";
import { parseConversation, toolDicts } from "./conversation.ts";
import type {
  ChatTemplateRequest,
  EncoderChoice,
  EngineTokenizer,
  TokenizerLibrary,
} from "./engine-tokenizer.ts";
import { type ModelFiles, pickChatTemplate } from "./model-files.ts";
import { SegmentCache, type SegmentPlan } from "./segment-cache.ts";

function invalid(field: string, message: string): never {
  throw new RouterError("invalid_request", `${field}: ${message}`, field);
}

function optionalBool(v: unknown, field: string, dflt: boolean): boolean {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== "boolean") invalid(field, "must be a boolean");
  return v;
}

/** Keys a request's chat_template_kwargs may not set (vLLM rejects a request-chosen template). */
const FORBIDDEN_KWARGS = new Set(["chat_template", "messages", "conversation"]);

function concat(parts: readonly Uint32Array[], total: number): Uint32Array {
  const out = new Uint32Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export class HfEngineTokenizer implements EngineTokenizer {
  readonly implementation: string;
  private readonly compiled = new Map<
    string,
    { template: CompiledChatTemplate; format: ContentFormat }
  >();
  private cache: SegmentCache | undefined;

  constructor(
    private readonly files: ModelFiles,
    private readonly encoder: TokenizerLibrary,
    private readonly plan: SegmentPlan | undefined,
    cacheTokens: number,
    private readonly now: () => number,
    readonly encoderChoice?: EncoderChoice,
  ) {
    this.implementation = encoder.implementation;
    if (plan !== undefined && cacheTokens > 0) this.cache = new SegmentCache(cacheTokens);
  }

  get source(): string {
    return this.files.dir;
  }
  get segmentCache(): boolean {
    return this.cache !== undefined;
  }
  /** The cache, for tests and metrics (undefined when disabled). */
  get cacheState(): SegmentCache | undefined {
    return this.cache;
  }
  /** Turns the cache off (the loader does so when the probe disagrees). */
  disableSegmentCache(): void {
    this.cache = undefined;
  }

  async encodeText(text: string, addSpecialTokens: boolean): Promise<Uint32Array> {
    return await this.encoder.encode(text, addSpecialTokens);
  }

  async decode(ids: Uint32Array): Promise<string> {
    return await this.encoder.decode(ids);
  }

  private template(source: string): { template: CompiledChatTemplate; format: ContentFormat } {
    let t = this.compiled.get(source);
    if (t === undefined) {
      t = { template: compileChatTemplate(source, this.now), format: detectContentFormat(source) };
      this.compiled.set(source, t);
    }
    return t;
  }

  renderChat(req: ChatTemplateRequest): string {
    if (req.chat_template !== undefined && req.chat_template !== null) {
      invalid(
        "chat_template",
        "a request may not choose the chat template (vLLM rejects it unless --trust-request-chat-template)",
      );
    }
    const tools = toolDicts(req.tools);
    const source = pickChatTemplate(this.files.chatTemplates, tools !== null);
    if (source === undefined)
      invalid("messages", `the model at ${this.files.dir} has no chat template`);
    const { template, format } = this.template(source);
    const messages = parseConversation(req.messages, format);

    // vLLM: merge_kwargs(defaults={tools}, request.chat_template_kwargs + the request's own
    // add_generation_prompt / continue_final_message / documents / reasoning_effort, unset ones dropped).
    const kw = req.chat_template_kwargs;
    if (kw !== undefined && kw !== null && (typeof kw !== "object" || Array.isArray(kw))) {
      invalid("chat_template_kwargs", "must be an object");
    }
    const kwargs: Record<string, unknown> = {
      tools,
      ...(kw as Record<string, unknown> | undefined),
    };
    for (const k of Object.keys(kwargs)) {
      if (FORBIDDEN_KWARGS.has(k))
        invalid(`chat_template_kwargs.${k}`, "may not be set by a request");
    }
    delete kwargs.tokenize;
    const addGenerationPrompt = optionalBool(
      req.add_generation_prompt,
      "add_generation_prompt",
      true,
    );
    const continueFinal = optionalBool(req.continue_final_message, "continue_final_message", false);
    if (addGenerationPrompt && continueFinal) {
      invalid(
        "continue_final_message",
        "cannot set both `continue_final_message` and `add_generation_prompt` to true",
      );
    }
    if (req.documents !== undefined && req.documents !== null) {
      if (
        !Array.isArray(req.documents) ||
        req.documents.some((d) => d === null || typeof d !== "object" || Array.isArray(d))
      ) {
        invalid("documents", "must be a list of objects");
      }
      kwargs.documents = req.documents;
    }
    if (req.reasoning_effort !== undefined && req.reasoning_effort !== null)
      kwargs.reasoning_effort = req.reasoning_effort;
    delete kwargs.add_generation_prompt;
    delete kwargs.continue_final_message;

    // transformers: template_kwargs = {**special_tokens_map, **kwargs}; render(messages, tools,
    // documents, add_generation_prompt, **template_kwargs).
    const context = {
      ...this.files.specialTokens,
      ...kwargs,
      tools: kwargs.tools ?? null,
      documents: kwargs.documents ?? null,
      add_generation_prompt: addGenerationPrompt,
    };
    return template.render(messages, context, continueFinal);
  }

  async encodeChat(req: ChatTemplateRequest, addSpecialTokens = false): Promise<Uint32Array> {
    const text = this.renderChat(req);
    if (addSpecialTokens || this.cache === undefined)
      return await this.encoder.encode(text, addSpecialTokens);
    return await this.encodeSegmented(text, this.cache);
  }

  /** Ids of `text` without special tokens, piece by piece through the cache. */
  async encodeSegmented(
    text: string,
    cache: SegmentCache | undefined = this.cache,
  ): Promise<Uint32Array> {
    const plan = this.plan!;
    const pieces = plan.cut(text);
    const parts: Uint32Array[] = new Array(pieces.length);
    const missing: number[] = [];
    let total = 0;
    for (let i = 0; i < pieces.length; i++) {
      const p = pieces[i]!;
      if (i % 2 === 1) {
        parts[i] = Uint32Array.of(plan.idOf.get(p)!);
        total += 1;
      } else if (p.length === 0) {
        parts[i] = new Uint32Array(0);
      } else {
        const hit = cache?.get(p);
        if (hit === undefined) missing.push(i);
        else {
          parts[i] = hit;
          total += hit.length;
        }
      }
    }
    if (missing.length > 0) {
      const texts = missing.map((i) => pieces[i]!);
      const encoded =
        this.encoder.encodeMany !== undefined && texts.length > 1
          ? await this.encoder.encodeMany(texts)
          : await Promise.all(texts.map((t) => this.encoder.encode(t, false)));
      for (let j = 0; j < missing.length; j++) {
        const ids = encoded[j]!;
        parts[missing[j]!] = ids;
        total += ids.length;
        cache?.set(texts[j]!, ids);
      }
    }
    return concat(parts, total);
  }
}
