/**
 * Bun's wiring of the tokenizer library: files read with Bun.file, and the native HF
 * `tokenizers` addon. Only Bun's composition root (and Bun-only tests/benches) import this
 * file; everything else in src/tokens stays runtime-free.
 */
import type { EngineTokenizer, TokenizerImpl } from "../../../tokens/engine-tokenizer.ts";
import { type LoadTokenizerOptions, loadEngineTokenizer } from "../../../tokens/load.ts";
import { EncodePool, type EncodePoolOptions, offloadLargeEncodes } from "./encode-pool.ts";
import { createNativeLibrary } from "./native-library.ts";

export const readTextWithBun = (path: string): Promise<string> => Bun.file(path).text();

/**
 * loadEngineTokenizer with Bun's file reader, and the native library available. The default
 * encoder is a pure-JS one even here (the guarded byte-level BPE, else `@huggingface/tokenizers`):
 * measured on Bun (bench/tokens, README), both encode faster than the native addon awaited per
 * call, which adds a thread hop to every encode. Pass `impl: "native"` to encode off the event
 * loop instead (long cold prompts then do not block other requests).
 */
export function loadEngineTokenizerOnBun(
  dir: string,
  opts: Omit<LoadTokenizerOptions, "readText" | "nativeLibrary" | "offload"> & {
    impl?: TokenizerImpl;
    /**
     * impl "pure": encode large texts in a pool of Workers (encode-pool.ts) so they do not
     * stall the event loop. Off when undefined (tests, benches); the router turns it on.
     */
    encodePool?: EncodePoolOptions;
  } = {},
): Promise<EngineTokenizer> {
  const poolOpts = opts.encodePool;
  return loadEngineTokenizer(dir, {
    ...opts,
    offload:
      poolOpts === undefined
        ? undefined
        : async (library, at, byteLevelBpe) => {
            const pool = new EncodePool(at, { ...poolOpts, byteLevelBpe });
            try {
              await pool.ready;
            } catch (e) {
              pool.close();
              throw e;
            }
            return offloadLargeEncodes(library, pool, poolOpts.minChars);
          },
    impl: opts.impl ?? "pure",
    now: opts.now ?? (() => Date.now()),
    readText: readTextWithBun,
    nativeLibrary: createNativeLibrary,
  });
}
