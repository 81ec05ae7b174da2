/** The health checker's hold, which discovery uses for a pod that is terminating or not ready. */
import { describe, expect, test } from "bun:test";
import { HealthChecker } from "../../../../src/fleet/health.ts";
import { WorkerRegistry } from "../../../../src/fleet/registry.ts";

function setup() {
  const registry = new WorkerRegistry();
  registry.add(1n, "http://a:1", 2);
  registry.add(2n, "http://b:2", 1);
  let checks = 0;
  const health = new HealthChecker({
    registry,
    intervalMs: 1e9,
    timeoutMs: 1000,
    fetch: async () => {
      checks++;
      return new Response("ok");
    },
  });
  return { registry, health, checks: () => checks };
}

describe("HealthChecker holds", () => {
  test("a held worker is not routable, and a passing check does not lift the hold", async () => {
    const { registry, health } = setup();
    health.hold(1n, "draining: pod terminating");
    expect(registry.isRoutable(1n, 0)).toBe(false);
    expect(registry.get(1n)!.reason).toBe("draining: pod terminating");
    await health.checkAll();
    expect(registry.get(1n)!.healthy).toBe(false);
    expect(registry.get(1n)!.reason).toBe("draining: pod terminating");
    expect(registry.healthyTargets().map((t) => t.workerId)).toEqual([2n]);
  });

  test("release checks at once and the check makes it healthy", async () => {
    const { registry, health, checks } = setup();
    health.hold(1n, "draining: pod not ready");
    const before = checks();
    expect(await health.release(1n)).toBe(true);
    expect(checks()).toBe(before + 1);
    expect(registry.isRoutable(1n, 1)).toBe(true);
    expect(health.isHeld(1n)).toBe(false);
  });

  test("a check already running when the hold came cannot make the worker healthy", async () => {
    const registry = new WorkerRegistry();
    registry.add(1n, "http://a:1", 1);
    let answer!: () => void;
    const gate = new Promise<void>((r) => (answer = r));
    const health = new HealthChecker({
      registry,
      intervalMs: 1e9,
      timeoutMs: 1000,
      fetch: async () => (await gate, new Response("ok")),
    });
    const inflight = health.check(1n);
    health.hold(1n, "draining: pod terminating");
    answer();
    expect(await inflight).toBe(false);
    expect(registry.get(1n)!.reason).toBe("draining: pod terminating");
  });

  test("forget drops the hold with the worker", () => {
    const { health } = setup();
    health.hold(2n, "draining: pod terminating");
    health.forget(2n);
    expect(health.isHeld(2n)).toBe(false);
  });
});

describe("HealthChecker holds, with the models re-read after a good check", () => {
  test("a hold that comes while the models are re-read is not lifted by that check", async () => {
    const registry = new WorkerRegistry();
    registry.add(1n, "http://a:1", 1, false);
    let reread!: () => void;
    const gate = new Promise<void>((r) => (reread = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const health = new HealthChecker({
      registry,
      intervalMs: 1e9,
      timeoutMs: 1000,
      fetch: async () => new Response("ok"),
      afterHealthy: async () => {
        entered();
        await gate;
      },
    });
    const check = health.check(1n);
    await inside;
    health.hold(1n, "draining: pod terminating");
    reread();
    expect(await check).toBe(false);
    expect(registry.get(1n)!.healthy).toBe(false);
    expect(registry.get(1n)!.reason).toBe("draining: pod terminating");
  });
});
