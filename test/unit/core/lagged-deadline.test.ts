/**
 * Whether a deadline that fired was the engine's miss, given how long the router's own event loop
 * was held during the wait (judgeDeadline: pure).
 */
import { describe, expect, test } from "bun:test";
import { judgeDeadline, LAG_STRETCH_LIMIT } from "../../../src/core/lagged-deadline.ts";

describe("judgeDeadline", () => {
  test("no lag: a deadline that fired is missed", () => {
    expect(judgeDeadline(5000, 5000, 0)).toEqual({ kind: "missed" });
    expect(judgeDeadline(5000, 5003, 0)).toEqual({ kind: "missed" });
  });

  test("a lag that still leaves the whole deadline watched: missed", () => {
    expect(judgeDeadline(5000, 7000, 2000)).toEqual({ kind: "missed" });
  });

  test("the loop held for part of the wait: wait the unwatched part more", () => {
    // 5 s on the clock, 4.2 s of it held: 0.8 s watched, 4.2 s to go.
    expect(judgeDeadline(5000, 5000, 4200)).toEqual({ kind: "wait", ms: 4200 });
    // A timer that fires a hair early on the watched clock waits at least 1 ms.
    expect(judgeDeadline(5000, 5000, 0.2)).toEqual({ kind: "wait", ms: 1 });
  });

  test("stretched to the limit and still short of a whole deadline watched: excused, with the lag", () => {
    expect(LAG_STRETCH_LIMIT).toBe(3);
    // 12 s on the clock, 11 s held: 1 s watched; 4 s more would pass 15 s.
    expect(judgeDeadline(5000, 12_000, 11_000)).toEqual({ kind: "excused", lagMs: 11_000 });
    // Right up to the limit it still waits: 11 s + 4 s = 15 s.
    expect(judgeDeadline(5000, 11_000, 10_000)).toEqual({ kind: "wait", ms: 4000 });
  });

  test("a lag reported larger than the wait (the meter's tick granularity) counts as all held, never as negative time", () => {
    expect(judgeDeadline(200, 700, 750)).toEqual({ kind: "excused", lagMs: 750 });
    expect(judgeDeadline(200, 250, -5)).toEqual({ kind: "missed" });
  });
});
