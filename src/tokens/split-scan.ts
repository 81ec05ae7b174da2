/**
 * The scanning steps the hand-written pre-tokenizers (split-cl100k.ts, split-o200k.ts) are made
 * of: code points as a Unicode-mode regex sees them, runs of a class, contractions, and the
 * white-space alternatives the split patterns share. Each says which piece of regex it stands for.
 * Runtime-free; no I/O.
 */
import { BMP_CLASSES, classOf, LETTER, NUMBER, SPACE } from "./char-classes.ts";

// A module-local alias: an imported binding is read through the module record on every use.
const BMP = BMP_CLASSES;

export const CR = 0x0d;
export const LF = 0x0a;
export const SPACE_CHAR = 0x20;
const APOSTROPHE = 0x27;
/** Letter, number or white space: what `[^\s\p{L}\p{N}]` excludes. */
export const NOT_OTHER = LETTER | NUMBER | SPACE;

/** The code point at `i` (a lone surrogate stands for itself, as in a Unicode-mode regex). */
export function codePointAt(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if ((c & 0xfc00) === 0xd800 && i + 1 < s.length) {
    const d = s.charCodeAt(i + 1);
    if ((d & 0xfc00) === 0xdc00) return ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
  }
  return c;
}

/** Whether the code point at `i` (there must be one) has any of the class `bits`. */
export function isAt(s: string, i: number, bits: number): boolean {
  const c = s.charCodeAt(i);
  if (c < 0xd800 || c > 0xdfff) return (BMP[c]! & bits) !== 0;
  return (classOf(codePointAt(s, i)) & bits) !== 0;
}

/** Where a contraction ('s 't 're 've 'm 'll 'd, any case) starting at `pos` ends, or -1. */
export function contractionAt(s: string, pos: number): number {
  if (s.charCodeAt(pos) !== APOSTROPHE || pos + 1 >= s.length) return -1;
  // | 0x20 lower-cases an ASCII letter; no other code unit lands on these letters.
  const a = s.charCodeAt(pos + 1) | 0x20;
  if (a === 0x73 || a === 0x74 || a === 0x6d || a === 0x64) return pos + 2; // s t m d
  if (pos + 2 >= s.length) return -1;
  const b = s.charCodeAt(pos + 2) | 0x20;
  if ((a === 0x72 || a === 0x76) && b === 0x65) return pos + 3; // re ve
  if (a === 0x6c && b === 0x6c) return pos + 3; // ll
  return -1;
}

/** End of the run of code points from `pos` whose class has any of `bits`. */
export function runOf(s: string, pos: number, bits: number): number {
  const n = s.length;
  let i = pos;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) {
      if ((BMP[c]! & bits) === 0) break;
      i++;
    } else {
      const cp = codePointAt(s, i);
      if ((classOf(cp) & bits) === 0) break;
      i += cp > 0xffff ? 2 : 1;
    }
  }
  return i;
}

/** `\p{N}{1,max}` at a position holding a number: where the run of up to `max` numbers ends. */
export function digitsAt(s: string, pos: number, max: number): number {
  let i = pos;
  for (let k = 0; k < max && i < s.length; k++) {
    const cp = codePointAt(s, i);
    if ((classOf(cp) & NUMBER) === 0) break;
    i += cp > 0xffff ? 2 : 1;
  }
  return i;
}

/** End of the run of code points from `pos` that are none of letter, number, white space. */
export function otherRun(s: string, pos: number): number {
  const n = s.length;
  let i = pos;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) {
      if ((BMP[c]! & NOT_OTHER) !== 0) break;
      i++;
    } else {
      const cp = codePointAt(s, i);
      if ((classOf(cp) & NOT_OTHER) !== 0) break;
      i += cp > 0xffff ? 2 : 1;
    }
  }
  return i;
}

/**
 * The white-space alternatives, at a position holding white space:
 * `\s*[\r\n]+` ends after the run's last CR/LF; else `\s+(?!\S)` takes the run but its last
 * character when something follows (the end of the text takes all); else `\s+` the one character.
 */
export function whitespaceAt(s: string, pos: number): number {
  const n = s.length;
  let i = pos;
  let lastBreak = -1;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c === CR || c === LF) lastBreak = i;
    else if ((BMP[c]! & SPACE) === 0) break; // all white space is in the BMP
    i++;
  }
  if (lastBreak >= 0) return lastBreak + 1;
  if (i === n || i - pos < 2) return i;
  return i - 1;
}

/** `breaks`: the pieces of punctuation take the CR/LF after them (o200k also takes `/`). */
export function breaksAfter(s: string, pos: number, slash: boolean): number {
  const n = s.length;
  let i = pos;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c !== CR && c !== LF && !(slash && c === 0x2f)) break;
    i++;
  }
  return i;
}
