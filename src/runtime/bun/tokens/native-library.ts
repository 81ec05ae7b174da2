/**
 * Text -> ids with Hugging Face's own Rust tokenizers (npm `tokenizers`, a Node-API
 * addon): the library vLLM's tokenizer runs on. Bun/Node only — only Bun's composition
 * root (./bun.ts) imports this file, so the pure path never loads the native addon.
 * Calls are async (the addon encodes on its thread pool); batches go in one call.
 */
import { Tokenizer } from "tokenizers";
import type {
  TokenizerLibrary,
  TokenizerLibraryFactory,
} from "../../../tokens/engine-tokenizer.ts";

function toU32(ids: readonly number[]): Uint32Array {
  const out = new Uint32Array(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = ids[i]!;
  return out;
}

export const createNativeLibrary: TokenizerLibraryFactory = (tokenizerJson): TokenizerLibrary => {
  const tok = Tokenizer.fromString(tokenizerJson);
  return {
    implementation: "tokenizers (HF Rust, native)",
    encode: async (text, addSpecialTokens) =>
      toU32((await tok.encode(text, null, { addSpecialTokens })).getIds()),
    encodeMany: async (texts) =>
      (await tok.encodeBatch(texts as string[], { addSpecialTokens: false })).map((e) =>
        toU32(e.getIds()),
      ),
    decode: (ids) => tok.decode(Array.from(ids), false),
  };
};
