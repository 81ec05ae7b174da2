/**
 * The streaming prompt counter agrees with the parsed-value count (prompt-size.ts) on every
 * body shape, however the bytes are split into chunks: at the exact size it lets the body
 * through, one character less and it names the field.
 */
import { describe, expect, test } from "bun:test";
import { PromptScanner } from "../../../../src/edge/prompt-route/prompt-scan.ts";
import { checkPromptSize } from "../../../../src/edge/prompt-route/prompt-size.ts";

/** What prompt-size.ts counts: string values' UTF-16 length, numbers one, keys nothing. */
function size(v: unknown): number {
  if (typeof v === "string") return v.length;
  if (typeof v === "number") return 1;
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + size(x), 0);
  if (v !== null && typeof v === "object")
    return Object.values(v).reduce((n: number, x) => n + size(x), 0);
  return 0;
}

/** A fixed-seed generator (mulberry32) for chunk splits. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function splits(bytes: Uint8Array, seed: number): Uint8Array[][] {
  const r = rng(seed);
  const random: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; ) {
    const n = 1 + Math.floor(r() * 7);
    random.push(bytes.subarray(i, i + n));
    i += n;
  }
  return [[bytes], Array.from(bytes, (_, i) => bytes.subarray(i, i + 1)), random];
}

function scan(
  chunks: readonly Uint8Array[],
  fields: readonly string[],
  limit: number,
): string | undefined {
  const s = new PromptScanner(fields, limit);
  for (const c of chunks) {
    const over = s.push(c);
    if (over !== undefined) return over;
  }
  return undefined;
}

const BODIES: { text: string; fields: string[] }[] = [
  {
    text: JSON.stringify({ model: "m", prompt: "hello world", max_tokens: 3 }),
    fields: ["prompt"],
  },
  { text: JSON.stringify({ prompt: [1, 2, 300, -4, 5.5e3], model: "m" }), fields: ["prompt"] },
  { text: JSON.stringify({ prompt: ["ab", "cdé", "😀x"], n: 2 }), fields: ["prompt"] },
  {
    text: `{ "model" : "m" , "prompt" : "a\\"b\\\\c\\n\\u00e9\\ud83d\\ude00" }`,
    fields: ["prompt"],
  },
  {
    text: JSON.stringify({
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "abc" },
            { type: "image_url", image_url: { url: "data:x" } },
          ],
        },
        { role: "assistant", content: "ok", name: "n" },
      ],
      tools: [{ a: "b" }],
    }),
    fields: ["messages"],
  },
  {
    text: JSON.stringify({ input: "x".repeat(40), instructions: "yy" }),
    fields: ["input", "instructions"],
  },
  {
    text: JSON.stringify({
      other: { prompt: "not the field" },
      prompt: "top",
      list: ["prompt", "p"],
    }),
    fields: ["prompt"],
  },
  { text: `{"\\u0070rompt": "escaped key", "x": [true, false, null, 12]}`, fields: ["prompt"] },
  {
    text: JSON.stringify({ prompt: [[1, 2], [3]], stop: ["\n"], temperature: 0.7 }),
    fields: ["prompt"],
  },
  { text: JSON.stringify({ text: null, prompt: {}, x: 1 }), fields: ["text", "prompt"] },
];

describe("streaming prompt count", () => {
  for (const [i, { text, fields }] of BODIES.entries()) {
    test(`body ${i}: the same count as the parsed value, for any chunking`, () => {
      const json = JSON.parse(text) as Record<string, unknown>;
      const bytes = new TextEncoder().encode(text);
      for (const f of fields) {
        const n = size(json[f]);
        // The parsed-value check agrees with the reference count.
        expect(() => checkPromptSize(json[f], f, n)).not.toThrow();
        for (const chunks of splits(bytes, i + 1)) {
          // Each field on its own, so the other field cannot answer first.
          expect(scan(chunks, [f], n)).toBeUndefined();
          if (n > 0) expect(scan(chunks, [f], n - 1)).toBe(f);
        }
      }
    });
  }

  test("a huge prompt is named after a limit's worth of bytes, not at the body's end", () => {
    const s = new PromptScanner(["prompt"], 1000);
    expect(
      s.push(new TextEncoder().encode(`{"model":"m","prompt":"${"x".repeat(1000)}`)),
    ).toBeUndefined();
    expect(s.push(new TextEncoder().encode("x"))).toBe("prompt");
  });

  test("non-JSON bytes and a top-level array count nothing", () => {
    expect(scan([new Uint8Array(10_000).fill(0x78)], ["prompt"], 0)).toBeUndefined();
    expect(scan([new TextEncoder().encode(`[{"prompt":"abc"}]`)], ["prompt"], 0)).toBeUndefined();
  });
});
