import { describe, expect, test } from "bun:test";
import { hitsBeyond } from "../../../../src/router/choose/shared-cache.ts";

describe("shared cache hits (§1.9)", () => {
  test("hitsBeyond counts covered positions at or after p", () => {
    const hits = { ranges: [[0, 4], [6, 9]] as [number, number][] };
    expect(hitsBeyond(hits, 0)).toBe(7);
    expect(hitsBeyond(hits, 2)).toBe(5);
    expect(hitsBeyond(hits, 5)).toBe(3);
    expect(hitsBeyond(hits, 7)).toBe(2);
    expect(hitsBeyond(hits, 9)).toBe(0);
    expect(hitsBeyond({ ranges: [] }, 0)).toBe(0);
  });
});
