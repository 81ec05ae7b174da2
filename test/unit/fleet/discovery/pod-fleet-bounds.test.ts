/**
 * Discovery meets membership's bounds: a pod registered past --max-workers, or at an engine
 * URL another source registered under another id, is refused by membership like any other
 * registration. The watch goes on: the pod is logged and counted, waits, and is registered
 * on a later tick once there is room (or the URL is free); the other pods are not touched.
 */
import { describe, expect, test } from "bun:test";
import type { WorkerId } from "../../../../src/core/ids.ts";
import { workerIdFromUrl } from "../../../../src/core/worker-id.ts";
import { PodFleet } from "../../../../src/fleet/discovery/pod-fleet.ts";
import { WorkerMembership } from "../../../../src/fleet/membership.ts";
import { WorkerRegistry } from "../../../../src/fleet/registry.ts";

function pod(name: string, ip: string): unknown {
  return {
    metadata: { name, namespace: "ml" },
    spec: { containers: [{ name: "e", ports: [{ name: "http", containerPort: 8000 }] }] },
    status: { phase: "Running", podIP: ip, conditions: [{ type: "Ready", status: "True" }] },
  };
}

const urlOf = (ip: string) => `http://${ip}:8000`;

function setup(maxWorkers: number) {
  const registry = new WorkerRegistry();
  const membership = new WorkerMembership({
    registry,
    blockSize: 16,
    maxWorkers,
    load: { updateWorkers: () => {} },
    recovery: { addRank: () => {}, removeWorker: () => {} },
    engineInfo: async () => ({ loras: [] }),
  });
  let t = 0;
  const logs: string[] = [];
  let failures = 0;
  const fleet = new PodFleet({
    portName: "http",
    // As the runtime wires them (through the provisioner, which registers through membership).
    actions: {
      register: (spec) => membership.register({ url: spec.url }),
      remove: (id: WorkerId) => void membership.remove(id),
      hold: () => {},
      release: () => {},
      isRegistered: (id) => registry.has(id),
    },
    retryMs: 5_000,
    now: () => t,
    log: {
      info: () => {},
      warn: (m) => logs.push(`warn ${m}`),
      error: (m) => logs.push(`error ${m}`),
    },
    metrics: {
      rejected() {},
      forget() {},
      registrationFailed: () => failures++,
      apiUp() {},
      relisted() {},
      watchRestarted() {},
      countPods() {},
    },
  });
  return {
    registry,
    membership,
    fleet,
    logs,
    failures: () => failures,
    advance: (ms: number) => (t += ms),
  };
}

describe("discovery within membership's bounds", () => {
  test("a pod past --max-workers is logged, counted and waits; it registers once a place frees", async () => {
    const s = setup(2);
    const ips: Record<string, string> = { a: "10.0.0.1", b: "10.0.0.2", c: "10.0.0.3" };
    s.fleet.replaceAll(Object.entries(ips).map(([name, ip]) => pod(name, ip)));
    await s.fleet.settled();
    expect(s.registry.size).toBe(2);
    expect(s.fleet.counts()).toEqual({ routable: 2, held: 0, waiting: 1, rejected: 0 });
    expect(s.failures()).toBe(1);
    const refused = s.logs.filter((l) => l.includes("--max-workers 2"));
    expect(refused.length).toBe(1);
    expect(refused[0]).toStartWith("error discovery: pod ml/");
    const waiting = Object.values(ips).find((ip) => !s.registry.has(workerIdFromUrl(urlOf(ip))))!;

    // Still full: the retry is refused again, nothing else changes.
    s.advance(5_000);
    s.fleet.tick();
    await s.fleet.settled();
    expect(s.registry.size).toBe(2);
    expect(s.failures()).toBe(2);

    // One pod goes: the waiting one takes its place at the next retry.
    const [gone, goneIp] = Object.entries(ips).find(([, ip]) => ip !== waiting)!;
    s.fleet.delete(pod(gone, goneIp));
    await s.fleet.settled();
    s.advance(5_000);
    s.fleet.tick();
    await s.fleet.settled();
    expect(s.registry.has(workerIdFromUrl(urlOf(waiting)))).toBe(true);
    expect(s.fleet.counts()).toEqual({ routable: 2, held: 0, waiting: 0, rejected: 0 });
  });

  test("a pod at an engine URL registered under another id is refused (logged, counted) until that worker leaves", async () => {
    const s = setup(16);
    await s.membership.register({ url: urlOf("10.0.0.1"), id: 77n });
    s.fleet.replaceAll([pod("a", "10.0.0.1"), pod("b", "10.0.0.2")]);
    await s.fleet.settled();
    expect(s.registry.has(workerIdFromUrl(urlOf("10.0.0.2")))).toBe(true);
    expect(s.registry.has(workerIdFromUrl(urlOf("10.0.0.1")))).toBe(false);
    expect(s.failures()).toBe(1);
    expect(s.logs.some((l) => l.includes("already registered as worker 77"))).toBe(true);

    s.membership.remove(77n);
    s.advance(5_000);
    s.fleet.tick();
    await s.fleet.settled();
    expect(s.registry.has(workerIdFromUrl(urlOf("10.0.0.1")))).toBe(true);
    expect(s.registry.size).toBe(2);
  });
});
