/**
 * loadEngineTokenizer: a model directory -> EngineTokenizer, with the encoder chosen (the guarded
 * byte-level BPE by default: guardedChoice). Runtime-free: files come through
 * `opts.readText`, and the native library only when the caller passes its factory
 * (`opts.nativeLibrary`, from runtime/bun/tokens/native-library.ts, which wires both on Bun). Checks
 * the segment cache on a probe text with the real library before turning it on.
 */
import type {
  EncoderChoice,
  EngineTokenizer,
  ReadText,
  TokenizerImpl,
  TokenizerLibrary,
  TokenizerLibraryFactory,
} from "./engine-tokenizer.ts";
import { type BpeTokenizerJson, byteLevelBpePlan, createBpeLibrary } from "./bpe-library.ts";
import { guardBpe } from "./bpe-guard.ts";
import { HfEngineTokenizer } from "./hf-engine-tokenizer.ts";
import { loadModelFiles, type ModelFiles } from "./model-files.ts";
import { createPureLibrary } from "./pure-library.ts";
import { segmentPlan } from "./segment-cache.ts";

export interface LoadTokenizerOptions {
  /** "pure" (default here; any runtime) or "native" (needs `nativeLibrary`). */
  impl?: TokenizerImpl;
  /** Reads a file as text. Required: this folder does no I/O (./bun.ts passes Bun's). */
  readText?: ReadText;
  /** The native library's factory (native-library.ts), passed only where it can load. */
  nativeLibrary?: TokenizerLibraryFactory;
  /** Segment cache bound, in token ids held (0 turns it off). Default 1 Mi ids (~4 MiB of ids). */
  cacheTokens?: number;
  /**
   * Clock for the templates' strftime_now (ms since the epoch). Injected (./bun.ts passes the
   * wall clock); without one, a template calling strftime_now fails with an error saying so.
   */
  now?: () => number;
  /**
   * impl "pure": which encoder. "guarded" (default): the byte-level BPE of bpe-library.ts where
   * tokenizer.json qualifies and it encodes the differential corpus (bpe-guard.ts) exactly as
   * `@huggingface/tokenizers` does, else that library — the BPE is 3-6x faster on a first-sight
   * prompt (bench/tokens), the check keeps it exact on tokenizers no vector covers. true: the
   * BPE wherever it qualifies, unchecked; false: the library.
   */
  byteLevelBpe?: boolean | "guarded";
  /**
   * impl "pure": where large encodes run instead of this thread (Bun: a pool of Workers,
   * encode-pool.ts, wired by ./bun.ts), told whether the encoder chosen is the byte-level BPE
   * (the workers load the same one). Default: in this thread.
   */
  offload?: (
    library: TokenizerLibrary,
    dir: string,
    byteLevelBpe: boolean,
  ) => TokenizerLibrary | Promise<TokenizerLibrary>;
}

const noClock = (): number => {
  throw new Error("strftime_now: no clock was injected into loadEngineTokenizer (opts.now)");
};

export const DEFAULT_CACHE_TOKENS = 1 << 20;

/** A text crossing every kind of piece boundary: words, spaces, newlines, CJK, digits, emoji. */
function probeText(tokens: readonly string[]): string {
  const words = ["Hello", " world", "\n\n", "  x", "你好", " 123", "😀 ", "\n", "a\tb ", ""];
  let s = "";
  tokens.slice(0, 8).forEach((t, i) => {
    s += `${words[i % words.length]}${t}${words[(i + 3) % words.length]}`;
  });
  return `${s} end\n`;
}

function sameIds(a: Uint32Array, b: Uint32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The pure encoder: the byte-level BPE where tokenizer.json qualifies (and, guarded, agrees with the library), else the library. */
async function pureEncoder(
  files: ModelFiles,
  mode: boolean | "guarded",
): Promise<{ library: TokenizerLibrary; choice: EncoderChoice }> {
  const args = [files.tokenizerJson, files.config, files.tokenizerJsonPath] as const;
  if (mode === false)
    return {
      library: await createPureLibrary(...args),
      choice: { encoder: "library", reason: "the library was asked for" },
    };
  const plan = byteLevelBpePlan(files.tokenizer as BpeTokenizerJson);
  if (typeof plan === "string") {
    const lib = await createPureLibrary(...args);
    return {
      library: {
        ...lib,
        implementation: `${lib.implementation}; byte-level BPE not used: ${plan}`,
      },
      choice: {
        encoder: "library",
        reason: `the byte-level BPE does not take this tokenizer.json: ${plan}`,
      },
    };
  }
  const bpe = createBpeLibrary(plan, files.config);
  if (mode === true) return { library: bpe, choice: { encoder: "byte-level-bpe" } };
  return guardedChoice(
    bpe,
    await createPureLibrary(...args),
    plan.added.map((t) => t.content),
  );
}

/** The byte-level BPE if it encodes the differential corpus exactly as the library, else the library (saying where they differ). */
export async function guardedChoice(
  bpe: TokenizerLibrary,
  lib: TokenizerLibrary,
  addedTokens: readonly string[],
): Promise<{ library: TokenizerLibrary; choice: EncoderChoice }> {
  const guard = await guardBpe(bpe, lib, addedTokens);
  // The library is dropped when the BPE wins: its tables are tens of MiB of small objects.
  if (guard.agree) return { library: bpe, choice: { encoder: "byte-level-bpe", guard } };
  const d = guard.difference;
  const reason = `the byte-level BPE differs from the library on differential input ${d.inputIndex} ${JSON.stringify(d.input)} (add_special_tokens ${d.addSpecialTokens}, id ${d.at}: ${JSON.stringify(d.bpe)} vs ${JSON.stringify(d.library)})`;
  return {
    library: {
      ...lib,
      implementation: `${lib.implementation}; byte-level BPE not used: ${reason}`,
    },
    choice: { encoder: "library", reason, guard },
  };
}

/** A model directory's pure encoder alone (text -> ids, no template): what an encode worker runs. */
export async function loadPureLibrary(
  dir: string,
  opts: { readText: ReadText; byteLevelBpe?: boolean },
): Promise<TokenizerLibrary> {
  const files = await loadModelFiles(dir, opts.readText);
  return (await pureEncoder(files, opts.byteLevelBpe === true)).library;
}

export async function loadEngineTokenizer(
  dir: string,
  opts: LoadTokenizerOptions = {},
): Promise<EngineTokenizer> {
  const impl = opts.impl ?? "pure";
  if (opts.readText === undefined) {
    throw new Error(
      "loadEngineTokenizer: no file reader; pass opts.readText (on Bun use loadEngineTokenizerOnBun from src/runtime/bun/tokens/load-on-bun.ts)",
    );
  }
  if (impl !== "native" && impl !== "pure") {
    throw new Error(
      `loadEngineTokenizer: impl must be "native" or "pure" (got ${JSON.stringify(impl)})`,
    );
  }
  const native = opts.nativeLibrary;
  if (impl === "native" && native === undefined) {
    throw new Error(
      'loadEngineTokenizer: impl "native" needs opts.nativeLibrary (native-library.ts; Bun/Node only)',
    );
  }
  const files = await loadModelFiles(dir, opts.readText);
  if (files.config.split_special_tokens === true) {
    // transformers then encodes special-token text as plain text (encode_special_tokens);
    // neither library exposes that switch, so the ids would differ: refuse rather than guess.
    throw new Error(
      `${dir}/tokenizer_config.json: split_special_tokens: true is not supported by the router's tokenizer`,
    );
  }
  let encoder: TokenizerLibrary;
  let choice: EncoderChoice;
  try {
    if (impl === "pure")
      ({ library: encoder, choice } = await pureEncoder(files, opts.byteLevelBpe ?? "guarded"));
    else
      [encoder, choice] = [
        await native!(files.tokenizerJson, files.config, files.tokenizerJsonPath),
        { encoder: "native", reason: "the native library was asked for" },
      ];
  } catch (e) {
    throw new Error(
      `${files.tokenizerJsonPath}: the ${impl} tokenizer library cannot load it (${(e as Error).message})`,
    );
  }
  if (impl === "pure" && opts.offload !== undefined)
    encoder = await opts.offload(encoder, dir, choice.encoder === "byte-level-bpe");
  const plan = segmentPlan(files.tokenizer);
  const tok = new HfEngineTokenizer(
    // The encoder has what it needs: drop tokenizer.json's text and parsed tree (vocab, merges:
    // hundreds of thousands of objects every major GC would otherwise trace, for the process's life).
    { ...files, tokenizerJson: "", tokenizer: {} },
    encoder,
    typeof plan === "string" ? undefined : plan,
    opts.cacheTokens ?? DEFAULT_CACHE_TOKENS,
    opts.now ?? noClock,
    choice,
  );
  if (typeof plan !== "string" && tok.segmentCache) {
    const probe = probeText([...plan.idOf.keys()]);
    const whole = await encoder.encode(probe, false);
    if (!sameIds(whole, await tok.encodeSegmented(probe, undefined))) tok.disableSegmentCache();
  }
  return tok;
}
