import { describe, expect, test } from "bun:test";
import { endpoint } from "../../../../../src/router/choose/endpoints.ts";
import { healthy } from "../../../../../src/router/choose/filters/healthy.ts";
import { candidate, context } from "../helpers.ts";

describe("healthy filter", () => {
  test("drops fenced endpoints; absent health means healthy", () => {
    const cs = [
      candidate(1, { endpoint: endpoint(1, 0, { healthy: false }) }),
      candidate(2),
      candidate(3, { endpoint: endpoint(3, 0, { healthy: true }) }),
    ];
    expect(healthy.filter(context(), cs).map((c) => c.key)).toEqual(["2:0", "3:0"]);
  });

  test("returns the same array when all are healthy", () => {
    const cs = [candidate(1), candidate(2)];
    expect(healthy.filter(context(), cs)).toBe(cs);
  });
});
