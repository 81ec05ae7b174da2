/**
 * The Unicode classes the tokenizers' split regexes test (\p{L}, \p{N}, \p{White_Space}, and
 * o200k's letter-case groups), one byte of bits per code point, so a hand-written
 * pre-tokenizer asks a table instead of the regex engine. The table is filled by this
 * runtime's own regex engine (the same `\p{…}` the split regexes use, so the two cannot
 * disagree on a Unicode version), a plane at a time when first needed: the Basic
 * Multilingual Plane at once, the astral planes (emoji, historic scripts, CJK extensions) lazily.
 * Runtime-free; no I/O.
 */

export const LETTER = 1; // \p{L}
export const NUMBER = 2; // \p{N}
export const SPACE = 4; // \p{White_Space} (the compiled split regexes' \s)
/** [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]: o200k's "starts a word in capitals" class. */
export const UPPERISH = 8;
/** [\p{Ll}\p{Lm}\p{Lo}\p{M}]: o200k's "lower-case part of a word" class. */
export const LOWERISH = 16;

const PROPERTIES: readonly (readonly [number, RegExp])[] = [
  [LETTER, /\p{L}+/gu],
  [NUMBER, /\p{N}+/gu],
  [SPACE, /\p{White_Space}+/gu],
  [UPPERISH, /[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+/gu],
  [LOWERISH, /[\p{Ll}\p{Lm}\p{Lo}\p{M}]+/gu],
];

/**
 * The classes of every code point of `plane` (0..16). Each property regex runs once over a
 * string holding the whole plane, in runs, instead of 65,536 tests per property: ~ms, not
 * ~100 ms. Surrogate code units (BMP) are left 0: alone they are no letter, digit or space.
 */
function buildPlane(plane: number): Uint8Array {
  const table = new Uint8Array(0x10000);
  const units = plane === 0 ? 1 : 2; // UTF-16 units per code point of this plane
  const codes = new Uint16Array(0x10000 * units);
  for (let i = 0; i < 0x10000; i++) {
    if (plane === 0) codes[i] = i >= 0xd800 && i <= 0xdfff ? 0 : i;
    else {
      const offset = plane * 0x10000 + i - 0x10000; // the code point less 0x10000, as UTF-16 splits it
      codes[2 * i] = 0xd800 + (offset >> 10);
      codes[2 * i + 1] = 0xdc00 + (offset & 0x3ff);
    }
  }
  // apply() on array-likes, not fromCharCode(...chunk): spreading a typed array walks its
  // iterator (~60 ms here); and not a "utf-16le" TextDecoder, which not every runtime has.
  let text = "";
  for (let i = 0; i < codes.length; i += 4096)
    text += String.fromCharCode.apply(null, codes.subarray(i, i + 4096) as unknown as number[]);
  for (const [bit, re] of PROPERTIES) {
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const end = (m.index + m[0].length) / units;
      for (let i = m.index / units; i < end; i++) table[i]! |= bit;
    }
  }
  return table;
}

/** Classes of the BMP, indexed by UTF-16 code unit: the hot path reads this directly. */
export const BMP_CLASSES: Uint8Array = buildPlane(0);
const astral: (Uint8Array | undefined)[] = [];

/** Classes of any code point (astral planes built on first use, ~64 KiB each). */
export function classOf(cp: number): number {
  if (cp < 0x10000) return BMP_CLASSES[cp]!;
  const plane = cp >> 16;
  const table = astral[plane] ?? (astral[plane] = buildPlane(plane));
  return table[cp & 0xffff]!;
}
