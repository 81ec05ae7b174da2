/**
 * deploy/kubernetes: every overlay as `kubectl kustomize` renders it, each object validated
 * against Kubernetes' own OpenAPI schemas (npm `kubernetes-models`, Kubernetes 1.33; the
 * ServiceMonitor against prometheus-operator's CRD schema, `@kubernetes-models/prometheus-operator`),
 * then the rules the deployment relies on: pinned images, probes, resources, non-root,
 * a grace period longer than the drain, the ServiceMonitor on the Service's named port, the
 * discovery Role, the router's flags known to `switchyard serve`; safe by default (every
 * router, engine and Redis pod behind a NetworkPolicy that lets only routers in, every
 * Secret referenced and none inlined, no secret on a command line); highly available by
 * default (2 routers or an HPA with 2 at least, a PDB keeping one, spread across nodes,
 * a PDB per engine pool); engines scraped (PodMonitor), LoRA updatable at run time, and
 * publishing KV events with the router's block size.
 *
 * What is checked comes from deploy/kubernetes/rendered/*.yaml (committed; `bun run
 * deploy:render` writes them). Where kubectl is installed, the first test of each overlay
 * renders it again and fails when the committed file is stale; where it is not (Debian's
 * kubernetes-client is 1.20, without kustomize v5, and npm ships no kubectl), that test is
 * skipped with the reason and the rest still checks the committed render.
 *
 * Not checked (no API server here): admission, unknown fields (the schemas do not forbid
 * them; `kubectl apply --validate=strict` on a cluster does), CRD presence.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { PodMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor";

const ROOT = join(import.meta.dir, "..", "..");
const KDIR = join(ROOT, "deploy", "kubernetes");
const NAMESPACE = "switchyard";

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: any;
  data?: Record<string, string>;
  rules?: any[];
  roleRef?: any;
  subjects?: any[];
};

/** The validating model of each kind the overlays may hold; any other kind fails the test. */
const MODELS: Record<string, new (data: any) => { validate(): void }> = {
  "v1/Namespace": Namespace,
  "v1/ServiceAccount": ServiceAccount,
  "v1/Service": Service,
  "v1/ConfigMap": ConfigMap,
  "apps/v1/Deployment": Deployment,
  "apps/v1/StatefulSet": StatefulSet,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
  "monitoring.coreos.com/v1/PodMonitor": PodMonitor,
};
const CLUSTER_SCOPED = new Set(["Namespace"]);

const OVERLAYS = readdirSync(join(KDIR, "overlays"), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

/** kubectl with kustomize v5 (`kubectl version --client` names it), or why not. */
function findKubectl(): { path: string } | { reason: string } {
  const path = Bun.which("kubectl");
  if (path === null) return { reason: "kubectl is not installed" };
  const v = Bun.spawnSync({ cmd: [path, "version", "--client"], stdout: "pipe", stderr: "pipe" });
  const text = v.stdout.toString();
  const m = /Kustomize Version: v(\d+)/.exec(text);
  if (m === null || Number(m[1]) < 5)
    return {
      reason: `kubectl at ${path} has no kustomize v5 (${text.trim().replace(/\n/g, "; ")})`,
    };
  return { path };
}
const kubectl = findKubectl();
if ("reason" in kubectl) {
  console.log(
    `[deploy/manifests] render freshness not checked: ${kubectl.reason}; validating the committed deploy/kubernetes/rendered/*.yaml`,
  );
}

function render(overlay: string): string {
  if (!("path" in kubectl)) throw new Error("no kubectl");
  const r = Bun.spawnSync({
    cmd: [kubectl.path, "kustomize", join(KDIR, "overlays", overlay)],
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0)
    throw new Error(`kubectl kustomize overlays/${overlay} failed:\n${r.stderr.toString()}`);
  return r.stdout.toString();
}

function committed(overlay: string): string {
  return readFileSync(join(KDIR, "rendered", `${overlay}.yaml`), "utf8");
}

/** The committed file without its generated-by header line. */
function committedBody(overlay: string): string {
  return committed(overlay).replace(/^# Generated by[^\n]*\n/, "");
}

function parseObjects(yaml: string): Obj[] {
  const docs = Bun.YAML.parse(yaml) as unknown;
  return (Array.isArray(docs) ? docs : [docs]).filter(
    (d): d is Obj => d !== null && typeof d === "object",
  );
}

/** `serve`'s flags, from the CLI itself (package.json's bin, so a moved entry still works). */
function serveFlags(): Set<string> {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    bin: Record<string, string>;
  };
  const r = Bun.spawnSync({
    cmd: [process.execPath, join(ROOT, pkg.bin.switchyard!), "serve", "--help"],
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0)
    throw new Error(`serve --help exited ${r.exitCode}: ${r.stderr.toString()}`);
  const help = r.stdout.toString();
  const out = new Set([...help.matchAll(/^\s+(--[a-z0-9-]+)/gm)].map((m) => m[1]!));
  // --config is read before the option table, and named in the help's header line.
  if (/--config FILE/.test(help)) out.add("--config");
  return out;
}

/** `--name=value` or `--name value` in a container's args → value (last one wins, as serve reads them). */
function flagValue(args: readonly string[], name: string): string | undefined {
  let v: string | undefined;
  args.forEach((a, i) => {
    if (a.startsWith(`${name}=`)) v = a.slice(name.length + 1);
    else if (a === name && i + 1 < args.length) v = args[i + 1];
  });
  return v;
}

function envOf(container: any, name: string): any {
  return (container.env ?? []).find((e: any) => e.name === name);
}

function flagNames(args: readonly string[]): string[] {
  return args.filter((a) => a.startsWith("--")).map((a) => a.split("=")[0]!);
}

function matches(
  selector: Record<string, string>,
  labels: Record<string, string> | undefined,
): boolean {
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

/** `a=b,c=d` (equality-based label selector) → {a: b, c: d}. */
function parseSelector(s: string): Record<string, string> {
  return Object.fromEntries(
    s.split(",").map((part) => {
      const [k, v] = part.split("=");
      if (k === undefined || v === undefined || k === "" || part.includes("!"))
        throw new Error(`only k=v selectors are checked here (got ${s})`);
      return [k.trim(), v.trim()];
    }),
  );
}

interface Workload {
  obj: Obj;
  pod: any;
  podLabels: Record<string, string>;
}

function workloads(objs: readonly Obj[]): Workload[] {
  return objs
    .filter((o) => o.kind === "Deployment" || o.kind === "StatefulSet")
    .map((obj) => ({
      obj,
      pod: obj.spec.template.spec,
      podLabels: obj.spec.template.metadata.labels ?? {},
    }));
}

function router(objs: readonly Obj[]): Workload {
  const rs = workloads(objs).filter(
    (w) =>
      w.podLabels["app.kubernetes.io/name"] === "switchyard" &&
      w.podLabels["app.kubernetes.io/component"] === "router",
  );
  expect(rs.length).toBe(1);
  return rs[0]!;
}

function routerArgs(objs: readonly Obj[]): string[] {
  const c = router(objs).pod.containers.find((x: any) => x.name === "router");
  expect(c).toBeDefined();
  return c.args as string[];
}

/** Engines the router's discovery selects: pod templates matching --discover-selector. */
function discovered(objs: readonly Obj[]): Workload[] {
  const sel = parseSelector(flagValue(routerArgs(objs), "--discover-selector")!);
  return workloads(objs).filter((w) => matches(sel, w.podLabels));
}

test("every overlay directory has a committed render, and nothing else is rendered", () => {
  expect(OVERLAYS).toEqual(["disagg", "multi-router", "sglang", "vllm"]);
  const rendered = readdirSync(join(KDIR, "rendered"))
    .filter((f) => f.endsWith(".yaml"))
    .map((f) => f.slice(0, -5))
    .sort();
  expect(rendered).toEqual(OVERLAYS);
});

const flags = serveFlags();

for (const overlay of OVERLAYS) {
  describe(`overlay ${overlay}`, () => {
    const objs = parseObjects(committedBody(overlay));

    test.skipIf("reason" in kubectl)(
      "the committed render is what `kubectl kustomize` renders now (else: bun run deploy:render)",
      () => {
        const now = render(overlay);
        expect(now).toBe(committedBody(overlay));
      },
    );

    test("every object validates against its Kubernetes schema", () => {
      expect(objs.length).toBeGreaterThan(5);
      const problems: string[] = [];
      for (const o of objs) {
        const Model = MODELS[`${o.apiVersion}/${o.kind}`];
        if (Model === undefined) {
          problems.push(
            `${o.kind} ${o.metadata?.name}: no schema for ${o.apiVersion}/${o.kind} in this test`,
          );
          continue;
        }
        try {
          new Model(o).validate();
        } catch (e) {
          problems.push(`${o.kind} ${o.metadata.name}: ${(e as Error).message}`);
        }
      }
      expect(problems).toEqual([]);
    });

    test("one namespace for everything, which the overlay creates", () => {
      expect(objs.filter((o) => o.kind === "Namespace").map((o) => o.metadata.name)).toEqual([
        NAMESPACE,
      ]);
      for (const o of objs) {
        if (!CLUSTER_SCOPED.has(o.kind))
          expect(`${o.kind}/${o.metadata.name} in ${o.metadata.namespace}`).toBe(
            `${o.kind}/${o.metadata.name} in ${NAMESPACE}`,
          );
      }
      const ns = flagValue(routerArgs(objs), "--discover-namespace");
      // $(POD_NAMESPACE) expands to the pod's own namespace through the downward API.
      expect(ns).toBe("$(POD_NAMESPACE)");
      const env = router(objs).pod.containers[0].env.find((e: any) => e.name === "POD_NAMESPACE");
      expect(env.valueFrom.fieldRef.fieldPath).toBe("metadata.namespace");
    });

    test("every image is pinned: a tag other than latest, or a digest", () => {
      for (const w of workloads(objs)) {
        for (const c of [...(w.pod.initContainers ?? []), ...w.pod.containers]) {
          const image: string = c.image;
          const lastPart = image.slice(image.lastIndexOf("/") + 1);
          const pinned =
            image.includes("@sha256:") || (lastPart.includes(":") && !lastPart.endsWith(":latest"));
          expect(`${w.obj.metadata.name}/${c.name}: ${image} pinned=${pinned}`).toBe(
            `${w.obj.metadata.name}/${c.name}: ${image} pinned=true`,
          );
        }
      }
    });

    test("every container has readiness + liveness probes on its own named ports, resources and a non-root securityContext", () => {
      for (const w of workloads(objs)) {
        for (const c of w.pod.containers) {
          const where = `${w.obj.metadata.name}/${c.name}`;
          expect({ where, readiness: !!c.readinessProbe, liveness: !!c.livenessProbe }).toEqual({
            where,
            readiness: true,
            liveness: true,
          });
          const portNames = new Set((c.ports ?? []).map((p: any) => p.name));
          for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe].filter(Boolean)) {
            const port = probe.httpGet?.port ?? probe.tcpSocket?.port;
            if (typeof port === "string")
              expect(`${where} probe port ${port} named: ${portNames.has(port)}`).toBe(
                `${where} probe port ${port} named: true`,
              );
          }
          for (const kind of ["requests", "limits"]) {
            for (const r of ["cpu", "memory"])
              expect(`${where} ${kind}.${r}=${c.resources?.[kind]?.[r] !== undefined}`).toBe(
                `${where} ${kind}.${r}=true`,
              );
          }
          const sc = c.securityContext ?? {};
          expect({
            where,
            runAsNonRoot: sc.runAsNonRoot,
            allowPrivilegeEscalation: sc.allowPrivilegeEscalation,
            drop: sc.capabilities?.drop,
          }).toEqual({
            where,
            runAsNonRoot: true,
            allowPrivilegeEscalation: false,
            drop: ["ALL"],
          });
          // runAsNonRoot needs a numeric non-root uid to check against.
          expect(w.pod.securityContext?.runAsUser ?? sc.runAsUser).toBeGreaterThan(0);
        }
      }
    });

    test("the router: startup probe, read-only root with an emptyDir /tmp, no service links", () => {
      const r = router(objs);
      const c = r.pod.containers.find((x: any) => x.name === "router");
      expect(c.startupProbe?.httpGet?.path).toBe("/livez");
      expect(c.readinessProbe.httpGet.path).toBe("/health");
      expect(c.livenessProbe.httpGet.path).toBe("/livez");
      expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
      const tmp = c.volumeMounts.find((m: any) => m.mountPath === "/tmp");
      expect(tmp).toBeDefined();
      expect(r.pod.volumes.find((v: any) => v.name === tmp.name)?.emptyDir).toBeDefined();
      // A Service named switchyard would otherwise inject SWITCHYARD_PORT=tcp://…, which the
      // router reads as configuration.
      expect(r.pod.enableServiceLinks).toBe(false);
      expect(r.pod.serviceAccountName).toBe("switchyard");
    });

    test("terminationGracePeriodSeconds exceeds --drain-delay + --drain-timeout", () => {
      const args = routerArgs(objs);
      const delay = Number(flagValue(args, "--drain-delay"));
      const timeout = Number(flagValue(args, "--drain-timeout"));
      expect(delay).toBeGreaterThan(0);
      expect(timeout).toBeGreaterThan(0);
      expect(router(objs).pod.terminationGracePeriodSeconds).toBeGreaterThan(delay + timeout);
    });

    test("the router's flags are flags `switchyard serve` knows; config.json's keys too; the workers file parses", () => {
      const args = routerArgs(objs);
      expect(args[0]).toBe("serve");
      const unknown = flagNames(args).filter((f) => !flags.has(f));
      expect(unknown).toEqual([]);
      for (const f of [
        "--discover",
        "--discover-selector",
        "--discover-port-name",
        "--drain-delay",
        "--drain-timeout",
        "--log-format",
        "--host",
        "--port",
        "--workers-file",
        "--config",
      ]) {
        expect(`${f}: ${flagValue(args, f) !== undefined}`).toBe(`${f}: true`);
      }
      expect(flagValue(args, "--discover")).toBe("kubernetes");
      expect(flagValue(args, "--log-format")).toBe("json");
      expect(flagValue(args, "--host")).toBe("0.0.0.0");

      // --config and --workers-file point into mounted ConfigMaps that exist in the render.
      const c = router(objs).pod.containers[0];
      const fromConfigMap = (path: string): string => {
        const mount = c.volumeMounts.find((m: any) => path.startsWith(`${m.mountPath}/`));
        expect(mount).toBeDefined();
        const vol = router(objs).pod.volumes.find((v: any) => v.name === mount.name);
        const cm = objs.find(
          (o) => o.kind === "ConfigMap" && o.metadata.name === vol.configMap.name,
        );
        expect(cm).toBeDefined();
        const file = path.slice(mount.mountPath.length + 1);
        expect(cm!.data?.[file]).toBeDefined();
        return cm!.data![file]!;
      };
      const config = JSON.parse(fromConfigMap(flagValue(args, "--config")!)) as Record<
        string,
        unknown
      >;
      for (const key of Object.keys(config))
        expect(`${key}: ${flags.has(`--${key}`)}`).toBe(`${key}: true`);
      const workers = Bun.YAML.parse(fromConfigMap(flagValue(args, "--workers-file")!)) as {
        workers: unknown;
      };
      expect(Array.isArray(workers.workers)).toBe(true);
      // The admin token comes from a Secret the operator creates; not optional: without it the
      // pod does not start, rather than start with admin routes open to loopback only.
      const admin = c.env.find((e: any) => e.name === "SWITCHYARD_ADMIN_TOKEN");
      expect(admin.valueFrom.secretKeyRef).toEqual({ name: "switchyard-admin", key: "token" });
    });

    test("serve starts with the ConfigMap's config.json and workers file (values checked by the router itself)", async () => {
      const args = routerArgs(objs);
      const c = router(objs).pod.containers[0];
      const dir = mkdtempSync(join(tmpdir(), "sy-manifests-"));
      const write = (flag: string): string => {
        const path = flagValue(args, flag)!;
        const mount = c.volumeMounts.find((m: any) => path.startsWith(`${m.mountPath}/`));
        const vol = router(objs).pod.volumes.find((v: any) => v.name === mount.name);
        const cm = objs.find(
          (o) => o.kind === "ConfigMap" && o.metadata.name === vol.configMap.name,
        )!;
        const file = join(dir, path.slice(mount.mountPath.length + 1));
        writeFileSync(file, cm.data![path.slice(mount.mountPath.length + 1)]!);
        return file;
      };
      const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
        bin: Record<string, string>;
      };
      // The two files and the log format (plus a free port on loopback); the discovery flags
      // need a cluster, so they are checked by name above. A bad value exits 2 before
      // listening; a good start prints its address.
      const proc = Bun.spawn({
        cmd: [
          process.execPath,
          join(ROOT, pkg.bin.switchyard!),
          "serve",
          "--config",
          write("--config"),
          "--workers-file",
          write("--workers-file"),
          "--log-format",
          flagValue(args, "--log-format")!,
          "--port",
          "0",
          "--host",
          "127.0.0.1",
        ],
        cwd: ROOT,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      try {
        const reader = proc.stdout.getReader();
        let out = "";
        const deadline = Bun.sleep(15_000).then(() => "deadline" as const);
        while (!out.includes("\n")) {
          const next = await Promise.race([reader.read(), deadline]);
          if (next === "deadline" || next.done) break;
          out += new TextDecoder().decode(next.value);
        }
        if (!out.includes('"port"')) {
          proc.kill("SIGKILL");
          await proc.exited;
          throw new Error(
            `serve did not start (exit ${proc.exitCode}):\n${await new Response(proc.stderr).text()}`,
          );
        }
        expect(JSON.parse(out.split("\n")[0]!).port).toBeGreaterThan(0);
      } finally {
        proc.kill("SIGTERM");
        await proc.exited;
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test("the Service and ServiceMonitor reach the router's named port; the PDB covers the router pods", () => {
      const r = router(objs);
      const containerPorts = new Set(
        r.pod.containers.flatMap((c: any) => (c.ports ?? []).map((p: any) => p.name)),
      );
      const monitors = objs.filter((o) => o.kind === "ServiceMonitor");
      expect(monitors.length).toBe(1);
      const sm = monitors[0]!;
      const services = objs.filter(
        (o) => o.kind === "Service" && matches(sm.spec.selector.matchLabels, o.metadata.labels),
      );
      expect(services.map((s) => s.metadata.name)).toEqual(["switchyard"]);
      const svc = services[0]!;
      expect(matches(svc.spec.selector, r.podLabels)).toBe(true);
      for (const ep of sm.spec.endpoints) {
        expect(ep.path).toBe("/metrics");
        const port = svc.spec.ports.find((p: any) => p.name === ep.port);
        expect(port).toBeDefined();
        expect(containerPorts.has(port.targetPort)).toBe(true);
      }
      const pdbs = objs.filter(
        (o) =>
          o.kind === "PodDisruptionBudget" && matches(o.spec.selector.matchLabels, r.podLabels),
      );
      expect(pdbs.length).toBe(1);
    });

    test("the discovery Role grants list + watch on pods only (what the code watches), bound to the router's ServiceAccount", () => {
      const role = objs.find((o) => o.kind === "Role")!;
      const grants = (group: string, resource: string) =>
        new Set(
          role
            .rules!.filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
            .flatMap((r) => r.verbs as string[]),
        );
      const verbs = grants("", "pods");
      expect(["list", "watch"].every((v) => verbs.has(v))).toBe(true);
      // Read-only.
      expect([...verbs].filter((v) => !["get", "list", "watch"].includes(v))).toEqual([]);
      // Discovery watches pods (src/fleet/discovery/pod-watch.ts): no grant for what it never reads.
      expect(role.rules!.flatMap((r) => r.resources as string[])).toEqual(["pods"]);
      const binding = objs.find(
        (o) =>
          o.kind === "RoleBinding" &&
          o.roleRef.kind === "Role" &&
          o.roleRef.name === role.metadata.name,
      )!;
      expect(binding.subjects).toContainEqual({
        kind: "ServiceAccount",
        name: router(objs).pod.serviceAccountName,
        namespace: NAMESPACE,
      });
      expect(
        objs.some(
          (o) =>
            o.kind === "ServiceAccount" && o.metadata.name === router(objs).pod.serviceAccountName,
        ),
      ).toBe(true);
    });

    test("the engines discovery selects: their Service's named port, KV event annotations, pinned vLLM", () => {
      const engines = discovered(objs);
      expect(engines.length).toBeGreaterThan(0);
      const portName = flagValue(routerArgs(objs), "--discover-port-name")!;
      const sel = parseSelector(flagValue(routerArgs(objs), "--discover-selector")!);
      for (const e of engines) {
        const where = e.obj.metadata.name;
        const ann = e.obj.spec.template.metadata.annotations ?? {};
        expect(`${where}: ${ann["switchyard.dev/kv-events"]}`).toMatch(
          /: (\d+=)?tcp:\/\/\$\(POD_IP\):\d+/,
        );
        expect(`${where}: ${e.podLabels["switchyard.dev/engine"]}`).toBe(`${where}: true`);
        expect(["prefill", "decode", "both"]).toContain(ann["switchyard.dev/role"]);
        expect(e.pod.containers[0].ports.map((p: any) => p.name)).toContain(portName);
        // The ZMQ publisher the annotation names is the one vLLM is told to bind.
        const kvPort = /:(\d+)$/.exec(ann["switchyard.dev/kv-events"])![1];
        const kvConfig = e.pod.containers[0].args.find((a: string) =>
          a.startsWith("--kv-events-config="),
        );
        expect(JSON.parse(kvConfig.slice("--kv-events-config=".length)).endpoint).toBe(
          `tcp://*:${kvPort}`,
        );
        // A headless Service selects these pods and names the same port (scrapes, names; discovery reads the pods).
        const svcs = objs.filter(
          (o) =>
            o.kind === "Service" &&
            matches(o.spec.selector, e.podLabels) &&
            matches(sel, o.metadata.labels),
        );
        expect(svcs.length).toBe(1);
        expect(svcs[0]!.spec.ports.map((p: any) => p.name)).toContain(portName);
      }
    });

    test("safe: every router, engine and Redis pod is selected by an Ingress NetworkPolicy; engines and Redis let in only routers (engines: other engines, and Prometheus on http)", () => {
      const policies = objs.filter((o) => o.kind === "NetworkPolicy");
      const r = router(objs);
      const engines = discovered(objs);
      const isRouter = (labels: Record<string, string>) => matches(labels, r.podLabels);
      const isEngine = (labels: Record<string, string>) =>
        engines.some((e) => matches(labels, e.podLabels));
      const problems: string[] = [];
      for (const w of workloads(objs)) {
        const where = `${w.obj.kind}/${w.obj.metadata.name}`;
        const mine = policies.filter(
          (p) =>
            p.spec.policyTypes.includes("Ingress") &&
            matches(p.spec.podSelector.matchLabels ?? {}, w.podLabels),
        );
        if (mine.length === 0) {
          problems.push(`${where}: no NetworkPolicy selects its pods`);
          continue;
        }
        if (w.obj === r.obj) continue; // the routers are the door: their port is open to clients
        const ports = new Set(
          (w.pod.containers as any[]).flatMap((c) => (c.ports ?? []).map((p: any) => p.name)),
        );
        for (const p of mine) {
          for (const rule of p.spec.ingress ?? []) {
            if (!rule.from || rule.from.length === 0)
              problems.push(`${where}: ${p.metadata.name} lets in anyone`);
            for (const peer of rule.from ?? []) {
              const labels = peer.podSelector?.matchLabels ?? {};
              if (peer.namespaceSelector !== undefined || peer.ipBlock !== undefined) {
                // Outside the namespace: only Prometheus, only an engine's metrics port.
                const portNames = (rule.ports ?? []).map((x: any) => x.port);
                if (
                  !isEngine(w.podLabels) ||
                  JSON.stringify(portNames) !== JSON.stringify(["http"]) ||
                  labels["app.kubernetes.io/name"] !== "prometheus"
                ) {
                  problems.push(
                    `${where}: ${p.metadata.name} lets in ${JSON.stringify(peer)} on ${JSON.stringify(portNames)}`,
                  );
                }
              } else if (!(isRouter(labels) || (isEngine(w.podLabels) && isEngine(labels)))) {
                problems.push(
                  `${where}: ${p.metadata.name} lets in pods ${JSON.stringify(labels)}`,
                );
              }
              // The router selector really selects the router pods, not nothing.
              if (labels["app.kubernetes.io/component"] === "router")
                expect(isRouter(labels)).toBe(true);
            }
            for (const port of rule.ports ?? []) {
              if (typeof port.port === "string" && !ports.has(port.port))
                problems.push(
                  `${where}: ${p.metadata.name} names port ${port.port} the pod does not have`,
                );
            }
          }
        }
      }
      expect(problems).toEqual([]);
      // Every engine's HTTP and event ports are reachable from the routers.
      for (const e of engines) {
        const peers = policies
          .filter((p) => matches(p.spec.podSelector.matchLabels ?? {}, e.podLabels))
          .flatMap((p) =>
            p.spec.ingress
              .filter((rule: any) => rule.ports === undefined)
              .flatMap((rule: any) => rule.from),
          );
        expect(
          peers.some(
            (peer: any) =>
              peer.namespaceSelector === undefined && isRouter(peer.podSelector?.matchLabels ?? {}),
          ),
        ).toBe(true);
      }
    });

    test("safe: every Secret is referenced, none is inlined; no secret on a command line or in a plain env value", () => {
      expect(objs.filter((o) => o.kind === "Secret").map((o) => o.metadata.name)).toEqual([]);
      const referenced = new Set<string>();
      const problems: string[] = [];
      for (const w of workloads(objs)) {
        for (const v of w.pod.volumes ?? []) if (v.secret) referenced.add(v.secret.secretName);
        for (const c of [...(w.pod.initContainers ?? []), ...w.pod.containers]) {
          const where = `${w.obj.metadata.name}/${c.name}`;
          for (const e of c.env ?? []) {
            if (e.valueFrom?.secretKeyRef) referenced.add(e.valueFrom.secretKeyRef.name);
            if (
              /TOKEN|PASSWORD|SECRET|API_KEY/.test(e.name) &&
              e.valueFrom?.secretKeyRef === undefined
            )
              problems.push(`${where}: env ${e.name} is not from a Secret`);
            // A URL may carry a password only as a reference to a Secret-backed variable.
            if (
              typeof e.value === "string" &&
              /:\/\/[^/@\s]*:[^/@\s]+@/.test(e.value) &&
              !/:\$\([A-Z_]+\)@/.test(e.value)
            )
              problems.push(`${where}: env ${e.name} holds a password`);
          }
          const argv = [...(c.command ?? []), ...(c.args ?? [])];
          for (const f of [
            "--admin-token",
            "--redis-token",
            "--engine-token",
            "--redis",
            "--requirepass",
          ]) {
            if (flagNames(argv).includes(f) || argv.some((a) => a.includes(`${f} `)))
              problems.push(`${where}: ${f} on the command line`);
          }
        }
      }
      expect(problems).toEqual([]);
      for (const name of ["switchyard-admin", "switchyard-api-keys"])
        expect(`${name}: ${referenced.has(name)}`).toBe(`${name}: true`);
      if (overlay === "multi-router") expect(referenced.has("switchyard-redis")).toBe(true);
    });

    test("safe: the router reads client keys from Secret switchyard-api-keys, mounted as a directory (re-read on change)", () => {
      const r = router(objs);
      const c = r.pod.containers[0];
      const path = flagValue(c.args, "--api-keys")!;
      expect(path).toBeDefined();
      const mount = c.volumeMounts.find((m: any) => path.startsWith(`${m.mountPath}/`));
      expect(mount).toBeDefined();
      expect(mount.subPath).toBeUndefined();
      const vol = r.pod.volumes.find((v: any) => v.name === mount.name);
      expect(vol.secret.secretName).toBe("switchyard-api-keys");
      expect(vol.secret.optional).toBeUndefined();
    });

    test("HA: at least 2 routers, a PDB that keeps one, spread across nodes; a PDB per engine pool", () => {
      const r = router(objs);
      const hpa = objs.find(
        (o) =>
          o.kind === "HorizontalPodAutoscaler" &&
          o.spec.scaleTargetRef.name === r.obj.metadata.name,
      );
      expect(r.obj.spec.replicas ?? hpa?.spec.minReplicas).toBeGreaterThanOrEqual(2);
      const pdbs = objs.filter(
        (o) =>
          o.kind === "PodDisruptionBudget" && matches(o.spec.selector.matchLabels, r.podLabels),
      );
      expect(pdbs.map((p) => p.spec.minAvailable)).toEqual([1]);
      const byHost = r.pod.topologySpreadConstraints.find(
        (t: any) => t.topologyKey === "kubernetes.io/hostname",
      );
      expect(byHost).toMatchObject({
        maxSkew: 1,
        whenUnsatisfiable: "DoNotSchedule",
        nodeTaintsPolicy: "Honor",
      });
      expect(matches(byHost.labelSelector.matchLabels, r.podLabels)).toBe(true);
      for (const e of discovered(objs)) {
        const mine = objs.filter(
          (o) =>
            o.kind === "PodDisruptionBudget" && matches(o.spec.selector.matchLabels, e.podLabels),
        );
        expect(
          `${e.obj.metadata.name}: ${mine.map((p) => `maxUnavailable=${p.spec.maxUnavailable}`).join(",")}`,
        ).toBe(`${e.obj.metadata.name}: maxUnavailable=1`);
        // A pool's PDB does not reach into another pool.
        for (const other of discovered(objs).filter((o) => o.obj !== e.obj))
          for (const p of mine)
            expect(matches(p.spec.selector.matchLabels, other.podLabels)).toBe(false);
      }
    });

    test("engines: a PodMonitor scrapes every engine pod's named http port; their block size is the router's", () => {
      const monitors = objs.filter((o) => o.kind === "PodMonitor");
      const routerBlock = JSON.parse(
        objs.find((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("switchyard-config"))!
          .data!["config.json"]!,
      )["block-size"];
      expect(routerBlock).toBeGreaterThan(0);
      for (const e of discovered(objs)) {
        const where = e.obj.metadata.name;
        const mine = monitors.filter((m) => matches(m.spec.selector.matchLabels, e.podLabels));
        expect(`${where}: ${mine.length}`).toBe(`${where}: 1`);
        const portNames = e.pod.containers[0].ports.map((p: any) => p.name);
        for (const ep of mine[0]!.spec.podMetricsEndpoints) {
          expect(ep.path).toBe("/metrics");
          expect(portNames).toContain(ep.port);
        }
        const args: string[] = e.pod.containers[0].args;
        const block = flagValue(args, "--block-size") ?? flagValue(args, "--page-size");
        expect(`${where}: ${block}`).toBe(`${where}: ${routerBlock}`);
      }
    });

    test("engines: runtime LoRA updates where LoRA is on; not root, with a writable HOME and working directory", () => {
      for (const e of discovered(objs)) {
        const c = e.pod.containers[0];
        const where = e.obj.metadata.name;
        if ((c.args as string[]).includes("--enable-lora")) {
          expect(`${where}: ${envOf(c, "VLLM_ALLOW_RUNTIME_LORA_UPDATING")?.value}`).toBe(
            `${where}: True`,
          );
          expect(e.obj.spec.template.metadata.annotations["switchyard.dev/lora-slots"]).toBe(
            flagValue(c.args, "--max-loras"),
          );
        }
        // The images expect root (no USER in their Dockerfiles): uid 2000 / gid 0 as vLLM's
        // own non-root image, with HOME and the working directory on a writable volume and a
        // user name for a uid without a passwd entry.
        expect({
          where,
          uid: e.pod.securityContext.runAsUser,
          gid: e.pod.securityContext.runAsGroup,
        }).toEqual({ where, uid: 2000, gid: 0 });
        const home = envOf(c, "HOME").value;
        const writable = (path: string) =>
          c.volumeMounts.some(
            (m: any) => (path === m.mountPath || path.startsWith(`${m.mountPath}/`)) && !m.readOnly,
          );
        expect(`${where} HOME ${home}: ${writable(home)}`).toBe(`${where} HOME ${home}: true`);
        expect(`${where} workingDir ${c.workingDir}: ${writable(c.workingDir)}`).toBe(
          `${where} workingDir ${c.workingDir}: true`,
        );
        expect(envOf(c, "USER")?.value).toBeDefined();
      }
    });

    if (overlay === "vllm") {
      test("vllm: two routers, one engine pool of role both, no Redis", () => {
        expect(router(objs).obj.spec.replicas).toBe(2);
        const engines = discovered(objs);
        expect(
          engines.map((e) => e.obj.spec.template.metadata.annotations["switchyard.dev/role"]),
        ).toEqual(["both"]);
        expect(flagValue(routerArgs(objs), "--redis")).toBeUndefined();
        expect(envOf(router(objs).pod.containers[0], "SWITCHYARD_REDIS_URL")).toBeUndefined();
      });
    }

    if (overlay === "multi-router") {
      test("multi-router: routers scaled by an HPA, sharing the in-cluster Redis by its Service, as an ACL user with the Secret's password", () => {
        const r = router(objs);
        // The HPA owns the count: no replicas field for `kubectl apply` to reset.
        expect(r.obj.spec.replicas).toBeUndefined();
        const c = r.pod.containers[0];
        expect(flagValue(c.args, "--redis")).toBeUndefined();
        const urlText = envOf(c, "SWITCHYARD_REDIS_URL")!.value as string;
        // $(REDIS_PASSWORD) is expanded by the kubelet from a variable defined before it.
        const names = c.env.map((e: any) => e.name);
        expect(names.indexOf("REDIS_PASSWORD")).toBeLessThan(names.indexOf("SWITCHYARD_REDIS_URL"));
        expect(envOf(c, "REDIS_PASSWORD")!.valueFrom.secretKeyRef).toEqual({
          name: "switchyard-redis",
          key: "password",
        });
        const url = new URL(urlText.replace("$(REDIS_PASSWORD)", "PW"));
        expect({ protocol: url.protocol, username: url.username, password: url.password }).toEqual({
          protocol: "redis:",
          username: "switchyard",
          password: "PW",
        });
        const svc = objs.find((o) => o.kind === "Service" && o.metadata.name === url.hostname);
        expect(svc).toBeDefined();
        const port = svc!.spec.ports.find((p: any) => p.port === Number(url.port));
        expect(port).toBeDefined();
        const redis = workloads(objs).find(
          (w) => w.obj.kind === "StatefulSet" && matches(svc!.spec.selector, w.podLabels),
        );
        expect(redis).toBeDefined();
        expect(redis!.obj.spec.serviceName).toBe(svc!.metadata.name);
        const rc = redis!.pod.containers[0];
        expect(rc.ports.map((p: any) => p.name)).toContain(port.targetPort);
        // Redis reads the same Secret, turns user default off and defines user switchyard
        // from it; the password reaches neither its command line nor the probes' argv.
        expect(envOf(rc, "REDIS_PASSWORD")!.valueFrom.secretKeyRef).toEqual({
          name: "switchyard-redis",
          key: "password",
        });
        const script = [...rc.command, ...rc.args].join(" ");
        expect(script).toContain("user default off");
        expect(script).toMatch(/user switchyard on >%s/);
        expect(script).toContain("--aclfile");
        expect(script).not.toContain("--requirepass");
        for (const probe of [rc.readinessProbe, rc.livenessProbe])
          expect(probe.exec.command.join(" ")).toContain('REDISCLI_AUTH="$REDIS_PASSWORD"');
      });

      test("multi-router: the HPA scales the router Deployment on CPU and on request rate, from 2", () => {
        const hpas = objs.filter((o) => o.kind === "HorizontalPodAutoscaler");
        expect(hpas.length).toBe(1);
        const h = hpas[0]!;
        expect(h.spec.scaleTargetRef).toEqual({
          apiVersion: "apps/v1",
          kind: "Deployment",
          name: router(objs).obj.metadata.name,
        });
        expect(h.spec.minReplicas).toBeGreaterThanOrEqual(2);
        expect(h.spec.maxReplicas).toBeGreaterThan(h.spec.minReplicas);
        const kinds = h.spec.metrics.map((m: any) =>
          m.type === "Resource"
            ? `Resource/${m.resource.name}`
            : `${m.type}/${m.pods?.metric?.name}`,
        );
        expect(kinds).toEqual(["Resource/cpu", "Pods/switchyard_http_requests_per_second"]);
      });
    }

    if (overlay === "sglang") {
      test("sglang: SGLang publishes its KV events over ZMQ (--kv-events-config) with the replay endpoint the annotation names, and serves /metrics", () => {
        const engines = discovered(objs);
        expect(engines.length).toBe(1);
        const e = engines[0]!;
        const c = e.pod.containers[0];
        expect(c.command).toEqual(["python3", "-m", "sglang.launch_server"]);
        const cfg = JSON.parse(flagValue(c.args, "--kv-events-config")!);
        expect(cfg.publisher).toBe("zmq");
        const ann = e.obj.spec.template.metadata.annotations;
        expect(cfg.replay_endpoint).toBe(
          `tcp://*:${/:(\d+)$/.exec(ann["switchyard.dev/replay"])![1]}`,
        );
        expect(c.args).toContain("--enable-metrics");
        expect(c.image).toMatch(/^docker\.io\/lmsysorg\/sglang:v\d/);
      });
    }

    if (overlay === "disagg") {
      test("disagg: --disagg vllm, a prefill and a decode pool, both discovered, selectors apart", () => {
        expect(flagValue(routerArgs(objs), "--disagg")).toBe("vllm");
        const engines = discovered(objs);
        const roles = engines
          .map((e) => e.obj.spec.template.metadata.annotations["switchyard.dev/role"])
          .sort();
        expect(roles).toEqual(["decode", "prefill"]);
        for (const e of engines) {
          for (const other of engines.filter((o) => o !== e))
            expect(matches(e.obj.spec.selector.matchLabels, other.podLabels)).toBe(false);
          const kvTransfer = e.pod.containers[0].args.find((a: string) =>
            a.startsWith("--kv-transfer-config="),
          );
          expect(JSON.parse(kvTransfer.slice("--kv-transfer-config=".length)).kv_connector).toBe(
            "NixlConnector",
          );
        }
      });
    }
  });
}
