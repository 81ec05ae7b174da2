import { describe, expect, test } from "bun:test";
import type { WorkerId } from "../../../../src/core/ids.ts";
import { workerIdFromUrl } from "../../../../src/core/worker-id.ts";
import { PodFleet, type FleetActions } from "../../../../src/fleet/discovery/pod-fleet.ts";
import type { WorkerSpec } from "../../../../src/fleet/worker-spec.ts";

interface P {
  name: string;
  ip?: string;
  ready?: boolean;
  terminating?: boolean;
  annotations?: Record<string, string>;
}

function pod(p: P): unknown {
  return {
    metadata: {
      name: p.name,
      namespace: "ml",
      ...(p.annotations ? { annotations: p.annotations } : {}),
      ...(p.terminating ? { deletionTimestamp: "x" } : {}),
    },
    spec: { containers: [{ name: "e", ports: [{ name: "http", containerPort: 8000 }] }] },
    status: {
      phase: "Running",
      podIP: p.ip ?? "10.0.0.1",
      conditions: [{ type: "Ready", status: (p.ready ?? true) ? "True" : "False" }],
    },
  };
}

const idOf = (ip: string) => workerIdFromUrl(`http://${ip}:8000`);

/** A router stand-in: what was done, in order, and which workers are registered. */
function fakeRouter() {
  const calls: string[] = [];
  const registered = new Set<WorkerId>();
  let failNext = 0;
  const gates: (() => void)[] = [];
  let gated = false;
  const actions: FleetActions = {
    async register(spec: WorkerSpec) {
      if (gated) await new Promise<void>((r) => gates.push(r));
      if (failNext > 0) {
        failNext--;
        calls.push(`register-failed ${spec.url}`);
        throw new Error("engine info: connection refused");
      }
      registered.add(workerIdFromUrl(spec.url));
      calls.push(`register ${spec.url}`);
    },
    remove(id) {
      registered.delete(id);
      calls.push(`remove ${id}`);
    },
    hold(id, reason) {
      calls.push(`hold ${id} ${reason}`);
    },
    release(id) {
      calls.push(`release ${id}`);
    },
    isRegistered: (id) => registered.has(id),
    async tokenizer(id, path) {
      calls.push(`tokenizer ${id} ${path}`);
      return [];
    },
  };
  return {
    actions,
    calls,
    registered,
    failNextRegistrations: (n: number) => (failNext = n),
    gate: () => (gated = true),
    open: () => {
      gated = false;
      for (const g of gates.splice(0)) g();
    },
  };
}

function setup() {
  const r = fakeRouter();
  let t = 0;
  const logs: string[] = [];
  const rejected: string[] = [];
  const forgotten: string[] = [];
  const log = {
    info: (m: string) => logs.push(`info ${m}`),
    warn: (m: string) => logs.push(`warn ${m}`),
    error: (m: string) => logs.push(`error ${m}`),
  };
  const metrics = {
    rejected: (pod: string, field: string) => rejected.push(`${pod} ${field}`),
    forget: (pod: string) => forgotten.push(pod),
    registrationFailed() {},
    apiUp() {},
    relisted() {},
    watchRestarted() {},
    countPods() {},
  };
  const fleet = new PodFleet({
    portName: "http",
    actions: r.actions,
    retryMs: 5_000,
    now: () => t,
    log,
    metrics,
  });
  return { ...r, fleet, logs, rejected, forgotten, advance: (ms: number) => (t += ms) };
}

describe("PodFleet", () => {
  test("a ready pod is registered; a pod that is not ready is not", async () => {
    const f = setup();
    f.fleet.upsert(pod({ name: "a", ip: "10.0.0.1" }));
    f.fleet.upsert(pod({ name: "b", ip: "10.0.0.2", ready: false }));
    await f.fleet.settled();
    expect(f.calls).toEqual(["register http://10.0.0.1:8000"]);
    expect(f.fleet.counts()).toEqual({ routable: 1, held: 0, waiting: 1, rejected: 0 });
  });

  test("readiness flapping holds and releases the same worker; nothing is removed", async () => {
    const f = setup();
    const id = idOf("10.0.0.1");
    f.fleet.upsert(pod({ name: "a" }));
    f.fleet.upsert(pod({ name: "a", ready: false }));
    f.fleet.upsert(pod({ name: "a", ready: true }));
    f.fleet.upsert(pod({ name: "a", ready: false }));
    await f.fleet.settled();
    f.fleet.upsert(pod({ name: "a", ready: true }));
    await f.fleet.settled();
    // Events that arrive during the registration collapse into the pod's latest state.
    expect(f.calls[0]).toBe("register http://10.0.0.1:8000");
    expect(f.calls.slice(1)).toEqual([`hold ${id} draining: pod not ready`, `release ${id}`]);
    expect(f.calls.filter((c) => c.startsWith("remove"))).toEqual([]);
  });

  test("terminating: held (in-flight requests finish); deleted: removed", async () => {
    const f = setup();
    const id = idOf("10.0.0.1");
    f.fleet.upsert(pod({ name: "a" }));
    await f.fleet.settled();
    f.fleet.upsert(pod({ name: "a", terminating: true, ready: false }));
    await f.fleet.settled();
    expect(f.calls.at(-1)).toBe(`hold ${id} draining: pod terminating`);
    f.fleet.delete(pod({ name: "a", terminating: true }));
    await f.fleet.settled();
    expect(f.calls.at(-1)).toBe(`remove ${id}`);
    expect(f.registered.size).toBe(0);
    expect(f.fleet.counts()).toEqual({ routable: 0, held: 0, waiting: 0, rejected: 0 });
  });

  test("a changed annotation or address: the old worker is removed, the new one registered", async () => {
    const f = setup();
    f.fleet.upsert(pod({ name: "a", ip: "10.0.0.1" }));
    await f.fleet.settled();
    f.fleet.upsert(
      pod({ name: "a", ip: "10.0.0.1", annotations: { "switchyard.dev/role": "decode" } }),
    );
    await f.fleet.settled();
    f.fleet.upsert(
      pod({ name: "a", ip: "10.0.0.9", annotations: { "switchyard.dev/role": "decode" } }),
    );
    await f.fleet.settled();
    expect(f.calls).toEqual([
      "register http://10.0.0.1:8000",
      `remove ${idOf("10.0.0.1")}`,
      "register http://10.0.0.1:8000",
      `remove ${idOf("10.0.0.1")}`,
      "register http://10.0.0.9:8000",
    ]);
  });

  test("a bad annotation: skipped with one log line and one count per version; the others work", async () => {
    const f = setup();
    f.fleet.upsert(
      pod({ name: "bad", ip: "10.0.0.5", annotations: { "switchyard.dev/lora-slots": "lots" } }),
    );
    f.fleet.upsert(
      pod({
        name: "bad",
        ip: "10.0.0.5",
        annotations: { "switchyard.dev/lora-slots": "lots" },
        ready: false,
      }),
    );
    f.fleet.upsert(pod({ name: "good", ip: "10.0.0.6" }));
    await f.fleet.settled();
    expect(f.calls).toEqual(["register http://10.0.0.6:8000"]);
    expect(f.rejected).toEqual(["ml/bad lora-slots"]);
    expect(f.logs.filter((l) => l.startsWith("warn"))).toEqual([
      "warn discovery: pod ml/bad skipped: switchyard.dev/lora-slots: must be a number",
    ]);
    // Fixed: registered.
    f.fleet.upsert(
      pod({ name: "bad", ip: "10.0.0.5", annotations: { "switchyard.dev/lora-slots": "4" } }),
    );
    await f.fleet.settled();
    expect(f.calls.at(-1)).toBe("register http://10.0.0.5:8000");
    expect(f.fleet.counts()).toEqual({ routable: 2, held: 0, waiting: 0, rejected: 0 });
  });

  test("a deleted pod's rejected series are forgotten (rollouts make new names); a live one's are kept", async () => {
    const f = setup();
    f.fleet.upsert(
      pod({ name: "bad", ip: "10.0.0.5", annotations: { "switchyard.dev/lora-slots": "lots" } }),
    );
    f.fleet.upsert(pod({ name: "good", ip: "10.0.0.6" }));
    await f.fleet.settled();
    expect(f.forgotten).toEqual([]);
    f.fleet.delete(pod({ name: "bad", ip: "10.0.0.5" }));
    await f.fleet.settled();
    expect(f.forgotten).toEqual(["ml/bad"]);
    // Gone from a fresh list counts as deleted too.
    f.fleet.replaceAll([]);
    await f.fleet.settled();
    expect(f.forgotten).toEqual(["ml/bad", "ml/good"]);
  });

  test("a registered pod that turns bad is removed", async () => {
    const f = setup();
    f.fleet.upsert(pod({ name: "a" }));
    await f.fleet.settled();
    f.fleet.upsert(pod({ name: "a", annotations: { "switchyard.dev/role": "chef" } }));
    await f.fleet.settled();
    expect(f.calls.at(-1)).toBe(`remove ${idOf("10.0.0.1")}`);
    expect(f.rejected).toEqual(["ml/a role"]);
  });

  test("a failed registration is retried after retryMs, at a tick", async () => {
    const f = setup();
    f.failNextRegistrations(1);
    f.fleet.upsert(pod({ name: "a" }));
    await f.fleet.settled();
    expect(f.calls).toEqual(["register-failed http://10.0.0.1:8000"]);
    f.advance(4_999);
    f.fleet.tick();
    await f.fleet.settled();
    expect(f.calls.length).toBe(1);
    f.advance(1);
    f.fleet.tick();
    await f.fleet.settled();
    expect(f.calls.at(-1)).toBe("register http://10.0.0.1:8000");
    expect(
      f.logs.some((l) =>
        l.startsWith(
          "error discovery: pod ml/a: cannot register http://10.0.0.1:8000: engine info: connection refused",
        ),
      ),
    ).toBe(true);
  });

  test("a worker removed behind the pod's back (DELETE /v1/workers) comes back at a tick", async () => {
    const f = setup();
    f.fleet.upsert(pod({ name: "a" }));
    await f.fleet.settled();
    f.actions.remove(idOf("10.0.0.1"));
    f.fleet.tick();
    await f.fleet.settled();
    expect(f.calls).toEqual([
      "register http://10.0.0.1:8000",
      `remove ${idOf("10.0.0.1")}`,
      "register http://10.0.0.1:8000",
    ]);
  });

  test("a list replaces what was known: pods missing from it are removed", async () => {
    const f = setup();
    f.fleet.replaceAll([pod({ name: "a", ip: "10.0.0.1" }), pod({ name: "b", ip: "10.0.0.2" })]);
    await f.fleet.settled();
    f.fleet.replaceAll([pod({ name: "b", ip: "10.0.0.2" }), pod({ name: "c", ip: "10.0.0.3" })]);
    await f.fleet.settled();
    expect(f.calls.slice(2).sort()).toEqual(
      [`remove ${idOf("10.0.0.1")}`, "register http://10.0.0.3:8000"].sort(),
    );
    expect([...f.registered].sort()).toEqual([idOf("10.0.0.2"), idOf("10.0.0.3")].sort());
  });

  test("a pod deleted while its registration is in flight is removed once it lands", async () => {
    const f = setup();
    f.gate();
    f.fleet.upsert(pod({ name: "a" }));
    f.fleet.delete(pod({ name: "a" }));
    f.open();
    await f.fleet.settled();
    expect(f.calls).toEqual(["register http://10.0.0.1:8000", `remove ${idOf("10.0.0.1")}`]);
    expect(f.registered.size).toBe(0);
  });

  test("a new pod with a deleted pod's address waits until the old worker is gone", async () => {
    const f = setup();
    f.fleet.upsert(pod({ name: "old", ip: "10.0.0.7" }));
    await f.fleet.settled();
    f.fleet.upsert(pod({ name: "new", ip: "10.0.0.7" }));
    await f.fleet.settled();
    expect(f.calls).toEqual(["register http://10.0.0.7:8000"]);
    expect(f.logs.some((l) => l.includes("pod ml/new has the address of pod ml/old"))).toBe(true);
    f.fleet.delete(pod({ name: "old", ip: "10.0.0.7" }));
    await f.fleet.settled();
    expect(f.calls).toEqual([
      "register http://10.0.0.7:8000",
      `remove ${idOf("10.0.0.7")}`,
      "register http://10.0.0.7:8000",
    ]);
    expect(f.fleet.workerOf("ml/new")).toBe(idOf("10.0.0.7"));
  });

  test("the tokenizer annotation is loaded after the registration", async () => {
    const f = setup();
    f.fleet.upsert(pod({ name: "a", annotations: { "switchyard.dev/tokenizer": "/tok" } }));
    await f.fleet.settled();
    expect(f.calls).toEqual([
      "register http://10.0.0.1:8000",
      `tokenizer ${idOf("10.0.0.1")} /tok`,
    ]);
  });
});
