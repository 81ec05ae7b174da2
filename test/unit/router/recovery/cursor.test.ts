import { describe, expect, test } from "bun:test";
import {
  INITIAL_CURSOR,
  advanceTo,
  applyBarrier,
  isEngineRestart,
  lastAppliedId,
  live,
  observe,
} from "../../../../src/router/recovery/cursor.ts";

describe("cursor observe (spec §5.1)", () => {
  test("an initial cursor reports every id as initial", () => {
    expect(observe(INITIAL_CURSOR, 7n)).toEqual({ kind: "initial", got: 7n });
    expect(lastAppliedId(INITIAL_CURSOR)).toBeUndefined();
  });

  test("a live cursor sees the next id as contiguous, later ones as a gap, older ones as stale", () => {
    const c = live(10n);
    expect(observe(c, 11n)).toEqual({ kind: "contiguous", got: 11n });
    expect(observe(c, 14n)).toEqual({ kind: "gap", expected: 11n, got: 14n });
    expect(observe(c, 10n)).toEqual({ kind: "stale", got: 10n, lastApplied: 10n });
    expect(observe(c, 3n)).toEqual({ kind: "stale", got: 3n, lastApplied: 10n });
  });

  test("advance_to and apply_barrier make the cursor live at the id; functions do not mutate", () => {
    const c = live(3n);
    expect(advanceTo(c, 4n)).toEqual(live(4n));
    expect(applyBarrier(c, 9n)).toEqual(live(9n));
    expect(applyBarrier(INITIAL_CURSOR, 0n)).toEqual(live(0n));
    expect(c).toEqual(live(3n));
  });
});

describe("engine restart rule", () => {
  test("ids within the margin below the last applied one are duplicates", () => {
    expect(isEngineRestart(95n, 100n, 10n)).toBe(false);
    expect(isEngineRestart(90n, 100n, 10n)).toBe(false);
    expect(isEngineRestart(100n, 100n, 10n)).toBe(false);
  });
  test("ids further below than the margin mean the engine restarted", () => {
    expect(isEngineRestart(89n, 100n, 10n)).toBe(true);
    expect(isEngineRestart(5n, 100n, 10n)).toBe(true);
  });
  test("id 0 after anything later was applied is a restart even inside the margin", () => {
    expect(isEngineRestart(0n, 3n, 10n)).toBe(true);
    expect(isEngineRestart(0n, 0n, 10n)).toBe(false);
    expect(isEngineRestart(1n, 3n, 10n)).toBe(false);
  });
  test("nothing is a restart of a cursor restored before any event", () => {
    expect(isEngineRestart(0n, -1n, 10n)).toBe(false);
  });
});
