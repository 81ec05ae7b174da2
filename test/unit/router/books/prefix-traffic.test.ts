/** Each prefix group's arrival rate, the typical group's, and Little's law. */
import { describe, expect, test } from "bun:test";
import type { WorkerKey } from "../../../../src/core/ids.ts";
import {
  MAX_PREFIXES,
  PENDING_GAPS,
  PrefixTraffic,
} from "../../../../src/router/books/prefix-traffic.ts";

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

describe("PrefixTraffic: the group traffic each rank draws", () => {
  const r = (n: number) => `${n}:0` as WorkerKey;
  /**
   * Groups as [key, rank, ms between siblings], started together at 0 and run to `until` in time
   * order, as a router books them: the first request of each a new prefix, named by its first
   * sibling on the rank that holds it.
   */
  function run(t: PrefixTraffic, groups: [bigint, WorkerKey, number][], until: number) {
    const events: [number, bigint, WorkerKey][] = [];
    for (const [key, rank, every] of groups)
      for (let ms = every; ms <= until; ms += every) events.push([ms, key, rank]);
    events.sort((a, b) => a[0] - b[0]);
    for (const [, rank] of groups) t.startedPrefix(rank, 0);
    for (const [ms, key, rank] of events)
      t.arrive(key, ms, rank, t.knows(key) ? undefined : [rank]);
  }

  test("a rank reads the sum of its groups' rates; a group with two homes counts half on each", () => {
    const t = new PrefixTraffic();
    run(
      t,
      [
        [1n, r(1), 100],
        [2n, r(1), 100],
        [3n, r(2), 100],
      ],
      2000,
    );
    expect(t.hostedPerMs(r(1), 2000)).toBeCloseTo(2 / 100, 3);
    expect(t.hostedPerMs(r(2), 2000)).toBeCloseTo(1 / 100, 3);
    // A sibling of group 3 is computed on rank 3 too: the group's rate is shared by its homes.
    t.arrive(3n, 2000, r(3));
    expect(t.hostedPerMs(r(2), 2000)).toBeCloseTo(1 / 200, 3);
    expect(t.hostedPerMs(r(3), 2000)).toBeCloseTo(1 / 200, 3);
    expect(t.hostedPerMs(r(4), 2000)).toBe(0);
  });

  test("a group whose siblings arrive fast weighs more than one whose siblings come slowly, once its rate shows", () => {
    const t = new PrefixTraffic();
    // Rank 1: one group every 20 ms; rank 2: one every 400 ms; rank 3: three typical ones, every 100 ms.
    run(
      t,
      [
        [1n, r(1), 20],
        [2n, r(2), 400],
        [3n, r(3), 100],
        [4n, r(3), 100],
        [5n, r(3), 100],
      ],
      4000,
    );
    const fast = t.hostedPerMs(r(1), 4000);
    const slow = t.hostedPerMs(r(2), 4000);
    expect(fast).toBeGreaterThan(0.04);
    expect(slow).toBeLessThan(0.01);
    expect(fast / slow).toBeGreaterThan(5);
  });

  test("a new prefix counts at the typical group's rate where it was booked until a sibling names it, and not after PENDING_GAPS typical gaps without one", () => {
    const t = new PrefixTraffic();
    run(
      t,
      [
        [1n, r(1), 100],
        [2n, r(1), 100],
      ],
      2000,
    ); // typical: about 1/100 per ms
    t.startedPrefix(r(2), 2000);
    const one = t.hostedPerMs(r(2), 2000);
    expect(one).toBeCloseTo(1 / 100, 2);
    // Named by its first sibling (rank 2 held it): now a group homed there, counted once.
    t.arrive(77n, 2050, r(2), [r(2)]);
    expect(t.hostedPerMs(r(2), 2050)).toBeCloseTo(one, 2);
    // Another new prefix on rank 3 that no sibling follows: gone after PENDING_GAPS typical gaps.
    t.startedPrefix(r(3), 2000);
    const gap = 1 / one;
    expect(t.hostedPerMs(r(3), 2000 + (PENDING_GAPS - 1) * gap)).toBeGreaterThan(0);
    expect(t.hostedPerMs(r(3), 2000 + (PENDING_GAPS + 1) * gap)).toBe(0);
  });

  test("a burst of new prefixes before any group has a gap: each counts at the decisions' rate ÷ the prefixes", () => {
    const t = new PrefixTraffic();
    expect(t.hostedPerMs(r(1), 0)).toBe(0);
    // 16 new prefixes, one every 2 ms on ranks 1..8 (two each): 15 gaps over 30 ms, 16 prefixes.
    for (let i = 0; i < 16; i++) t.startedPrefix(r((i % 8) + 1), 2 * i);
    const each = 15 / 30 / 16;
    expect(t.hostedPerMs(r(1), 30)).toBeCloseTo(2 * each, 6);
    // One more on rank 1: it reads busier than rank 2 (the share is read again after 16 decisions).
    for (let i = 0; i < 16; i++) t.startedPrefix(r(1 + (i % 8)), 32 + 2 * i);
    t.startedPrefix(r(1), 64);
    expect(t.hostedPerMs(r(1), 64)).toBeGreaterThan(t.hostedPerMs(r(2), 64));
  });

  test("forgetRank: a worker that left is no group's home and has nothing pending", () => {
    const t = new PrefixTraffic();
    run(
      t,
      [
        [1n, r(1), 100],
        [2n, r(3), 100],
      ],
      2000,
    );
    t.arrive(1n, 2000, r(2));
    t.forgetRank(r(1));
    expect(t.hostedPerMs(r(1), 2000)).toBe(0);
    expect(t.hostedPerMs(r(2), 2000)).toBeCloseTo(1 / 100, 3);
  });
});
