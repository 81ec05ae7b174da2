/**
 * A hand-written pre-tokenizer for the o200k split pattern (GPT-4o and gpt-oss; Mistral NeMo's
 * Tekken is the same without the contractions and with single digits):
 *
 *   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
 *   |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
 *   |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * Why, and how it is checked: as split-cl100k.ts. `matchAt` returns what the regex, sticky at
 * `pos` in Unicode mode, would match; each alternative is tried in the regex's order, with its
 * optional leading character first taken, then not (the regex's own backtracking order).
 * Runtime-free; no I/O.
 */
import { BMP_CLASSES, classOf, LETTER, LOWERISH, NUMBER, SPACE, UPPERISH } from "./char-classes.ts";
import {
  breaksAfter,
  CR,
  codePointAt,
  contractionAt,
  digitsAt,
  isAt,
  LF,
  NOT_OTHER,
  otherRun,
  runOf,
  SPACE_CHAR,
  whitespaceAt,
} from "./split-scan.ts";

const BMP = BMP_CLASSES; // module-local: see split-scan.ts
const WORDISH = UPPERISH | LOWERISH;

/**
 * `[UPPERISH]*[LOWERISH]+` from `q`, or -1. The greedy star backs off one code point at a time
 * until a lower-ish one follows, so the lower-ish run starts where the upper-ish run ends if a
 * lower-ish code point is there, else at the run's last code point that is also lower-ish
 * (Lm, Lo and marks are both).
 */
function casedWordAt(s: string, q: number): number {
  const n = s.length;
  let i = q;
  let lastLower = -1;
  while (i < n) {
    let cp = s.charCodeAt(i);
    let k: number;
    if (cp < 0xd800 || cp > 0xdfff) k = BMP[cp]!;
    else {
      cp = codePointAt(s, i);
      k = classOf(cp);
    }
    if ((k & UPPERISH) === 0)
      return (k & LOWERISH) !== 0
        ? runOf(s, i, LOWERISH)
        : lastLower < 0
          ? -1
          : runOf(s, lastLower, LOWERISH);
    if ((k & LOWERISH) !== 0) lastLower = i;
    i += cp > 0xffff ? 2 : 1;
  }
  return lastLower < 0 ? -1 : runOf(s, lastLower, LOWERISH);
}

/** `[UPPERISH]+[LOWERISH]*` from `q`, or -1. */
function capitalsAt(s: string, q: number): number {
  if (q >= s.length || !isAt(s, q, UPPERISH)) return -1;
  return runOf(s, runOf(s, q, UPPERISH), LOWERISH);
}

/** The matcher for o200k's pattern; `contractions` false and `maxDigits` 1 give Mistral NeMo's. */
export function o200kMatcher(
  contractions: boolean,
  maxDigits: number,
): (s: string, pos: number) => number {
  return (s, pos) => {
    const n = s.length;
    if (pos >= n) return -1;
    let c0 = s.charCodeAt(pos);
    let w0 = 1;
    let k0: number;
    if (c0 < 0xd800 || c0 > 0xdfff) k0 = BMP[c0]!;
    else {
      c0 = codePointAt(s, pos);
      w0 = c0 > 0xffff ? 2 : 1;
      k0 = classOf(c0);
    }
    // The two word alternatives: [^\r\n\p{L}\p{N}]? may take c0, and then each is tried after
    // it first. A word needs an upper- or lower-ish code point where it starts.
    const afterPrefix =
      (k0 & (LETTER | NUMBER)) === 0 &&
      c0 !== CR &&
      c0 !== LF &&
      pos + w0 < n &&
      isAt(s, pos + w0, WORDISH);
    const here = (k0 & WORDISH) !== 0;
    if (afterPrefix || here) {
      let end = afterPrefix ? casedWordAt(s, pos + w0) : -1;
      if (end < 0 && here) end = casedWordAt(s, pos);
      if (end < 0 && afterPrefix) end = capitalsAt(s, pos + w0);
      if (end < 0 && here) end = capitalsAt(s, pos);
      if (end >= 0) {
        // (?i:'s|'t|'re|'ve|'m|'ll|'d)?
        const c = contractions ? contractionAt(s, end) : -1;
        return c >= 0 ? c : end;
      }
    }
    // \p{N}{1,maxDigits}
    if ((k0 & NUMBER) !== 0) return digitsAt(s, pos, maxDigits);
    // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
    if ((k0 & SPACE) === 0) return breaksAfter(s, otherRun(s, pos + w0), true);
    if (c0 === SPACE_CHAR && pos + 1 < n && !isAt(s, pos + 1, NOT_OTHER))
      return breaksAfter(s, otherRun(s, pos + 1), true);
    // \s*[\r\n]+|\s+(?!\S)|\s+
    return whitespaceAt(s, pos);
  };
}
