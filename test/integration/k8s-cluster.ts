/**
 * A "cluster" for the Kubernetes discovery tests: the stand-in API server in this process
 * (test/support/stand-in-kube-apiserver.ts, on a free port), simulated engines as real
 * processes, each one a pod the test writes (address 127.0.0.1, container port named http =
 * the engine's port), and a router process started with `--discover kubernetes` and a
 * kubeconfig pointing at the stand-in. Ports are chosen at run time; every process is
 * stopped by PID. Also: the router's view (/v1/workers, /metrics) and a completion that says
 * which worker answered.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startMain, stopAll, type Proc } from "../support/processes.ts";
import { StandInKubeApiserver, type StandInOptions } from "../support/stand-in-kube-apiserver.ts";

export const NAMESPACE = "engines";
export const SELECTOR = "app=engine";
export const LABELS = { app: "engine" };
export const TOKEN = "stand-in-token";

export interface WorkerView {
  id: string;
  url: string;
  healthy: boolean;
  reason?: string;
  kv_events?: { endpoint?: string; dp_ranks?: number };
  models?: { id: string }[];
}

export interface K8sCluster {
  readonly api: StandInKubeApiserver;
  readonly router: Proc;
  readonly routerUrl: string;
  readonly engines: Proc[];
  readonly kubeconfig: string;
  stop(): Promise<void>;
}

/** A kubeconfig for the stand-in, as kubectl would read it. */
export function writeKubeconfig(dir: string, server: string, token = TOKEN): string {
  const path = join(dir, "kubeconfig");
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "current-context: test",
      "contexts:",
      "- name: test",
      `  context: {cluster: stand-in, user: router, namespace: ${NAMESPACE}}`,
      "clusters:",
      "- name: stand-in",
      `  cluster: {server: "${server}"}`,
      "users:",
      "- name: router",
      `  user: {token: ${token}}`,
    ].join("\n"),
  );
  return path;
}

export async function startK8sCluster(o: {
  engines: number;
  routerArgs?: readonly string[];
  engineArgs?: readonly string[];
  seed?: number;
  api?: StandInOptions;
  before?: (c: { api: StandInKubeApiserver; engines: Proc[] }) => void;
}): Promise<K8sCluster> {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-k8s-"));
  const api = StandInKubeApiserver.start({
    token: TOKEN,
    namespaces: [NAMESPACE],
    bookmarkEveryMs: 1_000,
    ...o.api,
  });
  const port = freePort();
  const routerUrl = `http://127.0.0.1:${port}`;
  let engines: Proc[] = [];
  let router: Proc | undefined;
  try {
    engines = await Promise.all(
      Array.from({ length: o.engines }, (_, i) =>
        startMain([
          "mocker",
          "--port",
          "0",
          "--router-url",
          routerUrl,
          "--speedup",
          "10",
          "--seed",
          String(o.seed ?? i + 1),
          ...(o.engineArgs ?? []),
        ]),
      ),
    );
    o.before?.({ api, engines });
    const kubeconfig = writeKubeconfig(dir, api.url);
    router = await startMain(
      [
        "serve",
        "--port",
        String(port),
        "--host",
        "127.0.0.1",
        "--discover",
        "kubernetes",
        "--discover-selector",
        SELECTOR,
        "--kubeconfig",
        kubeconfig,
        ...(o.routerArgs ?? []),
      ],
      60_000,
    );
    const r = router;
    return {
      api,
      router: r,
      routerUrl,
      engines,
      kubeconfig,
      async stop() {
        await stopAll([r, ...engines]);
        api.kill();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await stopAll([router, ...engines]);
    api.kill();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/** The pod of engine `i`: its address and named port are the engine's. */
export function enginePod(
  engine: Proc,
  name: string,
  o: { ready?: boolean; annotations?: Record<string, string> } = {},
) {
  return {
    name,
    namespace: NAMESPACE,
    labels: LABELS,
    ip: "127.0.0.1",
    ports: [{ name: "http", containerPort: Number(engine.info.port) }],
    ...o,
  };
}

export async function workers(routerUrl: string): Promise<WorkerView[]> {
  const r = await fetch(`${routerUrl}/v1/workers`);
  return ((await r.json()) as { workers: WorkerView[] }).workers;
}

/** The sum of a metric's samples whose label text contains `labels` (e.g. `pod="ns/x"`). */
export async function metric(routerUrl: string, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${routerUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (labels !== "" && !line.includes(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

export interface Completion {
  readonly status: number;
  /** x-switchyard-worker: the worker id that answered. */
  readonly worker: string | null;
  /** performance.now() when it was sent and when its whole body was read. */
  readonly sentAt: number;
  readonly doneAt: number;
  readonly body: string;
}

export async function complete(
  routerUrl: string,
  prompt: string,
  o: { maxTokens?: number; stream?: boolean } = {},
): Promise<Completion> {
  const sentAt = performance.now();
  const r = await fetch(`${routerUrl}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt, max_tokens: o.maxTokens ?? 4, stream: o.stream ?? false }),
  });
  const body = await r.text();
  return {
    status: r.status,
    worker: r.headers.get("x-switchyard-worker"),
    sentAt,
    doneAt: performance.now(),
    body,
  };
}
