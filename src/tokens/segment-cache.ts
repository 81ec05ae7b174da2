/**
 * Later turns of a conversation reuse the ids of earlier turns. HF tokenizers cut the text at
 * added tokens first (AddedVocabulary::extract_and_normalize, tokenizers 0.23) and encode each
 * piece between them on its own, so the ids of a rendered chat are the concatenation of
 * encode(piece) and the added tokens' ids — when the added tokens strip no neighbouring
 * whitespace (lstrip/rstrip/single_word false) and no pre-tokenizer depends on a piece's
 * position (Metaspace prepend_scheme "first"). `segmentPlan` checks that statically from
 * tokenizer.json; the loader also checks it on a probe text, and the unit test on every
 * vector. `SegmentCache` is an LRU of piece -> ids bounded by the total ids it holds.
 */
import { AddedTokenFinder } from "./added-token-finder.ts";
import type { AddedTokenJson, PreTokenizerJson, TokenizerJson } from "./model-files.ts";

export interface SegmentPlan {
  /** Splits text into [piece, token, piece, token, ..., piece]; odd indices are added tokens. */
  readonly pattern: RegExp;
  /** text.split(pattern), by added-token-finder.ts (faster on long texts: no regex try at every position). */
  readonly cut: (text: string) => string[];
  readonly idOf: ReadonlyMap<string, number>;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function positionDependent(p: PreTokenizerJson | null | undefined): boolean {
  if (!p) return false;
  if (p.type === "Metaspace" && (p.prepend_scheme === "first" || p.prepend_scheme === undefined))
    return true;
  return (p.pretokenizers ?? []).some(positionDependent);
}

/** Why the cache cannot be used for this tokenizer, or the plan to split text with. */
export function segmentPlan(tokenizer: TokenizerJson): SegmentPlan | string {
  const added: AddedTokenJson[] = tokenizer.added_tokens ?? [];
  const stripping = added.find((t) => t.lstrip || t.rstrip || t.single_word);
  if (stripping)
    return `added token ${JSON.stringify(stripping.content)} strips whitespace around it`;
  if (positionDependent(tokenizer.pre_tokenizer))
    return "the Metaspace pre-tokenizer treats the first piece differently";
  // Normalized added tokens are matched inside pieces by the library itself; split only on the others.
  const raw = added.filter((t) => t.normalized !== true && t.content.length > 0);
  if (raw.length === 0) return "the tokenizer has no added tokens to split at";
  // Longest first: JS alternation is leftmost-first, which then equals HF's leftmost-longest.
  const alternatives = raw
    .map((t) => t.content)
    .sort((a, b) => b.length - a.length)
    .map(escapeRegExp);
  const finder = new AddedTokenFinder(raw.map((t) => t.content));
  return {
    pattern: new RegExp(`(${alternatives.join("|")})`, "u"),
    cut: (text) => finder.cut(text),
    idOf: new Map(raw.map((t) => [t.content, t.id])),
  };
}

/** LRU of text piece -> ids, bounded by the total number of ids held (and the text they key). */
export class SegmentCache {
  private readonly map = new Map<string, Uint32Array>();
  private tokens = 0;
  private chars = 0;

  constructor(
    readonly maxTokens: number,
    /** Keys are text: bound them too (a piece of many spaces is one id but many characters). */
    readonly maxChars: number = maxTokens * 16,
  ) {}

  get size(): number {
    return this.map.size;
  }
  get heldTokens(): number {
    return this.tokens;
  }
  get heldChars(): number {
    return this.chars;
  }

  get(piece: string): Uint32Array | undefined {
    const ids = this.map.get(piece);
    if (ids !== undefined) {
      // Most recently used goes last.
      this.map.delete(piece);
      this.map.set(piece, ids);
    }
    return ids;
  }

  set(piece: string, ids: Uint32Array): void {
    if (ids.length > this.maxTokens || piece.length > this.maxChars) return;
    const old = this.map.get(piece);
    if (old !== undefined) {
      this.map.delete(piece);
      this.tokens -= old.length;
      this.chars -= piece.length;
    }
    this.map.set(piece, ids);
    this.tokens += ids.length;
    this.chars += piece.length;
    for (const [k, v] of this.map) {
      if (this.tokens <= this.maxTokens && this.chars <= this.maxChars) break;
      this.map.delete(k);
      this.tokens -= v.length;
      this.chars -= k.length;
    }
  }
}
