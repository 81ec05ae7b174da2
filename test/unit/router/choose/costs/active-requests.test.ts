import { describe, expect, test } from "bun:test";
import { activeRequestsCost } from "../../../../../src/router/choose/costs/active-requests.ts";
import { candidate, context } from "../helpers.ts";

describe("active-requests cost (queue depth)", () => {
  test("is the number of requests running on the worker", () => {
    expect(
      activeRequestsCost.cost(
        context(),
        candidate(1, { activeRequests: 4, activeDecodeBlocks: 50 }),
      ),
    ).toBe(4);
  });
});
