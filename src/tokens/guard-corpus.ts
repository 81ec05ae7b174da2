/**
 * The differential corpus: the texts the byte-level BPE and the library must encode alike before
 * the BPE may stand in for the library (bpe-guard.ts). Built in code, deterministic (a fixed
 * seed), ~57 K characters: many scripts and languages, code, emoji and ZWJ sequences, long whitespace and
 * digit runs, NFC-sensitive text, long pieces (the merge heap's path), every added token of the
 * tokenizer alone and glued to its neighbours, random Unicode scalar values (never a lone
 * surrogate: those are not text, and the encoders may differ on them without any prompt ever
 * showing it), and random mixes of all of these.
 */
// Seeded: the corpus must be the same on every load (a difference must reproduce).
import { mulberry32 } from "../core/mulberry32.ts";

const SCRIPTS = [
  "The quick brown fox jumps over the lazy dog. It's 5 o'clock; we'll see, they're here, I'd go, you've won.",
  "Où est la bibliothèque ? L'élève a répondu « non » — c'était déjà fait. Ça va, naïve café.",
  "Größenwahn und Straße: Übermäßig schöne Äpfel, ÖL, ẞ. Fußgängerübergänge.",
  "Tiếng Việt có dấu: Nguyễn Thị Minh Khai, phở bò, trường học, ngữ pháp.",
  "İstanbul'da ılık bir gün; IĞDIR, şişe, çiçek. Dziękuję, źdźbło, żółć. Čeština, ďábel.",
  "Ελληνικά: Γειά σου κόσμε, ΑΒΓΔ αβγδ ς. Русский: Привет, мир! ЁЖИК ёжик. Українська: Їжак ґанок.",
  "Հայերեն գրեր, ქართული ენა, Монгол бичиг ᠮᠣᠩᠭᠣᠯ, ግዕዝ ፊደል, ᏣᎳᎩ, ᓄᓇᕗᑦ.",
  "עברית: שָׁלוֹם עוֹלָם. العربية: مَرْحَبًا بِالعَالَم، كيف حالك؟ فارسی: سلام دنیا، ۱۲۳۴.",
  "हिन्दी: नमस्ते दुनिया, क्षत्रिय। বাংলা: ওহে বিশ্ব। தமிழ்: வணக்கம் உலகம். తెలుగు: హలో ప్రపంచం. ಕನ್ನಡ ಮಲಯാളം ગુજરાતી ਪੰਜਾਬੀ",
  "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ ພາສາລາວ ភាសាខ្មែរ မြန်မာဘာသာ བོད་ཡིག སිංහල",
  "中文：你好，世界！繁體中文：這是一個測試。日本語：こんにちは、世界。カタカナ ﾊﾝｶｸ 漢字かな交じり文。",
  "한국어: 안녕하세요 세계. 조합형 자모: \u1100\u1161\u11a8\u1102\u1165 . 𠀀𠀁 𪚥 (CJK extension B).",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐁𝐨𝐥𝐝 𝕯𝖔𝖚𝖇𝖑𝖊 ＦＵＬＬＷＩＤＴＨ ｆｕｌｌ ＡＢＣ１２３ ɪᴘᴀ ʃʒθð ˈstres ┌─┐│└┘ ░▒▓ ∀∂∈ℝ ≤≥≠ ∑∫√∞",
];

const CODE = [
  'def f(x: int) -> int:\n    """Doc."""\n    return x ** 2 if x > 0 else -x  # comment\n\n\nclass A(B):\n\tpass\n',
  "for (let i = 0; i < n; i++) {\n  sum += a[i] >>> 0; // js\n}\nconst f = async (x) => { await g(x?.y ?? 0); };\n",
  'fn main() -> Result<(), Box<dyn Error>> {\n    let v: Vec<u8> = vec![0xff; 16];\n    println!("{:?}", &v[..]);\n    Ok(())\n}\n',
  "#include <stdio.h>\nint main(void) { char *p = NULL; if (!p && 1 || ~0) return -1; }\n",
  "SELECT a.id, COUNT(*) AS n FROM t a LEFT JOIN u ON a.id=u.aid WHERE x IN (1,2,3) GROUP BY 1 HAVING n>=2;",
  "<!DOCTYPE html><html><body><div class=\"x\" data-y='1'>&amp;&lt;&gt;&#x1F600;</div></body></html>",
  '{"a": [1, 2.5e-10, null, true], "b": {"c": "\\u00e9\\n"}, "d": ""}\n---\nkey: value\nlist:\n  - one\n  - two\n',
  "#!/bin/bash\nset -euo pipefail\nfor f in *.txt; do echo \"$f\" | sed -e 's/a/b/g' >> out.log 2>&1; done\n",
  "| a | b |\n|---|---:|\n| 1 | 2 |\n\n```python\nprint('hi')\n```\n$$\\frac{\\partial f}{\\partial x} = \\sum_{i=0}^{n} x_i^2$$",
  "--- a/f.ts\n+++ b/f.ts\n@@ -1,3 +1,3 @@\n-const a = 1;\n+const a = 2;\n ^(?:[a-z0-9._%+-]+)@[a-z0-9.-]+\\.[a-z]{2,}$",
  '!function(e,t){"object"==typeof exports?module.exports=t():e.x=t()}(this,function(){return{a:1,b:[2,3]}});'.repeat(
    4,
  ),
];

const EMOJI = [
  "😀",
  "😀😃😄😁",
  "👍🏻👍🏼👍🏽👍🏾👍🏿",
  "👩‍👩‍👧‍👦",
  "👨‍👩‍👧",
  "🧑🏽‍💻",
  "🏳️‍🌈",
  "🏴‍☠️",
  "🇫🇷🇯🇵🇺🇸",
  "🏴󠁧󠁢󠁥󠁮󠁧󠁿",
  "1️⃣#️⃣*️⃣",
  "❤️❤",
  "☺️☺",
  "🤖🚀✨ text 🎉 more",
  "a😀b",
  "👩🏽‍❤️‍💋‍👨🏿",
  "🫠🫶🪿",
];

const NFC_SENSITIVE = [
  "e\u0301 a\u0300 o\u0308 n\u0303",
  "\u212b \u2126 \u00c5",
  "\u1e9b\u0323",
  "\u0344",
  "ﬁ ﬂ ﬀ",
  "Ⅻ ½ ² ³ ㎏ ㍿",
  "\u0041\u030a\u0301",
  "\u0fb2\u0f80",
  "\u09c7\u09be",
  "ḳ́",
  "Tiê\u0301ng Viê\u0323t",
  "\ufeffBOM at start",
  "zero\u200bwidth\u200cjoin\u200d",
  "soft\u00adhyphen",
  "rtl\u200fmark\u200e",
];

const SPACE_CHARS = [
  " ",
  "\t",
  "\n",
  "\r\n",
  "\r",
  "\u00a0",
  "\u3000",
  "\u2028",
  "\u2029",
  "\u000b",
  "\u000c",
  "\u2009",
  "\u200a",
];

const CONTRACTIONS = [
  "don't",
  "DON'T",
  "It'S",
  "we'LL",
  "I'M",
  "they'Re",
  "you'VE",
  "she'D",
  "'s'",
  "''",
  "’s",
  "rock'n'roll",
  "o'clock",
];

function whitespaceRuns(): string[] {
  const out: string[] = [];
  for (const n of [1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 100, 255, 256, 257, 300]) {
    out.push(
      `a${" ".repeat(n)}b`,
      `${" ".repeat(n)}x`,
      `x${" ".repeat(n)}`,
      `x${"\t".repeat(n)}y`,
      `${"\n".repeat(n)}z`,
    );
    out.push(
      `p${"\r\n".repeat(Math.min(n, 64))}q`,
      `k${" \n".repeat(Math.min(n, 64))}`,
      `${"\u00a0".repeat(n)}.`,
    );
  }
  out.push(
    "  \n\n  \t \n",
    " \n \n \n",
    "\n \n\t\n  \n   x",
    "end.   ",
    "   ",
    "\n",
    " ",
    "\t\t\t",
  );
  return out;
}

function digitRuns(): string[] {
  const out: string[] = [];
  let digits = "";
  for (let n = 1; n <= 120; n++) {
    digits += String((n * 7) % 10);
    if (n <= 12 || n % 7 === 0) out.push(digits, `x${digits}y`, ` ${digits} `);
  }
  out.push(
    "1,234,567.89",
    "1_000_000",
    "3.14159e-10",
    "+1 (555) 010-9999",
    "2026-11-26T18:53:16Z",
    "0xDEADBEEF",
    "v1.2.3-rc.4",
  );
  out.push(
    "٠١٢٣٤٥٦٧٨٩",
    "०१२३४५६७८९",
    "１２３４５",
    "١٢٣abc",
    "12abc34",
    "½¼¾",
    "Ⅰ Ⅱ Ⅲ",
    "①②③",
    "𝟙𝟚𝟛",
  );
  return out;
}

function longPieces(): string[] {
  return [
    "a".repeat(1000),
    "ab".repeat(300),
    "ー".repeat(200),
    "😀".repeat(80),
    "Supercalifragilisticexpialidocious".repeat(10),
    `https://example.com/${"path/".repeat(40)}?q=${"x".repeat(100)}&r=%E2%9C%93`,
    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODkrLw==".repeat(
      6,
    ),
    "ﷺ".repeat(50),
    "\u0301".repeat(60),
    "x\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308".repeat(20),
    "你".repeat(400),
    "ก".repeat(300),
    "".padEnd(500, "-=_+"),
  ];
}

/** Every added token alone, doubled, glued to letters/digits/spaces/newlines and to each other, and cut short. */
function addedTokenTexts(added: readonly string[]): string[] {
  const out: string[] = [];
  const glue = ["a", " ", "\n", "1", "😀", "你", ".", "  ", "x y"];
  const group: string[] = [];
  added.forEach((t, i) => {
    const g = glue[i % glue.length]!;
    const h = glue[(i + 4) % glue.length]!;
    group.push(
      `${t}`,
      `${g}${t}${h}`,
      `${t}${t}`,
      `word${t}word`,
      ` ${t} `,
      `\n${t}\n`,
      t.length > 1 ? t.slice(0, -1) : t,
      `${t}${added[(i + 1) % added.length]}`,
    );
    if (group.length >= 64) out.push(group.splice(0).join(""));
  });
  if (group.length > 0) out.push(group.join(""));
  // Each alone too (a whole text that is one added token), for the first few hundred.
  for (const t of added.slice(0, 300)) out.push(t);
  return out;
}

/** A random Unicode scalar value (never a surrogate), weighted toward the planes text uses. */
function randomScalar(rng: () => number): number {
  const r = rng();
  let c: number;
  if (r < 0.25)
    c = 0x20 + Math.floor(rng() * 0x5f); // ASCII
  else if (r < 0.35)
    c = 0x300 + Math.floor(rng() * 0x70); // combining marks
  else if (r < 0.75)
    c = Math.floor(rng() * 0x10000); // the BMP
  else if (r < 0.9)
    c = 0x10000 + Math.floor(rng() * 0x10000); // plane 1: emoji, historic scripts, math
  else if (r < 0.95)
    c = 0x20000 + Math.floor(rng() * 0x20000); // CJK extensions
  else c = 0xe0000 + Math.floor(rng() * 0x30000); // tags, variation selectors, private use
  return c >= 0xd800 && c <= 0xdfff ? c + 0x800 : c;
}

function randomUnicode(rng: () => number, count: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const n = 1 + Math.floor(rng() * 32);
    const cps: number[] = [];
    for (let k = 0; k < n; k++) cps.push(randomScalar(rng));
    out.push(String.fromCodePoint(...cps));
  }
  return out;
}

export interface CorpusInput {
  readonly text: string;
  /** Also compared with add_special_tokens true (what completions prompts use). */
  readonly withSpecialTokens: boolean;
}

/** The corpus for a tokenizer with these added tokens (their text), in a fixed order. */
export function differentialCorpus(added: readonly string[]): CorpusInput[] {
  const rng = mulberry32(0x5eed_2024);
  const fragments = [
    ...SCRIPTS,
    ...CODE,
    ...EMOJI,
    ...NFC_SENSITIVE,
    ...CONTRACTIONS,
    ...SPACE_CHARS,
    ...digitRuns(),
    ...added.slice(0, 64),
  ];
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rng() * xs.length)]!;
  const mixes: string[] = [];
  for (let i = 0; i < 160; i++) {
    const parts: string[] = [];
    const n = 1 + Math.floor(rng() * 12);
    for (let k = 0; k < n; k++) {
      const r = rng();
      parts.push(
        r < 0.6
          ? pick(fragments)
          : r < 0.8
            ? pick(SPACE_CHARS).repeat(1 + Math.floor(rng() * 4))
            : randomUnicode(rng, 1)[0]!,
      );
    }
    mixes.push(parts.join(rng() < 0.5 ? "" : " "));
  }
  const texts = [
    ...SCRIPTS,
    SCRIPTS.join("\n"),
    ...CODE,
    ...EMOJI,
    EMOJI.join(" "),
    ...NFC_SENSITIVE,
    CONTRACTIONS.join(" "),
    ...whitespaceRuns(),
    ...digitRuns(),
    ...longPieces(),
    ...addedTokenTexts(added),
    ...randomUnicode(rng, 160),
    ...mixes,
    "",
  ];
  return texts.map((text, i) => ({ text, withSpecialTokens: i % 4 === 0 }));
}
