/**
 * The list/watch loop against the stand-in API server (real HTTP): what the sink is told, and
 * what the loop asks the server (resource versions, relists) through bookmarks, 410s, cut
 * connections, an outage and a silent connection. Backoff delays are recorded through the
 * injected timers, with a fixed rng, and kept short.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { DiscoveryMetrics } from "../../../../src/fleet/discovery/discovery-metrics.ts";
import { KubeApi } from "../../../../src/fleet/discovery/kube-api.ts";
import {
  PodWatch,
  type PodSink,
  type PodWatchOptions,
} from "../../../../src/fleet/discovery/pod-watch.ts";
import { until } from "../../../support/processes.ts";
import { StandInKubeApiserver } from "../../../support/stand-in-kube-apiserver.ts";

const running: { stop(): Promise<void> | void }[] = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.stop();
});

/** What the loop told the sink: the pods it believes exist, and each call. */
function recordingSink() {
  const pods = new Map<string, string>();
  const calls: string[] = [];
  const nameOf = (p: unknown) => (p as { metadata: { name: string } }).metadata.name;
  const readyOf = (p: unknown) =>
    (p as { status: { conditions: { status: string }[] } }).status.conditions[0]!.status === "True"
      ? "ready"
      : "not-ready";
  const sink: PodSink = {
    replaceAll(list) {
      calls.push(`list ${list.map(nameOf).join(",")}`);
      pods.clear();
      for (const p of list) pods.set(nameOf(p), readyOf(p));
    },
    upsert(p) {
      calls.push(`upsert ${nameOf(p)}`);
      pods.set(nameOf(p), readyOf(p));
    },
    delete(p) {
      calls.push(`delete ${nameOf(p)}`);
      pods.delete(nameOf(p));
    },
  };
  return { sink, pods, calls };
}

function counters() {
  const c = { relists: [] as string[], restarts: [] as string[], up: [] as boolean[] };
  const metrics: DiscoveryMetrics = {
    rejected() {},
    forget() {},
    registrationFailed() {},
    apiUp: (u) => c.up.push(u),
    relisted: (r) => c.relists.push(r),
    watchRestarted: (r) => c.restarts.push(r),
    countPods() {},
  };
  return { c, metrics };
}

function start(api: StandInKubeApiserver, o: Partial<PodWatchOptions> = {}) {
  const rec = recordingSink();
  const { c, metrics } = counters();
  const delays: number[] = [];
  const logs: string[] = [];
  const w = new PodWatch({
    api: new KubeApi({
      server: api.url,
      fetch: (u, i) => fetch(u, i),
      token: async () => undefined,
    }),
    namespace: "default",
    selector: "app=vllm",
    sink: rec.sink,
    timers: {
      set: (fn, ms) => {
        if (ms < 60_000) delays.push(ms); // backoffs and short idle guards; the list deadline is 60 s
        return setTimeout(fn, ms);
      },
      clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
    },
    rng: () => 0,
    now: () => performance.now(),
    log: { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) },
    metrics,
    backoffBaseMs: 8,
    backoffMaxMs: 64,
    idleMs: 60_000,
    watchTimeoutSeconds: () => 300,
    ...o,
  });
  running.push(w);
  return { w, ...rec, c, delays, logs };
}

function standIn(
  o: ConstructorParameters<typeof StandInKubeApiserver>[0] = {},
): StandInKubeApiserver {
  const s = StandInKubeApiserver.start({ bookmarkEveryMs: 0, ...o });
  running.push({ stop: () => s.kill() });
  return s;
}

const watches = (api: StandInKubeApiserver) => api.requests.filter((r) => r.query.watch === "1");
const lists = (api: StandInKubeApiserver) =>
  api.requests.filter((r) => r.query.watch === undefined);

describe("PodWatch", () => {
  test("list, then watch from the list's version: every change reaches the sink", async () => {
    const api = standIn();
    api.createPod({ name: "a", labels: { app: "vllm" }, ip: "10.0.0.1" });
    api.createPod({ name: "x", labels: { app: "other" }, ip: "10.0.0.9" });
    const t = start(api);
    await t.w.start();
    expect(t.calls).toEqual(["list a"]);
    const listedAt = api.resourceVersion;
    await until(() => api.openWatches === 1, "the watch to open");
    expect(watches(api)[0]!.query.resourceVersion).toBe(listedAt);
    api.createPod({ name: "b", labels: { app: "vllm" }, ip: "10.0.0.2" });
    api.setReady("a", false);
    api.removePod("b");
    await until(
      () => t.calls.length === 4,
      () => `4 calls, got ${t.calls}`,
    );
    expect(t.calls).toEqual(["list a", "upsert b", "upsert a", "delete b"]);
    expect(t.pods).toEqual(new Map([["a", "not-ready"]]));
    expect(t.w.resourceVersion).toBe(api.resourceVersion);
  });

  test("a pod whose labels stop matching is deleted from the sink (the server says DELETED)", async () => {
    const api = standIn();
    api.createPod({ name: "a", labels: { app: "vllm" }, ip: "10.0.0.1" });
    const t = start(api);
    await t.w.start();
    await until(() => api.openWatches === 1, "the watch to open");
    api.updatePod("a", (p) => (p.metadata.labels = { app: "retired" }));
    await until(() => t.pods.size === 0, "the pod to leave");
    expect(t.calls.at(-1)).toBe("delete a");
  });

  test("a bookmark moves the version on: the next watch starts after it, without a list", async () => {
    const api = standIn();
    api.createPod({ name: "a", labels: { app: "vllm" }, ip: "10.0.0.1" });
    const t = start(api);
    await t.w.start();
    await until(() => api.openWatches === 1, "the watch to open");
    // Changes the selector hides still move the store's version; a bookmark carries it.
    for (let i = 0; i < 5; i++)
      api.createPod({ name: `other-${i}`, labels: { app: "other" }, ip: `10.0.1.${i}` });
    const bookmarked = api.resourceVersion;
    api.bookmark();
    await until(() => t.w.resourceVersion === bookmarked, "the bookmark's version");
    api.closeWatches(); // the server ends the watch, as timeoutSeconds does
    await until(() => watches(api).length === 2 && api.openWatches === 1, "a second watch");
    expect(watches(api)[1]!.query.resourceVersion).toBe(bookmarked);
    expect(lists(api).length).toBe(1);
    expect(t.c.restarts).toEqual(["timeout"]);
  });

  for (const goneAs of ["event", "http"] as const) {
    test(`410 Gone (${goneAs === "event" ? "an ERROR event" : "HTTP 410"}) in the middle: list again, and pods deleted meanwhile leave`, async () => {
      const api = standIn({ goneAs });
      api.createPod({ name: "a", labels: { app: "vllm" }, ip: "10.0.0.1" });
      api.createPod({ name: "b", labels: { app: "vllm" }, ip: "10.0.0.2" });
      const t = start(api);
      await t.w.start();
      await until(() => api.openWatches === 1, "the watch to open");
      // The API server goes away; meanwhile b is deleted, c created, and the history compacted.
      api.kill();
      api.removePod("b");
      api.createPod({ name: "c", labels: { app: "vllm" }, ip: "10.0.0.3" });
      api.compact();
      api.restart();
      await until(
        () => t.pods.has("c") && !t.pods.has("b"),
        () => `a relist (calls ${t.calls})`,
      );
      expect(t.calls.at(-1)).toBe("list a,c");
      expect(t.c.relists).toEqual(["start", "expired"]);
      expect(t.logs.some((l) => l.includes("(410); listing again"))).toBe(true);
    });
  }

  test("a cut connection: the watch resumes from the last version (no list), after backoff; the sink is untouched meanwhile", async () => {
    const api = standIn();
    api.createPod({ name: "a", labels: { app: "vllm" }, ip: "10.0.0.1" });
    const t = start(api);
    await t.w.start();
    await until(() => api.openWatches === 1, "the watch to open");
    api.setReady("a", false);
    await until(() => t.pods.get("a") === "not-ready", "the change");
    const rv = t.w.resourceVersion;
    api.kill();
    await until(() => t.delays.length >= 4, "a few failed attempts");
    expect(t.pods).toEqual(new Map([["a", "not-ready"]])); // the last known fleet stays
    expect(t.c.up).toContain(false);
    api.setReady("a", true); // written while the API server is down (the store outlives it)
    api.restart();
    await until(() => t.pods.get("a") === "ready", "the change made during the outage");
    expect(lists(api).length).toBe(1);
    const resumed = watches(api).at(-1)!;
    expect(resumed.query.resourceVersion).toBe(rv!);
    expect(t.c.up.at(-1)).toBe(true);
    // One error line for the outage, one line when it ends.
    expect(t.logs.filter((l) => l.includes("the Kubernetes API failed")).length).toBe(1);
    expect(t.logs.filter((l) => l.includes("answers again")).length).toBe(1);
  });

  test("backoff: doubling from the base, capped, jittered into [½, 1] of it (rng 0 → ½)", async () => {
    const api = standIn();
    const url = api.url;
    api.kill(); // nothing listens: every list fails at once
    const t = start(api, {
      api: new KubeApi({ server: url, fetch: (u, i) => fetch(u, i), token: async () => undefined }),
    });
    await t.w.start();
    await until(() => t.delays.length >= 6, "six backoffs");
    expect(t.delays.slice(0, 6)).toEqual([4, 8, 16, 32, 32, 32]);
    expect(t.c.relists).toEqual([]);
    expect(t.logs.filter((l) => l.includes("the Kubernetes API failed")).length).toBe(1);
  });

  test("a silent connection is given up after idleMs and watched again from the same version", async () => {
    const api = standIn();
    api.createPod({ name: "a", labels: { app: "vllm" }, ip: "10.0.0.1" });
    const t = start(api, { idleMs: 150 });
    await t.w.start();
    const rv = t.w.resourceVersion;
    await until(() => t.c.restarts.includes("idle"), "an idle restart", 5_000);
    await until(() => watches(api).length >= 2, "a second watch");
    expect(watches(api)[1]!.query.resourceVersion).toBe(rv!);
    expect(lists(api).length).toBe(1);
  });

  test("RBAC refusal: logged once with what the service account needs, retried", async () => {
    const api = standIn({ namespaces: ["ml"] });
    const t = start(api);
    await t.w.start();
    await until(() => lists(api).length >= 3, "retries");
    const lines = t.logs.filter((l) => l.includes("403"));
    expect(lines.length).toBe(1);
    expect(lines[0]).toContain("needs get, list and watch on pods in namespace default");
  });

  test("stop ends the loop and closes the watch", async () => {
    const api = standIn();
    const t = start(api);
    await t.w.start();
    await until(() => api.openWatches === 1, "the watch to open");
    await t.w.stop();
    await until(() => api.openWatches === 0, "the watch to close");
  });
});
