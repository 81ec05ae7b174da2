import { describe, expect, test } from "bun:test";
import { HealthChecker } from "../../../src/fleet/health.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";

function setup(answer: (url: string) => Promise<Response>) {
  const registry = new WorkerRegistry();
  registry.add(1n, "http://a:1", 1);
  registry.add(2n, "http://b:2", 2);
  const changes: [bigint, boolean][] = [];
  const health = new HealthChecker({
    registry,
    intervalMs: 1e9,
    timeoutMs: 1000,
    fetch: (url) => answer(url),
    onChange: (id, h) => changes.push([id, h]),
  });
  return { registry, health, changes };
}

describe("HealthChecker", () => {
  test("a failing check makes a worker unhealthy and a passing one brings it back", async () => {
    let down = true;
    const { registry, health, changes } = setup(async (url) => {
      if (url.startsWith("http://a:1") && down) throw new Error("connection refused");
      return new Response("ok");
    });
    await health.checkAll();
    expect(registry.get(1n)!.healthy).toBe(false);
    expect(registry.get(1n)!.reason).toContain("connection refused");
    expect(registry.healthyTargets().map((t) => `${t.workerId}:${t.dpRank}`)).toEqual([
      "2:0",
      "2:1",
    ]);
    down = false;
    await health.checkAll();
    expect(registry.get(1n)!.healthy).toBe(true);
    expect(changes).toEqual([
      [1n, false],
      [1n, true],
    ]);
  });

  test("a non-2xx answer is a failure", async () => {
    const { registry, health } = setup(async () => new Response("no", { status: 503 }));
    await health.check(2n);
    expect(registry.get(2n)!.healthy).toBe(false);
    expect(registry.get(2n)!.reason).toContain("503");
  });

  test("a fence holds until the next good check", async () => {
    const { registry, health } = setup(async () => new Response("ok"));
    health.fence(1n, "ECONNRESET");
    expect(registry.get(1n)!.healthy).toBe(false);
    expect(registry.get(1n)!.reason).toBe("fenced: ECONNRESET");
    expect(registry.isRoutable(1n, 0)).toBe(false);
    await health.check(1n);
    expect(registry.get(1n)!.healthy).toBe(true);
  });

  test("a check that started before a fence cannot lift it", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { registry, health } = setup(async () => {
      await gate;
      return new Response("ok");
    });
    const inflight = health.check(1n);
    health.fence(1n, "reset mid-request");
    release();
    expect(await inflight).toBe(false);
    expect(registry.get(1n)!.healthy).toBe(false);
    await health.check(1n);
    expect(registry.get(1n)!.healthy).toBe(true);
  });

  test("checks of one worker are not duplicated while one is running", async () => {
    let calls = 0;
    const { health } = setup(async () => {
      calls++;
      await Bun.sleep(1);
      return new Response("ok");
    });
    await Promise.all([health.check(1n), health.check(1n), health.check(1n)]);
    expect(calls).toBe(1);
  });
});

describe("the fence cap (--max-fenced-percent)", () => {
  function fleet(n: number, maxFencedPercent: number | undefined) {
    const registry = new WorkerRegistry();
    for (let i = 1; i <= n; i++) registry.add(BigInt(i), `http://w${i}:1`, 1);
    const refused: [bigint, number, number][] = [];
    const health = new HealthChecker({
      registry,
      intervalMs: 1e9,
      timeoutMs: 1000,
      fetch: async () => new Response("ok"),
      maxFencedPercent,
      onFenceRefused: (id, _reason, out, all) => refused.push([id, out, all]),
    });
    const inRotation = () => registry.list().filter((w) => w.healthy).length;
    return { registry, health, refused, inRotation };
  }

  test("every engine failing one request (a starved router): at most half are fenced, the rest stay in rotation", () => {
    const { health, refused, inRotation, registry } = fleet(4, 50);
    for (let i = 1n; i <= 4n; i++) health.fence(i, "connect deadline of 5 s missed");
    expect(inRotation()).toBe(2);
    expect(refused).toEqual([
      [3n, 2, 4],
      [4n, 2, 4],
    ]);
    expect(registry.get(3n)!.healthy).toBe(true);
  });

  test("of two, one may be fenced, never both; the only worker is never fenced", () => {
    const two = fleet(2, 50);
    expect(two.health.fence(1n, "x")).toBe(true);
    expect(two.health.fence(2n, "x")).toBe(false);
    expect(two.inRotation()).toBe(1);
    const one = fleet(1, 50);
    expect(one.health.fence(1n, "x")).toBe(false);
    expect(one.inRotation()).toBe(1);
  });

  test("workers out for any reason count: a failed health check leaves no room for a fence of the last one", async () => {
    const { registry, health, inRotation } = fleet(2, 50);
    registry.setHealthy(1n, false, "health check failed");
    expect(health.fence(2n, "x")).toBe(false);
    expect(inRotation()).toBe(1);
    // A worker already out may be fenced (its next check must pass anew): nothing changes in rotation.
    expect(health.fence(1n, "x")).toBe(true);
    expect(registry.get(1n)!.reason).toBe("fenced: x");
  });

  test("health checks are not capped: an engine really down still leaves rotation", async () => {
    const registry = new WorkerRegistry();
    registry.add(1n, "http://a:1", 1);
    registry.add(2n, "http://b:2", 1);
    const health = new HealthChecker({
      registry,
      intervalMs: 1e9,
      timeoutMs: 1000,
      fetch: async () => {
        throw new Error("connection refused");
      },
      maxFencedPercent: 50,
    });
    await health.checkAll();
    expect(registry.list().filter((w) => w.healthy).length).toBe(0);
  });

  test("without the cap every fence is made", () => {
    const { health, inRotation } = fleet(3, undefined);
    for (let i = 1n; i <= 3n; i++) expect(health.fence(i, "x")).toBe(true);
    expect(inRotation()).toBe(0);
  });
});

describe("a health check the router's own stall timed out", () => {
  /** A /health that answers only when its signal aborts (a hung engine, or an answer the router cannot read). */
  const hung = (_url: string, init: RequestInit) =>
    new Promise<Response>((_, reject) =>
      init.signal!.addEventListener("abort", () => reject(init.signal!.reason), { once: true }),
    );

  function checker(lagHeld: boolean) {
    const registry = new WorkerRegistry();
    registry.add(1n, "http://a:1", 1);
    registry.add(2n, "http://b:2", 1);
    // A lag meter that says the loop was held the whole time since the mark (or never).
    const lag = {
      mark: () => performance.now(),
      lagSince: (m: number) => (lagHeld ? performance.now() - m : 0),
    };
    const health = new HealthChecker({
      registry,
      intervalMs: 1e9,
      timeoutMs: 40,
      fetch: hung,
      loopLag: () => lag,
    });
    return { registry, health };
  }

  test("the loop held for the whole wait: the check is inconclusive, the worker keeps its state", async () => {
    const { registry, health } = checker(true);
    const t0 = performance.now();
    expect(await health.check(1n)).toBe(true);
    expect(registry.get(1n)!.healthy).toBe(true);
    // Stretched up to three timeouts before it gave up.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(80);
  });

  test("the loop running: the same hang makes the worker unhealthy, the reason naming the timeout", async () => {
    const { registry, health } = checker(false);
    expect(await health.check(1n)).toBe(false);
    expect(registry.get(1n)!.reason).toBe(
      "health check failed: health check timed out after 0.04 s",
    );
  });
});
