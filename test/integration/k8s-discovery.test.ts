/**
 * `--discover kubernetes` with real processes: a router that lists and watches pods on the
 * stand-in API server, three simulated engines behind pods. What a pod's life does to the
 * router: ready → registered and routed to; not ready → no new requests, back when ready;
 * terminating → no new requests while an in-flight one finishes; deleted → forgotten; bad
 * annotations → skipped, named in the log and the metric, the others unaffected; a worker
 * deleted through the API → put back (the pods are the source of truth).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { workerIdFromUrl } from "../../src/core/worker-id.ts";
import { ROOT, startMain, until } from "../support/processes.ts";
import { StandInKubeApiserver } from "../support/stand-in-kube-apiserver.ts";
import {
  complete,
  enginePod,
  LABELS,
  metric,
  NAMESPACE,
  startK8sCluster,
  TOKEN,
  workers,
  writeKubeconfig,
  type K8sCluster,
} from "./k8s-cluster.ts";

setDefaultTimeout(60_000);

let c: K8sCluster;
const urlOf = (i: number) => String(c.engines[i]!.info.url);
const idOf = (i: number) => workerIdFromUrl(urlOf(i)).toString();

beforeAll(async () => {
  c = await startK8sCluster({
    engines: 3,
    routerArgs: ["--health-interval", "0.5"],
    before: ({ api, engines }) => {
      // Two engine pods exist before the router starts; a third pod is still starting (no IP).
      api.createPod(
        enginePod(engines[0]!, "engine-0", {
          annotations: {
            "switchyard.dev/kv-events": "tcp://$(POD_IP):45557",
            "switchyard.dev/models": "switchyard-sim",
          },
        }),
      );
      api.createPod(enginePod(engines[1]!, "engine-1"));
      api.createPod({ name: "engine-2", namespace: NAMESPACE, labels: LABELS });
      // Not an engine: another app's pod in the same namespace.
      api.createPod({
        name: "redis",
        namespace: NAMESPACE,
        labels: { app: "redis" },
        ip: "127.0.0.1",
        ports: [{ name: "http", containerPort: 1 }],
      });
    },
  });
});

afterAll(async () => {
  await c?.stop();
});

describe("--discover kubernetes", () => {
  test("the ready pods listed at start are registered before the router answers; annotations apply", async () => {
    const ws = await workers(c.routerUrl);
    expect(ws.map((w) => w.url).sort()).toEqual([urlOf(0), urlOf(1)].sort());
    const w0 = ws.find((w) => w.url === urlOf(0))!;
    // $(POD_IP) substituted; the event stream subscribed (ZMQ connects lazily, no publisher needed).
    expect(w0.kv_events?.endpoint).toBe("tcp://127.0.0.1:45557");
    expect(w0.models?.map((m) => m.id)).toEqual(["switchyard-sim"]);
    expect(c.router.output()).toContain(
      `discovery: 3 pods match "app=engine" in namespace ${NAMESPACE}`,
    );
  });

  test("a pod that gets its address and is ready is registered and routed to", async () => {
    c.api.updatePod(
      "engine-2",
      (p) => {
        p.status.podIP = "127.0.0.1";
        p.status.phase = "Running";
        p.spec.containers[0]!.ports = [
          { name: "http", containerPort: Number(c.engines[2]!.info.port), protocol: "TCP" },
        ];
      },
      NAMESPACE,
    );
    await until(
      async () => (await workers(c.routerUrl)).some((w) => w.url === urlOf(2) && w.healthy),
      "engine-2 registered and healthy",
    );
    // Concurrent requests spread by load: the new, idle worker gets some.
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        complete(c.routerUrl, `question ${i} about routers`, { maxTokens: 16 }),
      ),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.some((a) => a.worker === idOf(2))).toBe(true);
  });

  test("not ready: no new requests, and the index and registration stay; ready again: back", async () => {
    c.api.setReady("engine-1", false, NAMESPACE);
    await until(
      async () =>
        (await workers(c.routerUrl)).find((w) => w.url === urlOf(1))?.reason ===
        "draining: pod not ready",
      "engine-1 held",
    );
    const during = await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        complete(c.routerUrl, `while engine-1 is not ready ${i}`),
      ),
    );
    expect(during.every((a) => a.status === 200 && a.worker !== idOf(1))).toBe(true);
    c.api.setReady("engine-1", true, NAMESPACE);
    await until(
      async () => (await workers(c.routerUrl)).find((w) => w.url === urlOf(1))?.healthy === true,
      "engine-1 back",
    );
    expect(c.router.output()).not.toContain(`worker ${idOf(1)} removed`);
  });

  test("terminating: an in-flight request finishes, no new one goes there; deleted: forgotten", async () => {
    // A long answer pinned to engine-0 by holding the others first.
    c.api.setReady("engine-1", false, NAMESPACE);
    c.api.setReady("engine-2", false, NAMESPACE);
    await until(
      async () =>
        (await workers(c.routerUrl))
          .filter((w) => w.healthy)
          .map((w) => w.url)
          .join() === urlOf(0),
      "only engine-0 routable",
    );
    const long = complete(c.routerUrl, "a long answer from engine-0", {
      maxTokens: 400,
      stream: true,
    });
    await until(
      async () =>
        (await metric(c.routerUrl, "switchyard_active_decode_blocks", `worker="${idOf(0)}"`)) > 0,
      "the long request in flight on engine-0",
    );
    c.api.setReady("engine-1", true, NAMESPACE);
    c.api.setReady("engine-2", true, NAMESPACE);
    c.api.terminatePod("engine-0", NAMESPACE);
    await until(async () => {
      const ws = await workers(c.routerUrl);
      return (
        ws.find((w) => w.url === urlOf(0))?.reason === "draining: pod terminating" &&
        ws.filter((w) => w.healthy).length === 2
      );
    }, "engine-0 held, the others back");
    const after = await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        complete(c.routerUrl, `after engine-0 began terminating ${i}`),
      ),
    );
    expect(after.every((a) => a.status === 200 && a.worker !== idOf(0))).toBe(true);
    const done = await long;
    expect(done.status).toBe(200);
    expect(done.worker).toBe(idOf(0));
    expect(done.body).toContain("data: [DONE]");
    expect(done.body).not.toContain('"error"');
    c.api.removePod("engine-0", NAMESPACE);
    await until(
      async () => !(await workers(c.routerUrl)).some((w) => w.url === urlOf(0)),
      "engine-0 forgotten",
    );
    // The engine lives on as a new pod (the deployment replaced it): registered again.
    c.api.createPod(enginePod(c.engines[0]!, "engine-0b"));
    await until(
      async () => (await workers(c.routerUrl)).some((w) => w.url === urlOf(0) && w.healthy),
      "engine-0b registered",
    );
  });

  test("a bad annotation: the pod is skipped with a log line and a metric naming pod and field; the others keep working", async () => {
    c.api.createPod({
      ...enginePod(c.engines[0]!, "broken"),
      ip: "127.0.0.2",
      annotations: { "switchyard.dev/role": "chef" },
    });
    await until(
      async () =>
        (await metric(
          c.routerUrl,
          "switchyard_discovery_rejected_total",
          `pod="${NAMESPACE}/broken",field="role"`,
        )) === 1,
      "the rejection counted",
    );
    expect(c.router.output()).toContain(
      `discovery: pod ${NAMESPACE}/broken skipped: switchyard.dev/role: must be prefill, decode or both`,
    );
    expect((await workers(c.routerUrl)).some((w) => w.url.includes("127.0.0.2"))).toBe(false);
    expect((await complete(c.routerUrl, "still served")).status).toBe(200);
    expect(await metric(c.routerUrl, "switchyard_discovery_pods", 'state="rejected"')).toBe(1);
  });

  test("a discovered worker deleted through the admin API is put back: the pod still exists", async () => {
    const id = idOf(1);
    expect((await fetch(`${c.routerUrl}/v1/workers/${id}`, { method: "DELETE" })).status).toBe(200);
    await until(
      async () => (await workers(c.routerUrl)).some((w) => w.id === id && w.healthy),
      "engine-1 back",
    );
  });
});

describe("--discover kubernetes, misconfigured", () => {
  test("a kubeconfig that does not exist stops the start with exit code 2, naming it", async () => {
    const p = Bun.spawn({
      cmd: [
        process.execPath,
        "src/main.ts",
        "serve",
        "--port",
        "0",
        "--discover",
        "kubernetes",
        "--discover-selector",
        "a=b",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
      ],
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await p.exited).toBe(2);
    expect(await new Response(p.stderr).text()).toContain(
      "--discover kubernetes: --kubeconfig: cannot read /nonexistent/kubeconfig",
    );
  });

  test("an API server that is down at start: the router starts, and picks the pods up once it answers", async () => {
    const dir = mkdtempSync(join(tmpdir(), "switchyard-k8s-down-"));
    const api = StandInKubeApiserver.start({ token: TOKEN, bookmarkEveryMs: 0 });
    api.createPod(enginePod(c.engines[2]!, "late", {}));
    api.kill();
    const router = await startMain([
      "serve",
      "--port",
      "0",
      "--discover",
      "kubernetes",
      "--discover-selector",
      "app=engine",
      "--discover-namespace",
      NAMESPACE,
      "--kubeconfig",
      writeKubeconfig(dir, api.url),
    ]);
    try {
      const url = String(router.info.url);
      expect(await workers(url)).toEqual([]);
      expect(router.output()).toContain("discovery: the Kubernetes API failed");
      expect(await metric(url, "switchyard_discovery_api_up")).toBe(0);
      api.restart();
      await until(
        async () => (await workers(url)).some((w) => w.url === urlOf(2)),
        "the pod picked up",
        20_000,
      );
      expect(await metric(url, "switchyard_discovery_api_up")).toBe(1);
    } finally {
      await router.stop();
      api.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
