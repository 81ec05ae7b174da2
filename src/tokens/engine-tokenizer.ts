/**
 * The seam between the tokenizer library (this folder) and its callers (router, simulated
 * engine): a model's tokenizer + chat template, loaded from a Hugging Face model directory,
 * producing the token ids vLLM's OpenAI server prefills for a request.
 */

/** A model's tokenizer + chat template, loaded from an HF model directory. */
export interface EngineTokenizer {
  /** The directory it was loaded from. */
  readonly source: string;
  /** Which library encodes text, e.g. "tokenizers (HF Rust, native)". */
  readonly implementation: string;
  /** Which encoder was chosen at load and why (the router logs it and exports it as a metric). */
  readonly encoderChoice?: EncoderChoice;
  /** Whether later turns reuse the ids of earlier, identical segments (see segment-cache.ts). */
  readonly segmentCache: boolean;
  /** vLLM completions: encode(text, add_special_tokens). */
  encodeText(text: string, addSpecialTokens: boolean): Promise<Uint32Array>;
  /**
   * The chat template rendered exactly as vLLM renders it for this request. Throws
   * RouterError("invalid_request", ..., field) naming the bad field.
   */
  renderChat(req: ChatTemplateRequest): string;
  /**
   * renderChat, then encode with add_special_tokens = `addSpecialTokens` (vLLM's default for
   * chat: false). Earlier turns' segments come from the cache where provably identical.
   */
  encodeChat(req: ChatTemplateRequest, addSpecialTokens?: boolean): Promise<Uint32Array>;
  /** Token ids -> text (special tokens kept), for /detokenize-style needs. */
  decode(ids: Uint32Array): Promise<string>;
}

/** What the BPE guard (bpe-guard.ts) found: every corpus input encoded alike, or the first difference. */
export interface BpeGuardDifference {
  /** The input, cut to 200 characters for logs and metric labels. */
  readonly input: string;
  readonly inputIndex: number;
  readonly addSpecialTokens: boolean;
  /** First differing position, and the ids around it (up to 8 from there) from each encoder. */
  readonly at: number;
  readonly bpe: readonly number[];
  readonly library: readonly number[];
}

export type BpeGuardResult =
  | { readonly agree: true; readonly inputs: number; readonly tokens: number }
  | {
      readonly agree: false;
      readonly inputs: number;
      readonly tokens: number;
      readonly difference: BpeGuardDifference;
    };

/**
 * The encoder a tokenizer got: the byte-level BPE (bpe-library.ts), the pure-JS library or HF's
 * native library; `reason` says why not the BPE, `guard` what the differential check found
 * (bpe-guard.ts; absent when it did not run: the encoder was forced, or the BPE does not take
 * the tokenizer).
 */
export interface EncoderChoice {
  readonly encoder: "byte-level-bpe" | "library" | "native";
  readonly reason?: string;
  readonly guard?: BpeGuardResult;
}

/** The fields of an OpenAI chat request that reach the chat template in vLLM. */
export interface ChatTemplateRequest {
  messages: unknown;
  tools?: unknown;
  tool_choice?: unknown;
  add_generation_prompt?: unknown;
  continue_final_message?: unknown;
  chat_template_kwargs?: unknown;
  documents?: unknown;
  reasoning_effort?: unknown;
  chat_template?: unknown;
}

/** "native": HF's Rust `tokenizers` (Bun/Node only); "pure": `@huggingface/tokenizers` (any runtime). */
export type TokenizerImpl = "native" | "pure";

/** Reads a whole text file; rejects when it is missing. Injected so the folder does no I/O itself. */
export type ReadText = (path: string) => Promise<string>;

/**
 * Text -> ids of one tokenizer library. `encode` honours add_special_tokens exactly as
 * `tokenizer(text, add_special_tokens=...)` in transformers does.
 */
export interface TokenizerLibrary {
  readonly implementation: string;
  encode(text: string, addSpecialTokens: boolean): Promise<Uint32Array> | Uint32Array;
  /** Several texts without special tokens, in one call where the library batches. */
  encodeMany?(texts: readonly string[]): Promise<Uint32Array[]>;
  decode(ids: Uint32Array): Promise<string> | string;
}

/** Builds a TokenizerLibrary from tokenizer.json's text (and the parsed tokenizer_config.json). */
export type TokenizerLibraryFactory = (
  tokenizerJson: string,
  tokenizerConfig: Record<string, unknown>,
  tokenizerJsonPath: string,
) => Promise<TokenizerLibrary> | TokenizerLibrary;
