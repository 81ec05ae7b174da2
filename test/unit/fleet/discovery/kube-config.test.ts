import { describe, expect, test } from "bun:test";
import {
  KubeConfigError,
  resolveKubeConnection,
  SERVICE_ACCOUNT_DIR,
  serviceAccountNamespace,
} from "../../../../src/fleet/discovery/kube-config.ts";

/** An in-memory file system; a missing file rejects like a real read. */
function files(map: Record<string, string>) {
  const reads: string[] = [];
  return {
    reads,
    readFile: async (p: string) => {
      reads.push(p);
      const t = map[p];
      if (t === undefined) throw new Error(`ENOENT: ${p}`);
      return t;
    },
  };
}

const parseYaml = (t: string) => Bun.YAML.parse(t);
const b64 = (s: string) => btoa(s);

function kubeconfig(
  o: {
    server?: string;
    user?: string;
    cluster?: string;
    namespace?: string;
    current?: string;
  } = {},
): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    ...(o.current === "" ? [] : [`current-context: ${o.current ?? "dev"}`]),
    "contexts:",
    "- name: dev",
    "  context:",
    "    cluster: c1",
    "    user: u1",
    ...(o.namespace ? [`    namespace: ${o.namespace}`] : []),
    "clusters:",
    "- name: c1",
    "  cluster:",
    `    server: ${o.server ?? "https://k8s.example:6443/"}`,
    ...(o.cluster ? o.cluster.split("\n").map((l) => `    ${l}`) : []),
    "users:",
    "- name: u1",
    "  user:",
    ...(o.user ? o.user.split("\n").map((l) => `    ${l}`) : ["    token: abc"]),
  ].join("\n");
}

describe("resolveKubeConnection", () => {
  test("in a pod: the service host and port, the mounted CA, token and namespace", async () => {
    const fs = files({
      [`${SERVICE_ACCOUNT_DIR}/ca.crt`]: "CA-PEM",
      [`${SERVICE_ACCOUNT_DIR}/token`]: "tok-1\n",
      [`${SERVICE_ACCOUNT_DIR}/namespace`]: "ml\n",
    });
    const c = await resolveKubeConnection({
      env: { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
      readFile: fs.readFile,
      parseYaml,
    });
    expect(c.server).toBe("https://10.96.0.1:443");
    expect(c.ca).toBe("CA-PEM");
    expect(c.namespace).toBe("ml");
    expect(await c.token()).toBe("tok-1");
  });

  test("in a pod, the token is read again at each call (the kubelet rotates it)", async () => {
    const map: Record<string, string> = {
      [`${SERVICE_ACCOUNT_DIR}/ca.crt`]: "CA",
      [`${SERVICE_ACCOUNT_DIR}/token`]: "first",
    };
    const fs = files(map);
    const c = await resolveKubeConnection({
      env: { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" },
      readFile: fs.readFile,
      parseYaml,
    });
    expect(c.server).toBe("https://[fd00::1]:443");
    expect(await c.token()).toBe("first");
    map[`${SERVICE_ACCOUNT_DIR}/token`] = "second";
    expect(await c.token()).toBe("second");
  });

  test("--kubeconfig wins over the in-cluster config", async () => {
    const fs = files({ "/etc/kc": kubeconfig({ namespace: "team" }) });
    const c = await resolveKubeConnection({
      kubeconfig: "/etc/kc",
      env: { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
      readFile: fs.readFile,
      parseYaml,
    });
    expect(c.server).toBe("https://k8s.example:6443");
    expect(await c.token()).toBe("abc");
    expect(c.namespace).toBe("team");
    expect(c.source).toContain("--kubeconfig /etc/kc (context dev)");
  });

  test("a kubeconfig's CA and client certificate: *-data (base64) or files relative to the kubeconfig", async () => {
    const fs = files({
      "/home/me/.kube/config": kubeconfig({
        cluster: "certificate-authority: ca.pem",
        user: `client-certificate-data: ${b64("CERT")}\nclient-key: keys/me.key`,
      }),
      "/home/me/.kube/ca.pem": "CA-FILE",
      "/home/me/.kube/keys/me.key": "KEY-FILE",
    });
    const c = await resolveKubeConnection({
      env: {},
      home: "/home/me",
      readFile: fs.readFile,
      parseYaml,
    });
    expect(c.ca).toBe("CA-FILE");
    expect(c.clientCert).toBe("CERT");
    expect(c.clientKey).toBe("KEY-FILE");
    expect(await c.token()).toBeUndefined();
  });

  test("tokenFile and insecure-skip-tls-verify", async () => {
    const fs = files({
      "/k/config": kubeconfig({
        cluster: "insecure-skip-tls-verify: true",
        user: "tokenFile: tok",
      }),
      "/k/tok": "from-file",
    });
    const c = await resolveKubeConnection({
      env: { KUBECONFIG: "/k/config" },
      readFile: fs.readFile,
      parseYaml,
    });
    expect(c.insecureSkipTlsVerify).toBe(true);
    expect(await c.token()).toBe("from-file");
  });

  test("$KUBECONFIG: the first readable file of the list", async () => {
    const fs = files({ "/b": kubeconfig({ server: "https://b:6443" }) });
    const c = await resolveKubeConnection({
      env: { KUBECONFIG: "/a:/b" },
      readFile: fs.readFile,
      parseYaml,
    });
    expect(c.server).toBe("https://b:6443");
    await expect(
      resolveKubeConnection({ env: { KUBECONFIG: "/x:/y" }, readFile: fs.readFile, parseYaml }),
    ).rejects.toThrow("$KUBECONFIG names no readable file (/x, /y)");
  });

  const refused: [string, string, string][] = [
    [
      "an exec credential plugin",
      kubeconfig({ user: "exec:\n  command: aws" }),
      "authenticates with exec, which is not supported",
    ],
    [
      "an auth-provider",
      kubeconfig({ user: "auth-provider:\n  name: gcp" }),
      "authenticates with auth-provider",
    ],
    [
      "basic authentication",
      kubeconfig({ user: "username: admin\npassword: x" }),
      "basic authentication is not supported",
    ],
    ["no current context", kubeconfig({ current: "" }), "current-context is not set"],
    ["a context that is not there", kubeconfig({ current: "prod" }), 'no context named "prod"'],
    [
      "a certificate without its key",
      kubeconfig({ user: `client-certificate-data: ${b64("C")}` }),
      "client certificate without its key",
    ],
    ["not YAML", "a: [", "not valid YAML"],
  ];
  for (const [what, text, says] of refused) {
    test(`refused with the reason: ${what}`, async () => {
      const fs = files({ "/kc": text });
      const p = resolveKubeConnection({
        kubeconfig: "/kc",
        env: {},
        readFile: fs.readFile,
        parseYaml,
      });
      await expect(p).rejects.toBeInstanceOf(KubeConfigError);
      await expect(p).rejects.toThrow(says);
    });
  }

  test("nothing anywhere: one message saying what to give", async () => {
    const fs = files({});
    await expect(
      resolveKubeConnection({ env: {}, home: "/nobody", readFile: fs.readFile, parseYaml }),
    ).rejects.toThrow("give --kubeconfig PATH");
  });

  test("in a pod without a mounted token: refused at start, naming the file", async () => {
    const fs = files({ [`${SERVICE_ACCOUNT_DIR}/ca.crt`]: "CA" });
    await expect(
      resolveKubeConnection({
        env: { KUBERNETES_SERVICE_HOST: "h", KUBERNETES_SERVICE_PORT: "443" },
        readFile: fs.readFile,
        parseYaml,
      }),
    ).rejects.toThrow(`cannot read ${SERVICE_ACCOUNT_DIR}/token`);
  });

  test("the service account's namespace, when there is one", async () => {
    expect(
      await serviceAccountNamespace(files({ [`${SERVICE_ACCOUNT_DIR}/namespace`]: "ml" }).readFile),
    ).toBe("ml");
    expect(await serviceAccountNamespace(files({}).readFile)).toBeUndefined();
  });
});
