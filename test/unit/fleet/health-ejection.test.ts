/**
 * HealthChecker with an outlier detector: answers reported by the proxy eject a worker that
 * keeps failing, a passing /health cannot bring it back before its ejection time, and the
 * first good check after that time does.
 */
import { describe, expect, test } from "bun:test";
import type { Ejection } from "../../../src/fleet/outlier-detector.ts";
import { OutlierDetector } from "../../../src/fleet/outlier-detector.ts";
import { HealthChecker } from "../../../src/fleet/health.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";

function setup() {
  const registry = new WorkerRegistry();
  registry.add(1n, "http://a:1", 1);
  registry.add(2n, "http://b:2", 1);
  let t = 0;
  const outliers = new OutlierDetector(
    {
      consecutiveFailures: 2,
      failurePercent: 0,
      requestVolume: 1,
      intervalMs: 1_000,
      baseEjectionMs: 5_000,
      maxEjectionMs: 60_000,
      maxEjectionPercent: 50,
    },
    () => registry.size,
  );
  const ejections: Ejection[] = [];
  const health = new HealthChecker({
    registry,
    intervalMs: 1e9,
    timeoutMs: 1000,
    fetch: async () => new Response("ok"), // /health always passes: a hung engine does too
    outliers,
    now: () => t,
    onEject: (e) => ejections.push(e),
  });
  return { registry, health, ejections, at: (ms: number) => (t = ms) };
}

describe("HealthChecker with outlier ejection", () => {
  test("failures reported in a row eject the worker even though /health passes; it returns after its time", async () => {
    const { registry, health, ejections, at } = setup();
    health.report(1n, "HTTP 500");
    expect(registry.get(1n)!.healthy).toBe(true);
    health.report(1n, "stream cut mid-answer");
    expect(registry.get(1n)!.healthy).toBe(false);
    expect(registry.get(1n)!.reason).toMatch(
      /^ejected for 5 s: 2 failures in a row \(last: stream cut mid-answer\)/,
    );
    expect(ejections.map((e) => [e.workerId, e.untilMs])).toEqual([[1n, 5_000]]);

    at(4_999);
    expect(await health.check(1n)).toBe(false);
    expect(registry.get(1n)!.healthy).toBe(false);

    at(5_000);
    expect(await health.check(1n)).toBe(true);
    expect(registry.get(1n)!.healthy).toBe(true);
  });

  test("successes reset the count; the other worker is untouched", async () => {
    const { registry, health, ejections } = setup();
    health.report(1n, "HTTP 500");
    health.report(1n, undefined);
    health.report(1n, "HTTP 500");
    expect(registry.get(1n)!.healthy).toBe(true);
    expect(registry.get(2n)!.healthy).toBe(true);
    expect(ejections).toEqual([]);
  });

  test("a second ejection after the return lasts twice as long", async () => {
    const { registry, health, ejections, at } = setup();
    health.report(1n, "x");
    health.report(1n, "x");
    at(5_000);
    await health.check(1n);
    health.report(1n, "x");
    health.report(1n, "x");
    expect(ejections.map((e) => e.untilMs)).toEqual([5_000, 15_000]);
    at(14_000);
    await health.check(1n);
    expect(registry.get(1n)!.healthy).toBe(false);
  });
});
