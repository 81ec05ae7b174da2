import { describe, expect, test } from "bun:test";
import { roundRobinPicker } from "../../../../../src/router/choose/pickers/round-robin.ts";
import { candidate, context } from "../helpers.ts";

describe("round-robin picker", () => {
  test("cycles through the candidates in order, ignoring costs", () => {
    const p = roundRobinPicker();
    const cs = [candidate(1, { cost: 100 }), candidate(2, { cost: 0 }), candidate(3, { cost: 50 })];
    expect(Array.from({ length: 7 }, () => p.pick(context(), cs).key)).toEqual([
      "1:0",
      "2:0",
      "3:0",
      "1:0",
      "2:0",
      "3:0",
      "1:0",
    ]);
  });

  test("each picker has its own counter", () => {
    const cs = [candidate(1), candidate(2)];
    roundRobinPicker().pick(context(), cs);
    expect(roundRobinPicker().pick(context(), cs).key).toBe("1:0");
  });
});
