import { describe, expect, test } from "bun:test";
import { SegmentCache, segmentPlan } from "../../../src/tokens/segment-cache.ts";

const tok = (content: string, id: number, extra: Record<string, unknown> = {}) => ({
  id,
  content,
  special: true,
  normalized: false,
  ...extra,
});

describe("segmentPlan", () => {
  test("splits at added tokens, longest match first", () => {
    const plan = segmentPlan({ added_tokens: [tok("<a>", 1), tok("<a><b>", 2)] });
    if (typeof plan === "string") throw new Error(plan);
    expect("x<a><b>y<a>z".split(plan.pattern)).toEqual(["x", "<a><b>", "y", "<a>", "z"]);
    expect(plan.idOf.get("<a><b>")).toBe(2);
  });
  test("refuses tokenizers where pieces are not independent", () => {
    expect(segmentPlan({ added_tokens: [tok("<a>", 1, { lstrip: true })] })).toContain(
      "strips whitespace",
    );
    expect(
      segmentPlan({
        added_tokens: [tok("<a>", 1)],
        pre_tokenizer: { type: "Metaspace", prepend_scheme: "first" },
      }),
    ).toContain("Metaspace");
    expect(segmentPlan({ added_tokens: [tok("<a>", 1, { normalized: true })] })).toContain(
      "no added tokens",
    );
  });
});

describe("SegmentCache", () => {
  const ids = (n: number) => new Uint32Array(n);
  test("evicts least recently used pieces to stay within the bound of ids", () => {
    const c = new SegmentCache(10);
    c.set("a", ids(4));
    c.set("b", ids(4));
    expect(c.get("a")).toBeDefined(); // a is now the most recent
    c.set("c", ids(4));
    expect(c.get("b")).toBeUndefined();
    expect(c.get("a")).toBeDefined();
    expect(c.heldTokens).toBe(8);
  });
  test("a piece larger than the whole bound is not cached; keys count against a character bound", () => {
    const c = new SegmentCache(10, 5);
    c.set("x", ids(11));
    expect(c.size).toBe(0);
    c.set("abc", ids(1));
    c.set("defg", ids(1));
    expect(c.heldChars).toBeLessThanOrEqual(5);
    expect(c.get("abc")).toBeUndefined();
  });
  test("re-setting a piece replaces it without counting twice", () => {
    const c = new SegmentCache(10);
    c.set("a", ids(3));
    c.set("a", ids(5));
    expect(c.heldTokens).toBe(5);
    expect(c.size).toBe(1);
  });
});
