/**
 * Where the Kubernetes API server is and how to prove who we are, the way client-go finds
 * it: `--kubeconfig PATH` when given; else the pod's own service account (in-cluster:
 * KUBERNETES_SERVICE_HOST/PORT, the mounted token and ca.crt); else $KUBECONFIG (its first
 * readable file), else ~/.kube/config. From a kubeconfig: the current context's cluster
 * (server, certificate-authority[-data], insecure-skip-tls-verify) and user (token, tokenFile,
 * client-certificate[-data] + client-key[-data]); relative paths are relative to the file, as
 * kubectl reads them. Credential plugins (exec, auth-provider) are refused by name: they run
 * programs, which a router should not. File reading and YAML parsing are injected; this
 * opens no connection.
 */

/** The service account's files in every pod (unless automountServiceAccountToken is off). */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

export interface KubeConnection {
  /** The API server's base URL, e.g. https://10.96.0.1:443. */
  readonly server: string;
  /** PEM of the CA that signs the server's certificate (else the system's roots). */
  readonly ca?: string;
  readonly insecureSkipTlsVerify?: boolean;
  /** PEM client certificate and key (kubeconfig users that authenticate by certificate). */
  readonly clientCert?: string;
  readonly clientKey?: string;
  /**
   * The bearer token, read again at every call when it comes from a file: the kubelet
   * rewrites a projected service-account token before it expires (about every hour).
   */
  readonly token: () => Promise<string | undefined>;
  /** The namespace the config names: the pod's own (in-cluster) or the context's. */
  readonly namespace?: string;
  /** Where it came from, for the start-up log line. */
  readonly source: string;
}

export interface KubeConfigSources {
  /** --kubeconfig. */
  readonly kubeconfig?: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The user's home directory (for ~/.kube/config). */
  readonly home?: string;
  /** Rejects when the file cannot be read. */
  readonly readFile: (path: string) => Promise<string>;
  readonly parseYaml: (text: string) => unknown;
}

export class KubeConfigError extends Error {
  override readonly name = "KubeConfigError";
}

/** Resolve the connection; a KubeConfigError says what is missing or unsupported. */
export async function resolveKubeConnection(s: KubeConfigSources): Promise<KubeConnection> {
  if (s.kubeconfig !== undefined) return fromKubeconfigFile(s.kubeconfig, s, "--kubeconfig");
  const host = s.env.KUBERNETES_SERVICE_HOST;
  const port = s.env.KUBERNETES_SERVICE_PORT;
  if (host && port) return inCluster(host, port, s);
  const listed = (s.env.KUBECONFIG ?? "").split(":").filter((p) => p !== "");
  for (const path of listed) {
    if (await readable(path, s)) return fromKubeconfigFile(path, s, "$KUBECONFIG");
  }
  if (listed.length > 0)
    throw new KubeConfigError(`$KUBECONFIG names no readable file (${listed.join(", ")})`);
  const home = s.home ?? s.env.HOME;
  const fallback = home ? `${home.replace(/\/+$/, "")}/.kube/config` : undefined;
  if (fallback !== undefined && (await readable(fallback, s)))
    return fromKubeconfigFile(fallback, s, "~/.kube/config");
  throw new KubeConfigError(
    "no Kubernetes API to talk to: not in a pod (KUBERNETES_SERVICE_HOST/PORT unset), no $KUBECONFIG and no ~/.kube/config; give --kubeconfig PATH",
  );
}

/** The pod's namespace from its service account, when the router runs in a pod. */
export async function serviceAccountNamespace(
  readFile: (path: string) => Promise<string>,
): Promise<string | undefined> {
  try {
    const ns = (await readFile(`${SERVICE_ACCOUNT_DIR}/namespace`)).trim();
    return ns === "" ? undefined : ns;
  } catch {
    return undefined;
  }
}

async function inCluster(
  host: string,
  port: string,
  s: KubeConfigSources,
): Promise<KubeConnection> {
  const tokenPath = `${SERVICE_ACCOUNT_DIR}/token`;
  const ca = await mustRead(`${SERVICE_ACCOUNT_DIR}/ca.crt`, s, "in-cluster config");
  await mustRead(tokenPath, s, "in-cluster config"); // fail at start, not at the first list
  const h = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return {
    server: `https://${h}:${port}`,
    ca,
    token: () => tokenFromFile(tokenPath, s),
    namespace: await serviceAccountNamespace(s.readFile),
    source: `in-cluster service account (${SERVICE_ACCOUNT_DIR})`,
  };
}

async function fromKubeconfigFile(
  path: string,
  s: KubeConfigSources,
  how: string,
): Promise<KubeConnection> {
  const text = await mustRead(path, s, how);
  let doc: unknown;
  try {
    doc = s.parseYaml(text);
  } catch (e) {
    throw new KubeConfigError(`${how} ${path}: not valid YAML: ${(e as Error).message}`);
  }
  const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/") + 1) : "";
  const rel = (p: string) => (p.startsWith("/") ? p : `${dir}${p}`);
  const what = `${how} ${path}`;
  const cfg = obj(doc, what);
  const current = str(cfg["current-context"]);
  if (current === undefined) throw new KubeConfigError(`${what}: current-context is not set`);
  const context = obj(
    named(cfg.contexts, current, "context", what).context,
    `${what}: context ${current}`,
  );
  const clusterName = str(context.cluster);
  const userName = str(context.user);
  if (clusterName === undefined)
    throw new KubeConfigError(`${what}: context ${current} names no cluster`);
  const cluster = obj(
    named(cfg.clusters, clusterName, "cluster", what).cluster,
    `${what}: cluster ${clusterName}`,
  );
  const server = str(cluster.server);
  if (server === undefined)
    throw new KubeConfigError(`${what}: cluster ${clusterName} has no server`);
  const user =
    userName === undefined
      ? {}
      : obj(named(cfg.users, userName, "user", what).user ?? {}, `${what}: user ${userName}`);
  for (const plugin of ["exec", "auth-provider"]) {
    if (user[plugin] !== undefined) {
      throw new KubeConfigError(
        `${what}: user ${userName} authenticates with ${plugin}, which is not supported (it runs a program); give the router a token (a service account's) or a client certificate`,
      );
    }
  }
  if (user.username !== undefined || user.password !== undefined) {
    throw new KubeConfigError(
      `${what}: user ${userName}: basic authentication is not supported (Kubernetes removed it); use a token`,
    );
  }
  const ca = await pem(
    cluster["certificate-authority-data"],
    cluster["certificate-authority"],
    rel,
    s,
    `${what}: cluster ${clusterName} certificate-authority`,
  );
  const clientCert = await pem(
    user["client-certificate-data"],
    user["client-certificate"],
    rel,
    s,
    `${what}: user ${userName} client-certificate`,
  );
  const clientKey = await pem(
    user["client-key-data"],
    user["client-key"],
    rel,
    s,
    `${what}: user ${userName} client-key`,
  );
  if ((clientCert === undefined) !== (clientKey === undefined)) {
    throw new KubeConfigError(
      `${what}: user ${userName} has a client certificate without its key (or the other way round)`,
    );
  }
  const token = str(user.token);
  const tokenFile = str(user.tokenFile);
  return {
    server: server.replace(/\/+$/, ""),
    ...(ca !== undefined ? { ca } : {}),
    ...(cluster["insecure-skip-tls-verify"] === true ? { insecureSkipTlsVerify: true } : {}),
    ...(clientCert !== undefined ? { clientCert, clientKey } : {}),
    token:
      token !== undefined
        ? () => Promise.resolve(token)
        : tokenFile !== undefined
          ? () => tokenFromFile(rel(tokenFile), s)
          : () => Promise.resolve(undefined),
    ...(str(context.namespace) !== undefined ? { namespace: str(context.namespace) } : {}),
    source: `${what} (context ${current})`,
  };
}

async function tokenFromFile(path: string, s: KubeConfigSources): Promise<string | undefined> {
  try {
    const t = (await s.readFile(path)).trim();
    return t === "" ? undefined : t;
  } catch (e) {
    // The kubelet swaps the file through a symlink; a read in between fails once.
    throw new KubeConfigError(`cannot read the token ${path}: ${(e as Error).message}`);
  }
}

async function readable(path: string, s: KubeConfigSources): Promise<boolean> {
  try {
    await s.readFile(path);
    return true;
  } catch {
    return false;
  }
}

async function mustRead(path: string, s: KubeConfigSources, how: string): Promise<string> {
  try {
    return await s.readFile(path);
  } catch (e) {
    throw new KubeConfigError(`${how}: cannot read ${path} (${(e as Error).message})`);
  }
}

/** `*-data` (base64 PEM) wins over the path, as in kubectl. */
async function pem(
  data: unknown,
  path: unknown,
  rel: (p: string) => string,
  s: KubeConfigSources,
  what: string,
): Promise<string | undefined> {
  const d = str(data);
  if (d !== undefined) {
    try {
      return new TextDecoder().decode(
        Uint8Array.from(atob(d.replace(/\s+/g, "")), (c) => c.charCodeAt(0)),
      );
    } catch {
      throw new KubeConfigError(`${what}-data: not valid base64`);
    }
  }
  const p = str(path);
  return p === undefined ? undefined : mustRead(rel(p), s, what);
}

function named(list: unknown, name: string, kind: string, what: string): Record<string, unknown> {
  const found = Array.isArray(list) ? list.find((x) => isObj(x) && x.name === name) : undefined;
  if (!isObj(found)) throw new KubeConfigError(`${what}: no ${kind} named ${JSON.stringify(name)}`);
  return found;
}

function obj(x: unknown, what: string): Record<string, unknown> {
  if (!isObj(x)) throw new KubeConfigError(`${what}: expected a mapping`);
  return x;
}

function isObj(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function str(x: unknown): string | undefined {
  return typeof x === "string" && x !== "" ? x : undefined;
}
