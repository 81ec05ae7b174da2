import { describe, expect, test } from "bun:test";
import { OutlierDetector, type OutlierConfig } from "../../../src/fleet/outlier-detector.ts";

const CONFIG: OutlierConfig = {
  consecutiveFailures: 3,
  failurePercent: 50,
  requestVolume: 10,
  intervalMs: 1_000,
  baseEjectionMs: 10_000,
  maxEjectionMs: 35_000,
  maxEjectionPercent: 50,
};

const A = 1n;
const B = 2n;
const C = 3n;

function detector(config: Partial<OutlierConfig> = {}, population = 4) {
  return new OutlierDetector({ ...CONFIG, ...config }, () => population);
}

/** `n` failures of `id` at time `t`; the last result. */
function fail(od: OutlierDetector, id: bigint, t: number, n = 1) {
  let last;
  for (let i = 0; i < n; i++) last = od.failure(id, t, "HTTP 500");
  return last;
}

describe("OutlierDetector", () => {
  test("the Nth failure in a row ejects for the base time; a success in between resets the count", () => {
    const od = detector();
    expect(fail(od, A, 0, 2)).toBeUndefined();
    od.success(A, 1);
    expect(fail(od, A, 2, 2)).toBeUndefined();
    const e = fail(od, A, 3);
    expect(e).toMatchObject({ workerId: A, untilMs: 10_003, multiplier: 1 });
    expect(e!.reason).toContain("3 failures in a row");
    expect(od.isEjected(A, 10_002)).toBe(true);
    expect(od.isEjected(A, 10_003)).toBe(false);
  });

  test("ejections in a row last base x k, capped at the maximum; readmission resets the counters", () => {
    const od = detector();
    const durations: number[] = [];
    let t = 0;
    for (let k = 0; k < 5; k++) {
      const e = fail(od, A, t, 3)!;
      durations.push(e.untilMs - t);
      t = e.untilMs;
      od.readmitted(A, t); // failing again at once: no interval in service, no decay
    }
    expect(durations).toEqual([10_000, 20_000, 30_000, 35_000, 35_000]);
    expect(fail(od, A, t, 2)).toBeUndefined(); // counters started afresh at readmission
  });

  test("the multiplier steps down once per interval spent in service (Envoy's ejectTimeBackoff)", () => {
    const od = detector();
    let e = fail(od, A, 0, 3)!;
    od.readmitted(A, e.untilMs);
    e = fail(od, A, e.untilMs, 3)!;
    expect(e.multiplier).toBe(2);
    const back = e.untilMs;
    od.readmitted(A, back);
    // Two intervals in service: 2 -> 0, then this ejection makes it 1 again.
    e = fail(od, A, back + 2_000, 3)!;
    expect(e.multiplier).toBe(1);
    expect(e.untilMs - (back + 2_000)).toBe(10_000);
  });

  test("a failure share at or above the threshold, over enough answers in one interval, ejects", () => {
    const od = detector({ consecutiveFailures: 0 });
    for (let i = 0; i < 5; i++) od.success(A, i);
    let e;
    for (let i = 0; i < 4; i++) e = od.failure(A, 10 + i, "stream cut");
    expect(e).toBeUndefined(); // 4 of 9: below volume
    e = od.failure(A, 20, "stream cut");
    expect(e?.reason).toContain("5 of its last 10 answers failed");
  });

  test("the failure share is counted per interval: old answers do not count", () => {
    const od = detector({ consecutiveFailures: 0 });
    for (let i = 0; i < 9; i++) od.failure(A, 0, "x");
    od.success(A, 500);
    // A new interval starts: the 9 failures above are gone.
    expect(od.failure(A, 1_500, "x")).toBeUndefined();
  });

  test("at most maxEjectionPercent of the workers are ejected at once, but one always may be (never the only one)", () => {
    const two = detector({}, 2);
    expect(fail(two, A, 0, 3)).toBeDefined();
    expect(fail(two, B, 0, 3)).toBeUndefined(); // 2 of 2 = 100% > 50%: B stays in service
    expect(two.isEjected(B, 1)).toBe(false);

    const one = detector({}, 1);
    expect(fail(one, A, 0, 10)).toBeUndefined(); // the only worker: never ejected

    const four = detector({}, 4);
    expect(fail(four, A, 0, 3)).toBeDefined();
    expect(fail(four, B, 0, 3)).toBeDefined(); // 2 of 4 = 50%
    expect(fail(four, C, 0, 3)).toBeUndefined(); // 3 of 4 = 75%
  });

  test("readmitted only acts on an ejected worker; forget drops it", () => {
    const od = detector();
    od.readmitted(A, 0);
    expect(od.ejectedUntil(A)).toBeUndefined();
    fail(od, A, 0, 3);
    expect(od.ejectedUntil(A)).toBe(10_000);
    od.forget(A);
    expect(od.ejectedUntil(A)).toBeUndefined();
    expect(od.isEjected(A, 1)).toBe(false);
  });
});
