/**
 * Text -> ids for byte-level BPE tokenizers (Qwen2/3, Llama 3, GPT-style: a Split regex,
 * ByteLevel bytes, BPE merges), written here because no library was fast enough
 * (bench/tokens/libraries.ts; figures in README.md): HF's own algorithm — tokenizers 0.23
 * `models/bpe/word.rs` `Word::merge_all` (apply the listed merge of lowest rank, leftmost
 * on ties, until none applies) and `models/bpe/model.rs` `tokenize_with_cache`
 * (`ignore_merges`: a whole piece found in the vocab is one id) — over integer ids and typed
 * arrays instead of strings. The split regex is the pure library's own translation of the
 * Oniguruma pattern (`SplitPreTokenizer`), so pieces are cut exactly where the pure library
 * cuts them; the common patterns (cl100k's, o200k's) are cut by a hand-written pre-tokenizer
 * instead (split-matchers.ts), which test/unit/tokens/split-handwritten.test.ts proves gives
 * the regex's pieces, ~1.5x faster than the regex.
 *
 * `byteLevelBpePlan(tokenizer.json)` says whether a tokenizer qualifies (else why not, and the
 * loader keeps the library); every vector (test/vectors/tokens) and the seeded random texts
 * check it id for id. Runtime-free; synchronous; no I/O.
 */
import { SplitPreTokenizer } from "@huggingface/tokenizers";
import type { TokenizerLibrary } from "./engine-tokenizer.ts";
import { AddedTokenFinder } from "./added-token-finder.ts";
import { PieceCache } from "./piece-cache.ts";
import { handWrittenMatcher, type SplitMatcher } from "./split-matchers.ts";

/** tokenizer.json, the parts this encoder reads. */
export interface BpeTokenizerJson {
  normalizer?: { type?: string; normalizers?: { type?: string }[] } | null;
  pre_tokenizer?: {
    type?: string;
    pretokenizers?: {
      type?: string;
      pattern?: { Regex?: string };
      behavior?: string;
      invert?: boolean;
      add_prefix_space?: boolean;
      use_regex?: boolean;
    }[];
  } | null;
  post_processor?: PostProcessorJson | null;
  decoder?: { type?: string } | null;
  added_tokens?: {
    id: number;
    content: string;
    lstrip?: boolean;
    rstrip?: boolean;
    single_word?: boolean;
    normalized?: boolean;
  }[];
  model?: {
    type?: string;
    dropout?: number | null;
    unk_token?: string | null;
    continuing_subword_prefix?: string | null;
    end_of_word_suffix?: string | null;
    byte_fallback?: boolean;
    ignore_merges?: boolean;
    vocab?: Record<string, number>;
    merges?: (string | [string, string])[];
  };
}
interface PostProcessorJson {
  type?: string;
  processors?: PostProcessorJson[];
  single?: ({ SpecialToken?: { id: string } } | { Sequence?: { id: string } })[];
  special_tokens?: Record<string, { ids: number[] }>;
}

/** What the encoder needs, checked and prepared from tokenizer.json. */
export interface ByteLevelBpePlan {
  readonly vocab: Record<string, number>;
  readonly merges: readonly (string | readonly [string, string])[];
  /**
   * The Split pre-tokenizers, in order: each cuts every piece the previous one made. `matchesOnly`:
   * Split(Removed, invert) keeps only what the regex matches (o200k's form); else Split(Isolated)
   * keeps the matches and the gaps between them, each a piece.
   */
  readonly splits: readonly { readonly regex: string; readonly matchesOnly: boolean }[];
  readonly nfc: boolean;
  readonly ignoreMerges: boolean;
  /**
   * Added tokens (none strip whitespace): cut out before anything else — first those matched on
   * the raw text, then, in each piece left, the `normalized` ones on its normalized text (HF's
   * AddedVocabulary does the same two passes).
   */
  readonly added: readonly { id: number; content: string; normalized: boolean }[];
  /** Ids the post-processor puts around the text when add_special_tokens is true. */
  readonly prefix: readonly number[];
  readonly suffix: readonly number[];
}

/** GPT-2's bytes_to_unicode: byte b is written in the vocab as the character BYTE_CHAR[b]. */
const BYTE_CHAR: readonly number[] = (() => {
  const out = new Array<number>(256);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    out[b] = printable ? b : 256 + n++;
  }
  return out;
})();
const CHAR_BYTE = new Map<number, number>(BYTE_CHAR.map((c, b) => [c, b]));

function templateIds(
  pp: PostProcessorJson | null | undefined,
): { prefix: number[]; suffix: number[] } | string {
  if (pp === null || pp === undefined || pp.type === "ByteLevel") return { prefix: [], suffix: [] };
  if (pp.type === "Sequence") {
    let found: { prefix: number[]; suffix: number[] } = { prefix: [], suffix: [] };
    for (const p of pp.processors ?? []) {
      const r = templateIds(p);
      if (typeof r === "string") return r;
      if (r.prefix.length + r.suffix.length > 0) {
        if (found.prefix.length + found.suffix.length > 0) return "two post-processors add tokens";
        found = r;
      }
    }
    return found;
  }
  if (pp.type === "TemplateProcessing") {
    const prefix: number[] = [];
    const suffix: number[] = [];
    let seen = false;
    for (const item of pp.single ?? []) {
      if ("Sequence" in item && item.Sequence !== undefined) {
        if (item.Sequence.id !== "A" || seen)
          return "a single template other than [specials, A, specials]";
        seen = true;
      } else if ("SpecialToken" in item && item.SpecialToken !== undefined) {
        const ids = pp.special_tokens?.[item.SpecialToken.id]?.ids;
        if (ids === undefined) return `template token ${item.SpecialToken.id} has no ids`;
        (seen ? suffix : prefix).push(...ids);
      } else return "an unknown template item";
    }
    if (!seen) return "a single template without the sequence";
    return { prefix, suffix };
  }
  return `post-processor ${pp.type}`;
}

/** The plan for `tokenizer`, or why this encoder does not handle it (the loader then keeps the library). */
export function byteLevelBpePlan(tokenizer: BpeTokenizerJson): ByteLevelBpePlan | string {
  const m = tokenizer.model;
  if (m?.type !== "BPE") return `model ${m?.type} is not BPE`;
  if (m.dropout !== null && m.dropout !== undefined && m.dropout !== 0) return "BPE dropout";
  if (m.byte_fallback === true) return "byte_fallback";
  if ((m.continuing_subword_prefix ?? "") !== "" || (m.end_of_word_suffix ?? "") !== "")
    return "subword prefix/suffix";
  if (m.vocab === undefined || !Array.isArray(m.merges)) return "no vocab or merges";
  const n = tokenizer.normalizer;
  let nfc = false;
  if (n !== null && n !== undefined) {
    const kinds = n.type === "Sequence" ? (n.normalizers ?? []).map((x) => x.type) : [n.type];
    if (kinds.some((k) => k !== "NFC")) return `normalizer ${kinds.join("+")}`;
    nfc = kinds.length > 0;
  }
  const pre = tokenizer.pre_tokenizer;
  const steps = pre?.type === "Sequence" ? (pre.pretokenizers ?? []) : [];
  const bytes = steps.at(-1);
  const splits = steps
    .slice(0, -1)
    .map((x) =>
      x.type === "Split" &&
      typeof x.pattern?.Regex === "string" &&
      ((x.behavior === "Isolated" && x.invert !== true) ||
        (x.behavior === "Removed" && x.invert === true))
        ? { regex: x.pattern.Regex, matchesOnly: x.behavior === "Removed" }
        : undefined,
    );
  if (
    splits.length === 0 ||
    splits.includes(undefined) ||
    bytes?.type !== "ByteLevel" ||
    bytes.add_prefix_space === true ||
    bytes.use_regex === true
  ) {
    return "pre-tokenizer is not Sequence[Split(Regex, Isolated | Removed+invert)..., ByteLevel(no prefix space, no regex)]";
  }
  if (tokenizer.decoder?.type !== "ByteLevel") return `decoder ${tokenizer.decoder?.type}`;
  const added = tokenizer.added_tokens ?? [];
  const odd = added.find((t) => t.lstrip || t.rstrip || t.single_word);
  if (odd) return `added token ${JSON.stringify(odd.content)} strips whitespace`;
  for (let b = 0; b < 256; b++) {
    if (m.vocab[String.fromCharCode(BYTE_CHAR[b]!)] === undefined)
      return `byte ${b} is not in the vocab`;
  }
  const template = templateIds(tokenizer.post_processor);
  if (typeof template === "string") return template;
  return {
    vocab: m.vocab,
    merges: m.merges,
    splits: splits as { regex: string; matchesOnly: boolean }[],
    nfc,
    ignoreMerges: m.ignore_merges === true,
    added: added
      .filter((t) => t.content.length > 0)
      .map((t) => ({ id: t.id, content: t.content, normalized: t.normalized === true })),
    ...template,
  };
}

/** Growable output of ids. */
class IdBuffer {
  ids = new Uint32Array(1024);
  length = 0;
  push(id: number): void {
    if (this.length === this.ids.length) this.grow(1);
    this.ids[this.length++] = id;
  }
  /** src[from, to): a loop, not set(subarray()): most pieces are one or two ids. */
  pushRange(src: ArrayLike<number>, from: number, to: number): void {
    const n = to - from;
    if (this.length + n > this.ids.length) this.grow(n);
    const ids = this.ids;
    let at = this.length;
    for (let i = from; i < to; i++) ids[at++] = src[i]!;
    this.length = at;
  }
  private grow(n: number): void {
    const next = new Uint32Array(Math.max(this.ids.length * 2, this.length + n));
    next.set(this.ids.subarray(0, this.length));
    this.ids = next;
  }
  /** The ids so far, copied out; the buffer is emptied, and let go of when a huge text grew it past `keep`. */
  take(keep: number): Uint32Array {
    const ids = this.ids.slice(0, this.length);
    this.length = 0;
    if (this.ids.length > keep) this.ids = new Uint32Array(1024);
    return ids;
  }
}

/** Pieces longer than this (in bytes) merge through a heap (HF's way); shorter ones by scanning. */
export const SCAN_MAX_SYMBOLS = 48;
/** The output buffer is kept between calls up to this many ids (1 MiB: a 256k-token text), not held larger. */
const OUT_KEEP_IDS = 1 << 18;
/** Longer pieces (long runs of spaces or letters) are not cached: rare, and they would hold memory. */
const PIECE_CACHE_MAX_CHARS = 256;

export class ByteLevelBpe {
  /** Vocab ids of the text a piece spells, when that text is one token (ignore_merges' lookup). */
  private readonly wholeIds = new Map<string, number>();
  private readonly byteId = new Int32Array(256);
  /** (left id, right id) -> rank * 2^idBits + merged id. */
  private readonly mergeOf = new Map<number, number>();
  /** The id each merge (by rank) produces. */
  private readonly mergedByRank: Int32Array;
  private readonly idScale: number;
  /**
   * The split regexes, compiled by the pure library's own Oniguruma -> JS translation, and what
   * matches at a position: the pattern's hand-written pre-tokenizer where it has one
   * (split-matchers.ts), else the regex made sticky.
   */
  private readonly splitters: readonly {
    readonly re: RegExp;
    readonly matchAt: SplitMatcher;
    readonly matchesOnly: boolean;
  }[];
  /** Added tokens matched on the raw text, and those matched on a piece's normalized text. */
  private readonly addedFinder: AddedTokenFinder | undefined;
  private readonly normalizedFinder: AddedTokenFinder | undefined;
  private readonly addedId = new Map<string, number>();
  /** Pieces already merged (HF's BPE keeps a cache of words too): piece-cache.ts. */
  private readonly pieces = new PieceCache();
  /**
   * id -> the bytes it spells (added tokens: their UTF-8 text), for decode: all in one buffer
   * (id's bytes at bytesAt[id] .. bytesAt[id + 1]), not one array per token, so the garbage
   * collector has a handful of objects to trace here instead of ~150k. For the same reason
   * nothing keeps tokenizer.json's vocab and merges once the tables are built.
   */
  private readonly tokenBytes: Uint8Array;
  private readonly bytesAt: Int32Array;
  private readonly nfc: boolean;
  private readonly ignoreMerges: boolean;
  private readonly prefix: readonly number[];
  private readonly suffix: readonly number[];
  // Scratch, reused by every call (the encoder is synchronous, so never shared mid-call).
  /** The ids of the text being encoded: kept at its largest size (a 128k prompt: 512 KiB), not regrown per call. */
  private readonly out = new IdBuffer();
  private sym = new Int32Array(256);
  private rank = new Float64Array(256);
  private next = new Int32Array(256);
  private prev = new Int32Array(256);
  private heap = new Float64Array(512); // twice the symbols: HF's heap holds up to 2n entries
  private readonly utf8 = new TextEncoder();
  private readonly lossy = new TextDecoder("utf-8", { ignoreBOM: true });

  constructor(
    plan: ByteLevelBpePlan,
    /** Pieces of up to this many bytes merge by scanning, longer ones through the heap (tests force either). */
    private readonly scanMax = SCAN_MAX_SYMBOLS,
  ) {
    let maxId = 0;
    for (const id of Object.values(plan.vocab)) maxId = Math.max(maxId, id);
    for (const t of plan.added) maxId = Math.max(maxId, t.id);
    this.idScale = 2 ** Math.max(1, Math.ceil(Math.log2(maxId + 1)));
    // ignoreBOM keeps a leading U+FEFF: Llama 3 has tokens that start with one.
    this.nfc = plan.nfc;
    this.ignoreMerges = plan.ignoreMerges;
    this.prefix = [...plan.prefix];
    this.suffix = [...plan.suffix];
    const spelled: (Uint8Array | undefined)[] = new Array(maxId + 1);
    const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    for (const [tok, id] of Object.entries(plan.vocab)) {
      const b = new Uint8Array(tok.length);
      for (let i = 0; i < tok.length; i++) b[i] = CHAR_BYTE.get(tok.charCodeAt(i)) ?? 0;
      spelled[id] = b;
      if (b.length > 1) {
        try {
          this.wholeIds.set(strict.decode(b), id);
        } catch {
          // Not valid UTF-8 alone: no whole piece of text spells it.
        }
      }
    }
    for (let b = 0; b < 256; b++) this.byteId[b] = plan.vocab[String.fromCharCode(BYTE_CHAR[b]!)]!;
    this.mergedByRank = new Int32Array(plan.merges.length);
    // HF (models/bpe/model.rs) collects merges into a map in file order: a repeated pair keeps the last rank.
    plan.merges.forEach((mg, rank) => {
      const [a, b] = typeof mg === "string" ? splitMerge(mg) : mg;
      const ia = plan.vocab[a];
      const ib = plan.vocab[b];
      const merged = plan.vocab[a + b];
      if (ia === undefined || ib === undefined || merged === undefined) {
        throw new Error(`merge ${JSON.stringify(mg)}: a part or the result is not in the vocab`);
      }
      this.mergeOf.set(ia * this.idScale + ib, rank * this.idScale + merged);
      this.mergedByRank[rank] = merged;
    });
    this.splitters = plan.splits.map(({ regex, matchesOnly }) => {
      const compiled = (
        new SplitPreTokenizer({
          type: "Split",
          pattern: { Regex: regex },
          behavior: "Isolated",
          invert: false,
        }) as unknown as { pattern: unknown }
      ).pattern;
      if (!(compiled instanceof RegExp))
        throw new Error(`the split regex ${JSON.stringify(regex)} did not compile`);
      const sticky = new RegExp(compiled.source, `${compiled.flags.replace("g", "")}y`);
      // test(), not exec(): no match array to allocate per piece; the sticky match is [pos, lastIndex).
      const byRegex: SplitMatcher = (text, pos) => {
        sticky.lastIndex = pos;
        return sticky.test(text) ? sticky.lastIndex : -1;
      };
      return { re: compiled, matchAt: handWrittenMatcher(regex) ?? byRegex, matchesOnly };
    });
    const finder = (contents: string[]) =>
      contents.length === 0 ? undefined : new AddedTokenFinder(contents);
    const norm = (c: string) => (plan.nfc ? c.normalize("NFC") : c);
    this.addedFinder = finder(plan.added.filter((t) => !t.normalized).map((t) => t.content));
    this.normalizedFinder = finder(
      plan.added.filter((t) => t.normalized).map((t) => norm(t.content)),
    );
    for (const t of plan.added) {
      this.addedId.set(t.normalized ? norm(t.content) : t.content, t.id);
      spelled[t.id] = this.utf8.encode(t.content);
    }
    this.bytesAt = new Int32Array(maxId + 2);
    let total = 0;
    for (let id = 0; id <= maxId; id++) {
      this.bytesAt[id] = total;
      total += spelled[id]?.length ?? 0;
    }
    this.bytesAt[maxId + 1] = total;
    this.tokenBytes = new Uint8Array(total);
    spelled.forEach((b, id) => b !== undefined && this.tokenBytes.set(b, this.bytesAt[id]!));
  }

  encode(text: string, addSpecialTokens: boolean): Uint32Array {
    const out = this.out;
    out.length = 0; // a call that threw part-way left its ids behind
    if (addSpecialTokens) for (const id of this.prefix) out.push(id);
    this.cutAdded(text, this.addedFinder, out, true);
    if (addSpecialTokens) for (const id of this.suffix) out.push(id);
    return out.take(OUT_KEEP_IDS);
  }

  /**
   * Cut `text` at the added tokens `finder` finds (their ids go out as they are); the pieces
   * between go on: raw pieces to normalization (then the normalized added tokens), normalized
   * ones to the splits.
   */
  private cutAdded(
    text: string,
    finder: AddedTokenFinder | undefined,
    out: IdBuffer,
    raw: boolean,
  ): void {
    const next = (piece: string) => {
      if (raw)
        this.cutAdded(this.nfc ? piece.normalize("NFC") : piece, this.normalizedFinder, out, false);
      else this.split(piece, 0, out);
    };
    if (finder === undefined) {
      next(text);
      return;
    }
    let at = 0;
    for (let i = finder.find(text, 0); i >= 0; i = finder.find(text, at)) {
      if (i > at) next(text.slice(at, i));
      out.push(this.addedId.get(finder.found)!);
      at = i + finder.found.length;
    }
    if (at < text.length) next(at === 0 ? text : text.slice(at));
  }

  /**
   * Cut `text` with split number `level`, then each piece with the next one; the last level's
   * pieces are words. The next match is first tried where the previous one ended (`matchAt`:
   * the split regexes of real tokenizers match every character, so it nearly always hits, and
   * a sticky match is ~2x faster than the global regex's search); only when nothing matches
   * right there does the global regex look further, leaving a gap: the same matches either way.
   */
  private split(text: string, level: number, out: IdBuffer): void {
    const { re, matchAt, matchesOnly } = this.splitters[level]!;
    const deeper = level + 1;
    const last = deeper === this.splitters.length;
    let at = 0; // end of the last piece handed on
    let pos = 0; // where the next match is looked for
    for (;;) {
      let start = pos;
      let end = matchAt(text, pos);
      if (end < 0) {
        re.lastIndex = pos;
        const m = re.exec(text);
        if (m === null) break;
        start = m.index;
        end = start + m[0].length;
      }
      if (end === start) {
        pos = start + 1;
        continue;
      }
      // The last level's pieces are encoded where they lie in `text`: no substring per piece.
      if (start > at && !matchesOnly) {
        if (last) this.encodeWord(text, at, start, out);
        else this.split(text.slice(at, start), deeper, out);
      }
      if (last) this.encodeWord(text, start, end, out);
      else this.split(text.slice(start, end), deeper, out);
      at = pos = end;
    }
    if (at < text.length && !matchesOnly) {
      if (last) this.encodeWord(text, at, text.length, out);
      else this.split(at === 0 ? text : text.slice(at), deeper, out);
    }
  }

  /** The ids of the piece text[start, end). */
  private encodeWord(text: string, start: number, end: number, out: IdBuffer): void {
    if (end - start === 1) {
      const c = text.charCodeAt(start);
      if (c < 0x80) {
        out.push(this.byteId[c]!);
        return;
      }
    }
    const cached = end - start <= PIECE_CACHE_MAX_CHARS;
    const hash = cached ? PieceCache.hash(text, start, end) : 0;
    if (cached) {
      const e = this.pieces.find(text, start, end, hash);
      if (e >= 0) {
        out.pushRange(this.pieces.ids, this.pieces.idsFrom(e), this.pieces.idsTo(e));
        return;
      }
    }
    let n = -1;
    if (this.ignoreMerges) {
      const id = this.wholeIds.get(text.slice(start, end));
      if (id !== undefined) {
        this.sym[0] = id;
        n = 1;
      }
    }
    if (n < 0) n = this.merge(text, start, end);
    if (cached) this.pieces.add(text, start, end, hash, this.sym, n);
    out.pushRange(this.sym, 0, n);
  }

  private ensure(n: number): void {
    if (this.sym.length >= n) return;
    const size = Math.max(n, this.sym.length * 2);
    this.sym = new Int32Array(size);
    this.rank = new Float64Array(size);
    this.next = new Int32Array(size);
    this.prev = new Int32Array(size);
    this.heap = new Float64Array(size * 2);
  }

  /** rank * 2^idBits + merged id of the pair, or -1. */
  private pair(a: number, b: number): number {
    return this.mergeOf.get(a * this.idScale + b) ?? -1;
  }

  /**
   * Merges the piece text[start, end): its UTF-8 bytes (written here from the char codes, lone
   * surrogates as U+FFFD as TextEncoder writes them) as byte ids, then the merges. The ids are
   * left in sym[0, returned count).
   */
  private merge(text: string, start: number, end: number): number {
    this.ensure((end - start) * 3 + 1);
    const sym = this.sym;
    const byteId = this.byteId;
    let n = 0;
    for (let i = start; i < end; i++) {
      let c = text.charCodeAt(i);
      if (c < 0x80) {
        sym[n++] = byteId[c]!;
        continue;
      }
      if (c < 0x800) {
        sym[n++] = byteId[0xc0 | (c >> 6)]!;
        sym[n++] = byteId[0x80 | (c & 0x3f)]!;
        continue;
      }
      if (c >= 0xd800 && c <= 0xdfff) {
        const d = i + 1 < end ? text.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          const cp = ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
          sym[n++] = byteId[0xf0 | (cp >> 18)]!;
          sym[n++] = byteId[0x80 | ((cp >> 12) & 0x3f)]!;
          sym[n++] = byteId[0x80 | ((cp >> 6) & 0x3f)]!;
          sym[n++] = byteId[0x80 | (cp & 0x3f)]!;
          i++;
          continue;
        }
        c = 0xfffd;
      }
      sym[n++] = byteId[0xe0 | (c >> 12)]!;
      sym[n++] = byteId[0x80 | ((c >> 6) & 0x3f)]!;
      sym[n++] = byteId[0x80 | (c & 0x3f)]!;
    }
    return n <= this.scanMax ? this.mergeByScan(n) : this.mergeByHeap(n);
  }

  /** tiktoken-style: keep each adjacent pair's merge; apply the lowest (rank, position) until none. */
  private mergeByScan(n: number): number {
    const sym = this.sym;
    const rank = this.rank; // rank * scale + merged id of (sym[i], sym[i+1]), or Infinity
    const scale = this.idScale;
    for (let i = 0; i + 1 < n; i++) {
      const p = this.pair(sym[i]!, sym[i + 1]!);
      rank[i] = p < 0 ? Infinity : p;
    }
    let len = n;
    while (len > 1) {
      let best = Infinity;
      let at = -1;
      for (let i = 0; i + 1 < len; i++) {
        if (rank[i]! < best) {
          best = rank[i]!;
          at = i;
        }
      }
      if (at < 0) break;
      sym[at] = best % scale;
      for (let i = at + 1; i + 1 < len; i++) {
        sym[i] = sym[i + 1]!;
        rank[i] = rank[i + 1]!;
      }
      len--;
      if (at + 1 < len) {
        const p = this.pair(sym[at]!, sym[at + 1]!);
        rank[at] = p < 0 ? Infinity : p;
      }
      if (at > 0) {
        const p = this.pair(sym[at - 1]!, sym[at]!);
        rank[at - 1] = p < 0 ? Infinity : p;
      }
    }
    return len;
  }

  /**
   * HF's Word::merge_all: a min-heap of (rank, position, merged id) over a linked list of
   * symbols; an entry whose pair has changed since it was pushed is skipped.
   */
  private mergeByHeap(n: number): number {
    const { sym, next, prev, heap } = this;
    const scale = this.idScale;
    // Heap keys: rank * 2^24 + position (exact in a double), so the minimum is HF's (rank, pos) order.
    const POS = 1 << 24;
    if (n >= POS) throw new Error("piece too long for the merge heap");
    const alive = new Uint8Array(n).fill(1);
    let size = 0;
    const push = (key: number) => {
      let i = size++;
      while (i > 0) {
        const up = (i - 1) >> 1;
        if (heap[up]! <= key) break;
        heap[i] = heap[up]!;
        i = up;
      }
      heap[i] = key;
    };
    const pop = (): number => {
      const top = heap[0]!;
      const last = heap[--size]!;
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= size) break;
        if (c + 1 < size && heap[c + 1]! < heap[c]!) c++;
        if (heap[c]! >= last) break;
        heap[i] = heap[c]!;
        i = c;
      }
      heap[i] = last;
      return top;
    };
    const offer = (pos: number) => {
      const p = this.pair(sym[pos]!, sym[next[pos]!]!);
      if (p >= 0) push(Math.floor(p / scale) * POS + pos);
    };
    for (let i = 0; i < n; i++) {
      next[i] = i + 1 < n ? i + 1 : -1;
      prev[i] = i - 1;
    }
    for (let i = 0; i + 1 < n; i++) offer(i);
    while (size > 0) {
      const key = pop();
      const pos = key % POS;
      const merged = this.mergedByRank[Math.floor(key / POS)]!;
      if (!alive[pos]) continue;
      const right = next[pos]!;
      if (right < 0) continue;
      const now = this.pair(sym[pos]!, sym[right]!);
      if (now < 0 || now % scale !== merged) continue; // expired entry
      sym[pos] = merged;
      alive[right] = 0;
      next[pos] = next[right]!;
      if (next[right]! >= 0) prev[next[right]!] = pos;
      if (prev[pos]! >= 0) offer(prev[pos]!);
      if (next[pos]! >= 0) offer(pos);
    }
    // Compact the surviving symbols to the front (positions only grow along the list).
    let len = 0;
    for (let i = 0; i >= 0 && i < n; i = next[i]!) sym[len++] = sym[i]!;
    return len;
  }

  decode(ids: Uint32Array): string {
    const at = this.bytesAt;
    const last = at.length - 1;
    let total = 0;
    for (const id of ids) if (id < last) total += at[id + 1]! - at[id]!;
    const buf = new Uint8Array(total);
    let to = 0;
    for (const id of ids) {
      if (id >= last) continue; // an unknown id spells nothing (as HF's decode skips it)
      buf.set(this.tokenBytes.subarray(at[id]!, at[id + 1]!), to);
      to += at[id + 1]! - at[id]!;
    }
    return this.lossy.decode(buf);
  }
}

function splitMerge(s: string): [string, string] {
  const i = s.indexOf(" ", 1);
  return [s.slice(0, i), s.slice(i + 1)];
}

/** transformers' `clean_up_tokenization` (tokenization_utils_base.py), applied by decode when the config asks. */
function cleanUpTokenization(s: string): string {
  return s
    .replaceAll(" .", ".")
    .replaceAll(" ?", "?")
    .replaceAll(" !", "!")
    .replaceAll(" ,", ",")
    .replaceAll(" ' ", "'")
    .replaceAll(" n't", "n't")
    .replaceAll(" 'm", "'m")
    .replaceAll(" 's", "'s")
    .replaceAll(" 've", "'ve")
    .replaceAll(" 're", "'re");
}

/**
 * A TokenizerLibrary over ByteLevelBpe (synchronous; no batching). `tokenizerConfig`'s
 * clean_up_tokenization_spaces applies to decode, as in transformers (and the pure library).
 */
export function createBpeLibrary(
  plan: ByteLevelBpePlan,
  tokenizerConfig: Record<string, unknown> = {},
  scanMax?: number,
): TokenizerLibrary {
  const bpe = new ByteLevelBpe(plan, scanMax);
  const cleanUp = tokenizerConfig.clean_up_tokenization_spaces === true;
  return {
    implementation: "byte-level BPE (pure JS, HF's merge algorithm; src/tokens/bpe-library.ts)",
    encode: (text, addSpecialTokens) => bpe.encode(text, addSpecialTokens),
    decode: (ids) => (cleanUp ? cleanUpTokenization(bpe.decode(ids)) : bpe.decode(ids)),
  };
}
