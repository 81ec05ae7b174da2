/**
 * Which split regexes have a hand-written pre-tokenizer, by the exact pattern text of
 * tokenizer.json: cl100k's (Llama 3), cl100k's with single digits (Qwen2/3), o200k's (GPT-4o,
 * gpt-oss) and o200k's without contractions, single digits (Mistral NeMo). Any other pattern
 * (DeepSeek V3's three Splits among them) stays on the regex. A matcher returns where the
 * piece starting at `pos` ends, exactly as the sticky regex would (-1: no match there).
 * Runtime-free; no I/O.
 */
import { cl100kMatcher } from "./split-cl100k.ts";
import { o200kMatcher } from "./split-o200k.ts";

export type SplitMatcher = (text: string, pos: number) => number;

const CL100K = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const CL100K_SINGLE_DIGITS = CL100K.replace(String.raw`\p{N}{1,3}`, String.raw`\p{N}`);
const O200K_WORD = String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+`;
const O200K_CAPS = String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*`;
const CONTRACTION = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)?`;
const O200K_REST = String.raw`| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const O200K = `${O200K_WORD}${CONTRACTION}|${O200K_CAPS}${CONTRACTION}|\\p{N}{1,3}${O200K_REST}`;
const NEMO = `${O200K_WORD}|${O200K_CAPS}|\\p{N}${O200K_REST}`;

const MATCHERS: ReadonlyMap<string, () => SplitMatcher> = new Map([
  [CL100K, () => cl100kMatcher(3)],
  [CL100K_SINGLE_DIGITS, () => cl100kMatcher(1)],
  [O200K, () => o200kMatcher(true, 3)],
  [NEMO, () => o200kMatcher(false, 1)],
]);

/** The hand-written matcher for this tokenizer.json split regex, if there is one. */
export function handWrittenMatcher(regex: string): SplitMatcher | undefined {
  return MATCHERS.get(regex)?.();
}

/** The patterns that have one (for the tests that compare each with its regex). */
export const HAND_WRITTEN_PATTERNS: readonly string[] = [...MATCHERS.keys()];
