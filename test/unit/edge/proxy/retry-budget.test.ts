/**
 * The retry budget: retries of engine answers stay within a share of the recent requests
 * plus a floor per second, and the window forgets old traffic.
 */
import { describe, expect, test } from "bun:test";
import { RetryBudget } from "../../../../src/edge/proxy/retry-budget.ts";

function budget(percent: number, minPerSecond: number) {
  let t = 0;
  const b = new RetryBudget({ percent, minPerSecond, windowMs: 10_000, now: () => t });
  return { b, at: (ms: number) => (t = ms) };
}

/** Retries granted out of `tries`. */
function take(b: RetryBudget, tries: number): number {
  let n = 0;
  for (let i = 0; i < tries; i++) if (b.tryRetry()) n++;
  return n;
}

describe("retry budget", () => {
  test("no floor: 20 % of the requests in the window, not one more", () => {
    const { b } = budget(20, 0);
    for (let i = 0; i < 100; i++) b.request();
    expect(take(b, 1_000)).toBe(20);
  });

  test("the floor alone: minPerSecond x window seconds with no traffic", () => {
    const { b } = budget(20, 1);
    expect(take(b, 1_000)).toBe(10);
  });

  test("floor and share add up", () => {
    const { b } = budget(50, 1);
    for (let i = 0; i < 40; i++) b.request();
    expect(take(b, 1_000)).toBe(10 + 20);
  });

  test("old traffic and old retries leave the window", () => {
    const { b, at } = budget(10, 0);
    for (let i = 0; i < 100; i++) b.request();
    expect(take(b, 100)).toBe(10);
    at(5_000);
    expect(take(b, 100)).toBe(0); // still inside the window
    at(10_500);
    expect(take(b, 100)).toBe(0); // the requests left with the retries
    for (let i = 0; i < 30; i++) b.request();
    expect(take(b, 100)).toBe(3);
  });

  test("0 % and no floor: never a retry", () => {
    const { b } = budget(0, 0);
    for (let i = 0; i < 100; i++) b.request();
    expect(b.tryRetry()).toBe(false);
  });
});
