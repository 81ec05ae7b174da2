/** Each prefix group's arrival rate, the typical group's, and Little's law. */
import { describe, expect, test } from "bun:test";
import { MAX_PREFIXES, PrefixTraffic } from "../../../../src/router/books/prefix-traffic.ts";

describe("PrefixTraffic", () => {
  test("a group arriving every 50 ms reads 1/50 per ms; one arriving every 2 s reads 1/2000", () => {
    const t = new PrefixTraffic();
    for (let i = 0; i < 10; i++) t.arrive(1n, i * 50);
    for (let i = 0; i < 10; i++) t.arrive(2n, i * 2000);
    expect(t.ratePerMs(1n, 450)).toBeCloseTo(1 / 50, 9);
    expect(t.ratePerMs(2n, 18_000)).toBeCloseTo(1 / 2000, 9);
  });

  test("a group gone quiet decays: the gap since its last arrival counts once it is longer", () => {
    const t = new PrefixTraffic();
    for (let i = 0; i < 10; i++) t.arrive(1n, i * 50);
    expect(t.ratePerMs(1n, 450 + 1000)).toBeCloseTo(1 / 1000, 9);
  });

  test("a prefix never seen (a new group) is priced at the typical group's rate; none known: 0", () => {
    const t = new PrefixTraffic();
    expect(t.ratePerMs(undefined, 0)).toBe(0);
    expect(t.ratePerMs(99n, 0)).toBe(0);
    // Three groups at 1/100, 1/200 and 1/400 per ms: the typical one is the median.
    const arrivals: [bigint, number][] = [];
    for (let ms = 0; ms <= 3200; ms += 100) {
      arrivals.push([1n, ms]);
      if (ms % 200 === 0) arrivals.push([2n, ms]);
      if (ms % 400 === 0) arrivals.push([3n, ms]);
    }
    for (const [key, ms] of arrivals) t.arrive(key, ms);
    expect(arrivals.length).toBe(33 + 17 + 9);
    // The last recount came at the 48th arrival (ms 2600): every group was arriving then.
    expect(t.ratePerMs(undefined, 3200)).toBeCloseTo(1 / 200, 9);
    expect(t.ratePerMs(42n, 3200)).toBeCloseTo(1 / 200, 9);
  });

  test("Little's law: rate × a request's time on its engine", () => {
    const t = new PrefixTraffic();
    for (let i = 0; i < 10; i++) t.arrive(1n, i * 50);
    t.finished(2000);
    expect(t.runningOf(1n, 450)).toBeCloseTo(40, 6);
  });

  test("bounded: at most MAX_PREFIXES groups, the least recently seen out first", () => {
    const t = new PrefixTraffic();
    for (let i = 0; i <= MAX_PREFIXES; i++) t.arrive(BigInt(i + 1), i);
    expect(t.size).toBe(MAX_PREFIXES);
  });
});
