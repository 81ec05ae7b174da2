/**
 * The guard in front of the byte-level BPE: before it stands in for the library on a tokenizer,
 * both encode the differential corpus (guard-corpus.ts) and must give the same ids for every
 * input. The BPE is HF's algorithm over the same files, and every committed vector agrees; the
 * guard is there for the tokenizer.json nobody has checked yet — a regex construct, a
 * normalization or an added-token layout the vectors never met. A difference sends that model to
 * the library, and the report names the first input that differed so it can be reproduced.
 * Runtime-free; no clock (the caller times it if it wants).
 */
import type { BpeGuardDifference, BpeGuardResult, TokenizerLibrary } from "./engine-tokenizer.ts";
import { type CorpusInput, differentialCorpus } from "./guard-corpus.ts";

function firstDiff(a: Uint32Array, b: Uint32Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

/** Encode every corpus input with both; stop at the first difference. */
export async function guardBpe(
  bpe: TokenizerLibrary,
  library: TokenizerLibrary,
  addedTokens: readonly string[],
  corpus: readonly CorpusInput[] = differentialCorpus(addedTokens),
): Promise<BpeGuardResult> {
  let tokens = 0;
  for (const [i, c] of corpus.entries()) {
    for (const add of c.withSpecialTokens ? [false, true] : [false]) {
      const ours = await bpe.encode(c.text, add);
      const theirs = await library.encode(c.text, add);
      tokens += theirs.length;
      const at = firstDiff(ours, theirs);
      if (at >= 0) {
        const difference: BpeGuardDifference = {
          input: c.text.length > 200 ? `${c.text.slice(0, 200)}…` : c.text,
          inputIndex: i,
          addSpecialTokens: add,
          at,
          bpe: [...ours.subarray(at, at + 8)],
          library: [...theirs.subarray(at, at + 8)],
        };
        return { agree: false, inputs: i + 1, tokens, difference };
      }
    }
  }
  return { agree: true, inputs: corpus.length, tokens };
}
