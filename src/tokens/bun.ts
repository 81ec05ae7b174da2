/**
 * Bun's wiring of the tokenizer library: files read with Bun.file, and the native HF
 * `tokenizers` addon. Only Bun's composition root (and Bun-only tests/benches) import this
 * file; everything else in src/tokens stays runtime-free.
 */
import type { EngineTokenizer, TokenizerImpl } from "./engine-tokenizer.ts";
import { type LoadTokenizerOptions, loadEngineTokenizer } from "./load.ts";
import { createNativeTextEncoder } from "./native-text-encoder.ts";

export const readTextWithBun = (path: string): Promise<string> => Bun.file(path).text();

/** loadEngineTokenizer with Bun's file reader and the native library (the default on Bun). */
export function loadEngineTokenizerOnBun(
  dir: string,
  opts: Omit<LoadTokenizerOptions, "readText" | "nativeEncoder"> & { impl?: TokenizerImpl } = {},
): Promise<EngineTokenizer> {
  return loadEngineTokenizer(dir, {
    ...opts,
    impl: opts.impl ?? "native",
    readText: readTextWithBun,
    nativeEncoder: createNativeTextEncoder,
  });
}
