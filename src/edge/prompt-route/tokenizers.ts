/**
 * The router's tokenizers: one per model and/or a default, loaded at start
 * (`--tokenizer [MODEL=]PATH`) or at registration (`"tokenizer"` at POST /v1/workers), never
 * per request; a request's `model` picks one (an adapter uses its base model's). Also the
 * registration probe: where an engine serves vLLM's `/tokenize`, one probe text is
 * tokenized by both and a difference marks the worker `tokenizer_mismatch`. The loader and
 * fetch are injected; it holds no timers.
 */
import type { WorkerId } from "../../core/ids.ts";
import type { EngineTokenizer } from "../../tokens/index.ts";

/** A text crossing the usual piece boundaries: words, punctuation, digits, newlines, CJK, emoji. */
export const TOKENIZER_PROBE =
  "Switchyard tokenizer probe: Hello, world! 1234 5678\n\tIt's 你好, ça va? 😀 <|end|>";

export type TokenizerCheck =
  | { readonly status: "match" }
  | { readonly status: "mismatch"; readonly detail: string }
  /** The engine has no /tokenize (or it failed): nothing to compare. */
  | { readonly status: "unchecked"; readonly detail: string };

export interface RouterTokenizersDeps {
  readonly load: (dir: string) => Promise<EngineTokenizer>;
  /** An adapter's base model (model directory), so adapters use their base model's tokenizer. */
  readonly parentOf: (model: string) => string | undefined;
  readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
  readonly timeoutMs: number;
}

export class RouterTokenizers {
  #default: EngineTokenizer | undefined;
  readonly #byModel = new Map<string, EngineTokenizer>();
  /** One load per directory, shared by every model using it. */
  readonly #byPath = new Map<string, Promise<EngineTokenizer>>();
  readonly #checks = new Map<WorkerId, TokenizerCheck>();
  /** The engines' max_model_len per model, learned from the probe (POST /tokenize answers it). */
  readonly #maxModelLen = new Map<string, number>();

  constructor(private readonly d: RouterTokenizersDeps) {}

  /** Load `path` (once) as `model`'s tokenizer, or the default when `model` is undefined. */
  async add(model: string | undefined, path: string): Promise<EngineTokenizer> {
    let p = this.#byPath.get(path);
    if (p === undefined) {
      p = this.d.load(path);
      this.#byPath.set(path, p);
      p.catch(() => this.#byPath.delete(path));
    }
    const tok = await p;
    if (model === undefined) this.#default = tok;
    else this.#byModel.set(model, tok);
    return tok;
  }

  /** The tokenizer of a request's `model` (its base model's for an adapter), else the default. */
  forModel(model: unknown): EngineTokenizer | undefined {
    if (this.#byModel.size > 0 && typeof model === "string") {
      const own = this.#byModel.get(model);
      if (own !== undefined) return own;
      const parent = this.d.parentOf(model);
      const inherited = parent !== undefined ? this.#byModel.get(parent) : undefined;
      if (inherited !== undefined) return inherited;
    }
    return this.#default;
  }

  /** The tokenizer given for exactly this model (undefined for the default), no fallback. */
  ownOf(model: string | undefined): EngineTokenizer | undefined {
    return model === undefined ? this.#default : this.#byModel.get(model);
  }

  get size(): number {
    return this.#byModel.size + (this.#default !== undefined ? 1 : 0);
  }

  /** The engines' context length for `model`, when a probe told us. */
  maxModelLen(model: string | undefined): number | undefined {
    return model !== undefined ? this.#maxModelLen.get(model) : [...this.#maxModelLen.values()][0];
  }

  checkOf(worker: WorkerId): TokenizerCheck | undefined {
    return this.#checks.get(worker);
  }

  forget(worker: WorkerId): void {
    this.#checks.delete(worker);
  }

  /**
   * Compare our tokens of the probe with the engine's own POST /tokenize for `model`.
   * Nothing to compare (no tokenizer for the model): undefined, and nothing recorded.
   */
  async check(
    worker: WorkerId,
    url: string,
    model: string | undefined,
  ): Promise<TokenizerCheck | undefined> {
    const tok = this.forModel(model);
    if (tok === undefined) return undefined;
    const ours = await tok.encodeText(TOKENIZER_PROBE, true);
    let result: TokenizerCheck;
    try {
      const res = await this.d.fetch(`${url}/tokenize`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          ...(model !== undefined ? { model } : {}),
          prompt: TOKENIZER_PROBE,
        }),
        signal: AbortSignal.timeout(this.d.timeoutMs),
      });
      const body = (await res.json().catch(() => undefined)) as
        | { tokens?: unknown; max_model_len?: unknown }
        | undefined;
      if (!res.ok || !Array.isArray(body?.tokens)) {
        result = {
          status: "unchecked",
          detail: `POST ${url}/tokenize answered HTTP ${res.status}`,
        };
      } else {
        if (typeof body.max_model_len === "number" && model !== undefined)
          this.#maxModelLen.set(model, body.max_model_len);
        result = compare(ours, body.tokens as unknown[], tok.source);
      }
    } catch (e) {
      result = {
        status: "unchecked",
        detail: `POST ${url}/tokenize failed: ${(e as Error).message}`,
      };
    }
    this.#checks.set(worker, result);
    return result;
  }
}

function compare(ours: Uint32Array, theirs: readonly unknown[], source: string): TokenizerCheck {
  const n = Math.max(ours.length, theirs.length);
  for (let i = 0; i < n; i++) {
    if (ours[i] !== theirs[i]) {
      return {
        status: "mismatch",
        detail: `the engine's /tokenize differs from ${source} at token ${i} of the probe (engine ${JSON.stringify(theirs.slice(i, i + 4))}, router ${JSON.stringify([...ours.subarray(i, i + 4)])}); text is routed on the router's tokens, which the engine's KV events will not match`,
      };
    }
  }
  return { status: "match" };
}
