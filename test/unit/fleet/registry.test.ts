import { describe, expect, test } from "bun:test";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";

describe("WorkerRegistry", () => {
  test("healthy targets list every rank of every healthy worker and follow changes", () => {
    const r = new WorkerRegistry();
    expect(r.add(1n, "http://a:1/", 2)).toBe(true);
    expect(r.add(1n, "http://other:1", 1)).toBe(false);
    r.add(2n, "http://b:2", 1);
    expect(r.get(1n)!.url).toBe("http://a:1");
    const first = r.healthyTargets();
    expect(first).toEqual([
      { workerId: 1n, dpRank: 0 },
      { workerId: 1n, dpRank: 1 },
      { workerId: 2n, dpRank: 0 },
    ]);
    expect(r.healthyTargets()).toBe(first); // cached
    expect(r.setHealthy(1n, false, "down")).toBe(true);
    expect(r.setHealthy(1n, false, "still down")).toBe(false);
    expect(r.healthyTargets()).toEqual([{ workerId: 2n, dpRank: 0 }]);
    expect([...r.healthyIds()]).toEqual([2n]);
    r.remove(2n);
    expect(r.healthyTargets()).toEqual([]);
    expect(r.size).toBe(1);
  });

  test("isRoutable checks registration, health and rank range", () => {
    const r = new WorkerRegistry();
    r.add(7n, "http://a:1", 2);
    expect(r.isRoutable(7n, 1)).toBe(true);
    expect(r.isRoutable(7n, 2)).toBe(false);
    expect(r.isRoutable(8n, 0)).toBe(false);
    r.setHealthy(7n, false);
    expect(r.isRoutable(7n, 0)).toBe(false);
  });
});
