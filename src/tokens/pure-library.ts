/**
 * Text -> ids with `@huggingface/tokenizers` (pure JavaScript, any runtime: Bun, Deno,
 * workerd, browsers). Synchronous underneath; one Tokenizer per model, reused.
 * It does not read files: it gets tokenizer.json's text and tokenizer_config.json parsed.
 */
import { Tokenizer } from "@huggingface/tokenizers";
import type { TokenizerLibrary, TokenizerLibraryFactory } from "./engine-tokenizer.ts";

function toU32(ids: readonly number[]): Uint32Array {
  const out = new Uint32Array(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = ids[i]!;
  return out;
}

export const createPureLibrary: TokenizerLibraryFactory = (
  tokenizerJson,
  tokenizerConfig,
): TokenizerLibrary => {
  const tok = new Tokenizer(JSON.parse(tokenizerJson) as object, tokenizerConfig);
  return {
    implementation: "@huggingface/tokenizers (pure JS)",
    encode: (text, addSpecialTokens) =>
      toU32(tok.encode(text, { add_special_tokens: addSpecialTokens }).ids),
    decode: (ids) => tok.decode(Array.from(ids), { skip_special_tokens: false }),
  };
};
