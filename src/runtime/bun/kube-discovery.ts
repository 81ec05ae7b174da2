/**
 * `--discover kubernetes` on Bun: the connection read with Bun.file and Bun.YAML (the
 * service account's files or a kubeconfig), requests through Bun's fetch with that
 * connection's TLS settings (its CA, client certificate), and the discovered pods handed to
 * the provisioner (the one way in for workers) and the health checker's holds. The discovery
 * itself is src/fleet/discovery; this only wires it.
 */
import { homedir } from "node:os";
import type { Config } from "../../config/schema.ts";
import type { WorkerId } from "../../core/ids.ts";
import type { Logger } from "../../core/logger.ts";
import { discoveryMetrics } from "../../fleet/discovery/discovery-metrics.ts";
import {
  KubeConfigError,
  resolveKubeConnection,
  serviceAccountNamespace,
  type KubeConnection,
} from "../../fleet/discovery/kube-config.ts";
import { KubernetesDiscovery } from "../../fleet/discovery/kubernetes-discovery.ts";
import type { HealthChecker } from "../../fleet/health.ts";
import type { WorkerProvisioner } from "../../fleet/provisioner.ts";
import type { WorkerRegistry } from "../../fleet/registry.ts";
import type { MetricsRegistry } from "../../observe/registry.ts";

export interface KubeTarget {
  readonly connection: KubeConnection;
  readonly namespace: string;
  readonly selector: string;
}

/**
 * Where to watch, resolved before the router listens so a missing config stops the start
 * (`problem` is then the message); undefined without --discover kubernetes.
 */
export async function resolveKubeTarget(
  config: Config,
): Promise<KubeTarget | { problem: string } | undefined> {
  if (config.discover !== "kubernetes") return undefined;
  const readFile = (p: string) => Bun.file(p).text();
  try {
    const connection = await resolveKubeConnection({
      kubeconfig: config.kubeconfig,
      env: process.env,
      home: homedir(),
      readFile,
      parseYaml: (t) => Bun.YAML.parse(t),
    });
    const namespace =
      config.discoverNamespace ??
      (await serviceAccountNamespace(readFile)) ??
      connection.namespace ??
      "default";
    return { connection, namespace, selector: config.discoverSelector! };
  } catch (e) {
    if (e instanceof KubeConfigError) return { problem: `--discover kubernetes: ${e.message}` };
    throw e;
  }
}

export function kubernetesDiscovery(
  config: Config,
  target: KubeTarget,
  d: {
    provisioner: WorkerProvisioner;
    health: HealthChecker;
    registry: WorkerRegistry;
    metrics: MetricsRegistry;
    now: () => number;
    log: Logger;
    /** `switchyard.dev/tokenizer`: POST /v1/workers' tokenizer path. */
    tokenizer: (id: WorkerId, path: string) => Promise<readonly string[]>;
  },
): KubernetesDiscovery {
  const c = target.connection;
  const tls = {
    ...(c.ca !== undefined ? { ca: c.ca } : {}),
    ...(c.clientCert !== undefined ? { cert: c.clientCert, key: c.clientKey } : {}),
    ...(c.insecureSkipTlsVerify ? { rejectUnauthorized: false } : {}),
  };
  d.log.info(
    `discovery: watching pods ${JSON.stringify(target.selector)} in namespace ${target.namespace} at ${c.server}`,
    { config: c.source, port_name: config.discoverPortName },
  );
  return new KubernetesDiscovery({
    server: c.server,
    // Bun's fetch takes the CA and client certificate per request (its `tls` option).
    fetch: (url, init) => fetch(url, { ...init, tls } as RequestInit),
    token: c.token,
    namespace: target.namespace,
    selector: target.selector,
    portName: config.discoverPortName,
    actions: {
      register: (spec) => d.provisioner.register(spec),
      remove: (id) => void d.provisioner.remove(id),
      hold: (id, reason) => d.health.hold(id, reason),
      release: (id) => void d.health.release(id),
      isRegistered: (id) => d.registry.has(id),
      tokenizer: d.tokenizer,
    },
    timers: {
      set: (fn, ms) => setTimeout(fn, ms),
      clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
    },
    rng: Math.random,
    now: d.now,
    log: d.log,
    metrics: discoveryMetrics(d.metrics),
  });
}
