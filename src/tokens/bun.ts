/**
 * Bun's wiring of the tokenizer library: files read with Bun.file, and the native HF
 * `tokenizers` addon. Only Bun's composition root (and Bun-only tests/benches) import this
 * file; everything else in src/tokens stays runtime-free.
 */
import type { EngineTokenizer, TokenizerImpl } from "./engine-tokenizer.ts";
import { type LoadTokenizerOptions, loadEngineTokenizer } from "./load.ts";
import { createNativeLibrary } from "./native-library.ts";

export const readTextWithBun = (path: string): Promise<string> => Bun.file(path).text();

/**
 * loadEngineTokenizer with Bun's file reader, and the native library available. The default
 * library is the pure-JS one even here: measured on Bun (bench/tokens, README), it encodes
 * faster (~1.7-1.8 M vs 0.8-1.1 M tokens/s) and without the native addon's per-call thread
 * hop, which puts the native p99 of a warm 8k-token chat at ~5 ms against ~1 ms. Pass
 * `impl: "native"` to encode off the event loop instead (long cold prompts then do not
 * block other requests).
 */
export function loadEngineTokenizerOnBun(
  dir: string,
  opts: Omit<LoadTokenizerOptions, "readText" | "nativeLibrary"> & { impl?: TokenizerImpl } = {},
): Promise<EngineTokenizer> {
  return loadEngineTokenizer(dir, {
    ...opts,
    impl: opts.impl ?? "pure",
    now: opts.now ?? (() => Date.now()),
    readText: readTextWithBun,
    nativeLibrary: createNativeLibrary,
  });
}
