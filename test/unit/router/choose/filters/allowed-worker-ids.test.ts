import { describe, expect, test } from "bun:test";
import { allowedWorkerIds } from "../../../../../src/router/choose/filters/allowed-worker-ids.ts";
import { candidate, context, request } from "../helpers.ts";

describe("allowed-worker-ids filter", () => {
  const cs = [candidate(1), candidate(2), candidate(3)];

  test("without an allowed set every candidate stays (same array)", () => {
    expect(allowedWorkerIds.filter(context(), cs)).toBe(cs);
  });

  test("only allowed worker ids survive; an id outside the candidates never widens the set", () => {
    const ctx = context({ request: request({ allowedWorkerIds: new Set([2n, 9n]) }) });
    expect(allowedWorkerIds.filter(ctx, cs).map((c) => c.key)).toEqual(["2:0"]);
  });
});
