/**
 * A hand-written pre-tokenizer for the cl100k split pattern (GPT-4's; Llama 3 uses it as is,
 * Qwen2/3 with single digits instead of runs of up to three):
 *
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * Why: the regex is about half of a byte-level BPE encode (bench/tokens); a small state machine
 * over char codes and a class table (char-classes.ts) finds the same pieces several times faster.
 * `matchAt` answers what the regex, made sticky and run at `pos` in Unicode mode, would match
 * there: each alternative below is that alternative's backtracking worked out by hand, tried
 * in the regex's order. This pattern matches at every position, so it never returns -1.
 * test/unit/tokens/split-handwritten.test.ts compares it with the regex piece for piece.
 * Runtime-free; no I/O.
 */
import { BMP_CLASSES, classOf, LETTER, NUMBER, SPACE } from "./char-classes.ts";
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
const APOSTROPHE = 0x27;

/** The matcher for cl100k's pattern with digit runs of up to `maxDigits` (3: Llama 3, 1: Qwen2/3). */
export function cl100kMatcher(maxDigits: number): (s: string, pos: number) => number {
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
    // [^\r\n\p{L}\p{N}]?\p{L}+ (a letter cannot start a contraction, so it goes first)
    if ((k0 & LETTER) !== 0) return runOf(s, pos + w0, LETTER);
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (c0 === APOSTROPHE) {
      const end = contractionAt(s, pos);
      if (end >= 0) return end;
    }
    // \p{N}{1,maxDigits}
    if ((k0 & NUMBER) !== 0) return digitsAt(s, pos, maxDigits);
    // [^\r\n\p{L}\p{N}]?\p{L}+ : one non-letter, non-digit, non-CR/LF before a letter run.
    if (c0 !== CR && c0 !== LF && pos + w0 < n && isAt(s, pos + w0, LETTER))
      return runOf(s, pos + w0, LETTER);
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
    if ((k0 & SPACE) === 0) return breaksAfter(s, otherRun(s, pos + w0), false);
    if (c0 === SPACE_CHAR && pos + 1 < n && !isAt(s, pos + 1, NOT_OTHER))
      return breaksAfter(s, otherRun(s, pos + 1), false);
    // \s*[\r\n]+|\s+(?!\S)|\s+
    return whitespaceAt(s, pos);
  };
}
