import { describe, expect, test } from "bun:test";
import { loadGuard } from "../../../../../src/router/choose/filters/load-guard.ts";
import { candidate, context } from "../helpers.ts";

const keys = (cs: readonly { key: string }[]) => cs.map((c) => c.key);

describe("load-guard filter", () => {
  test("keeps only candidates that stay within factor × mean requests after placement", () => {
    // active 2, 2, 2, 6: placing on the last gives 7 > 1.25 × 13/4; the others stay within.
    const cs = [2, 2, 2, 6].map((r, i) => candidate(i + 1, { activeRequests: r }));
    expect(keys(loadGuard(1.25).filter(context(), cs))).toEqual(["1:0", "2:0", "3:0"]);
  });

  test("in blocks it uses the candidate's potential load for 'after'", () => {
    // active blocks 10, 10, 10, 30 (bs 16); the request would add 8 blocks anywhere.
    const c = (id: number, active: number) =>
      candidate(id, {
        activeDecodeBlocks: active,
        activePrefillTokens: 0,
        decodeBlocks: active + 4,
        prefillTokens: 64,
      });
    const cs = [c(1, 10), c(2, 10), c(3, 10), c(4, 30)];
    expect(keys(loadGuard(1.25, "blocks").filter(context({ blockSize: 16 }), cs))).toEqual([
      "1:0",
      "2:0",
      "3:0",
    ]);
  });

  test("when nobody stays within the bound the least loaded are kept; all idle passes untouched", () => {
    const idle = [candidate(1), candidate(2)];
    expect(loadGuard(1.25).filter(context(), idle)).toBe(idle);
    const few = [candidate(1, { activeRequests: 1 }), candidate(2), candidate(3)];
    expect(keys(loadGuard(1.25).filter(context(), few))).toEqual(["2:0", "3:0"]);
  });

  test("balanced sets pass untouched", () => {
    const cs = [5, 5, 5, 5].map((r, i) => candidate(i + 1, { activeRequests: r }));
    expect(loadGuard(1.25).filter(context(), cs)).toBe(cs);
  });

  test("a factor below 1 is refused", () => {
    expect(() => loadGuard(0.9)).toThrow();
  });
});
