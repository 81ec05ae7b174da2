/**
 * The API client against the stand-in API server (a real HTTP server on a free port), and
 * against small servers that misbehave on purpose (a line split across chunks, a line that is
 * not an event, an HTTPS server signed by a cluster CA).
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  KubeApi,
  KubeApiError,
  WatchProtocolError,
  type WatchEvent,
} from "../../../../src/fleet/discovery/kube-api.ts";
import { StandInKubeApiserver } from "../../../support/stand-in-kube-apiserver.ts";

const servers: { stop(force?: boolean): void }[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true);
});

function standIn(
  o: ConstructorParameters<typeof StandInKubeApiserver>[0] = {},
): StandInKubeApiserver {
  const s = StandInKubeApiserver.start(o);
  servers.push({ stop: () => s.kill() });
  return s;
}

function client(
  server: string,
  token?: string,
  fetcher: (u: string, i: RequestInit) => Promise<Response> = (u, i) => fetch(u, i),
): KubeApi {
  return new KubeApi({ server, fetch: fetcher, token: async () => token });
}

/** Read `n` events from a watch, then stop it. */
async function take(events: AsyncIterable<WatchEvent>, n: number): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  if (n === 0) return out;
  for await (const e of events) {
    out.push(e);
    if (out.length === n) break;
  }
  return out;
}

describe("KubeApi against the stand-in API server", () => {
  test("list: an answer past maxListBytes is refused with a protocol error, not held", async () => {
    const api = standIn();
    for (let i = 0; i < 20; i++)
      api.createPod({ name: `pod-${i}`, labels: { app: "vllm" }, ip: "10.0.0.1" });
    const small = new KubeApi({
      server: api.url,
      fetch: (u, i) => fetch(u, i),
      token: async () => undefined,
      maxListBytes: 1024,
    });
    await expect(small.listPods("default", "app=vllm")).rejects.toThrow(/larger than 1024 bytes/);
    const roomy = new KubeApi({
      server: api.url,
      fetch: (u, i) => fetch(u, i),
      token: async () => undefined,
      maxListBytes: 1024 * 1024,
    });
    expect((await roomy.listPods("default", "app=vllm")).items.length).toBe(20);
  });

  test("list: the selected pods and the list's resourceVersion; the token is sent", async () => {
    const api = standIn({ token: "s3cret" });
    api.createPod({ name: "a", namespace: "ml", labels: { app: "vllm" }, ip: "10.0.0.1" });
    api.createPod({ name: "b", namespace: "ml", labels: { app: "other" }, ip: "10.0.0.2" });
    api.createPod({ name: "c", namespace: "elsewhere", labels: { app: "vllm" }, ip: "10.0.0.3" });
    const list = await client(api.url, "s3cret").listPods("ml", "app=vllm");
    expect(list.items.map((p) => (p.metadata as { name: string }).name)).toEqual(["a"]);
    expect(list.resourceVersion).toBe(api.resourceVersion);
    expect(api.requests.at(-1)).toMatchObject({
      path: "/api/v1/namespaces/ml/pods",
      query: { labelSelector: "app=vllm" },
      authorization: "Bearer s3cret",
    });
  });

  test("the stand-in's label selectors: equality, inequality, existence, sets (a list is what a selector matches)", async () => {
    const api = standIn();
    const pods: [string, Record<string, string>][] = [
      ["a", { app: "vllm", tier: "gold" }],
      ["b", { app: "vllm", tier: "silver", canary: "yes" }],
      ["c", { app: "vllm" }],
      ["d", { app: "sglang", tier: "gold" }],
    ];
    for (const [name, labels] of pods) api.createPod({ name, labels, ip: "10.0.0.1" });
    const names = async (sel: string) =>
      (await client(api.url).listPods("default", sel)).items
        .map((p) => (p.metadata as { name: string }).name)
        .sort();
    expect(await names("")).toEqual(["a", "b", "c", "d"]);
    expect(await names("app==vllm,tier")).toEqual(["a", "b"]);
    expect(await names("app=vllm,!canary")).toEqual(["a", "c"]);
    expect(await names("tier!=gold")).toEqual(["b", "c"]);
    expect(await names("tier in (gold, silver),app notin (sglang)")).toEqual(["a", "b"]);
    expect(await names("tier notin (gold)")).toEqual(["b", "c"]);
  });

  test("an answer that is not 2xx is a KubeApiError with the Status' reason and message", async () => {
    const api = standIn({ token: "s3cret", namespaces: ["ml"] });
    const noToken = client(api.url).listPods("ml", "");
    await expect(noToken).rejects.toBeInstanceOf(KubeApiError);
    await expect(noToken).rejects.toMatchObject({ status: 401, reason: "Unauthorized" });
    const forbidden = client(api.url, "s3cret").listPods("kube-system", "");
    await expect(forbidden).rejects.toMatchObject({ status: 403, reason: "Forbidden" });
    await expect(forbidden).rejects.toThrow(
      'cannot list resource "pods" in API group "" in the namespace "kube-system"',
    );
    await expect(client(api.url, "s3cret").listPods("ml", "a in (")).rejects.toMatchObject({
      status: 400,
    });
  });

  test("watch from a version: the changes after it, bookmarks asked for and sent", async () => {
    const api = standIn({ bookmarkEveryMs: 0 });
    api.createPod({ name: "a", labels: { app: "vllm" }, ip: "10.0.0.1" });
    const rv = api.resourceVersion;
    api.setReady("a", false);
    const events = await client(api.url).watchPods("default", {
      labelSelector: "app=vllm",
      resourceVersion: rv,
      timeoutSeconds: 60,
    });
    expect(api.requests.at(-1)!.query).toMatchObject({
      watch: "1",
      resourceVersion: rv,
      allowWatchBookmarks: "true",
      timeoutSeconds: "60",
    });
    const it = events[Symbol.asyncIterator]();
    const first = (await it.next()).value as WatchEvent;
    expect(first.type).toBe("MODIFIED");
    api.bookmark();
    const second = (await it.next()).value as WatchEvent;
    expect(second).toEqual({
      type: "BOOKMARK",
      object: { kind: "Pod", apiVersion: "v1", metadata: { resourceVersion: api.resourceVersion } },
    });
    await it.return?.();
  });

  test("a watch that the server ends (timeoutSeconds) ends the events", async () => {
    const api = standIn({ bookmarkEveryMs: 0 });
    api.createPod({ name: "a", ip: "10.0.0.1" });
    const events = await client(api.url).watchPods("default", {
      labelSelector: "",
      resourceVersion: api.resourceVersion,
      timeoutSeconds: 1,
    });
    const got = await take(events, 10);
    expect(got).toEqual([]);
  });

  test("an ERROR event with a Status of code 410 for a version the server no longer has", async () => {
    const api = standIn({ bookmarkEveryMs: 0 });
    api.createPod({ name: "a", ip: "10.0.0.1" });
    const old = api.resourceVersion;
    api.setReady("a", false);
    api.compact();
    const [e] = await take(
      await client(api.url).watchPods("default", {
        labelSelector: "",
        resourceVersion: old,
        timeoutSeconds: 60,
      }),
      1,
    );
    expect(e!.type).toBe("ERROR");
    expect(e!.object).toMatchObject({ kind: "Status", code: 410, reason: "Expired" });
  });

  test("or an HTTP 410, as a KubeApiError", async () => {
    const api = standIn({ goneAs: "http" });
    api.createPod({ name: "a", ip: "10.0.0.1" });
    const old = api.resourceVersion;
    api.setReady("a", false);
    api.compact();
    await expect(
      client(api.url).watchPods("default", {
        labelSelector: "",
        resourceVersion: old,
        timeoutSeconds: 60,
      }),
    ).rejects.toMatchObject({ status: 410 });
  });
});

describe("KubeApi reading a watch stream", () => {
  function rawServer(chunks: readonly string[]): string {
    const s = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response(
          new ReadableStream({
            async start(c) {
              for (const ch of chunks) {
                c.enqueue(new TextEncoder().encode(ch));
                await Bun.sleep(1); // separate writes, so the client sees separate chunks
              }
              c.close();
            },
          }),
        ),
    });
    servers.push(s);
    return `http://127.0.0.1:${s.port}`;
  }

  test("an event split across chunks, several in one chunk, and a last line without a newline", async () => {
    const a = JSON.stringify({
      type: "ADDED",
      object: { metadata: { name: "a", resourceVersion: "5" } },
    });
    const b = JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: "6" } } });
    const c = JSON.stringify({
      type: "DELETED",
      object: { metadata: { name: "a", resourceVersion: "7" } },
    });
    const url = rawServer([a.slice(0, 10), `${a.slice(10)}\n${b}\n`, c]);
    const got = await take(
      await client(url).watchPods("default", {
        labelSelector: "",
        resourceVersion: "4",
        timeoutSeconds: 60,
      }),
      3,
    );
    expect(got.map((e) => e.type)).toEqual(["ADDED", "BOOKMARK", "DELETED"]);
  });

  test("a line that is not an event is an error, not skipped", async () => {
    const url = rawServer([
      `${JSON.stringify({ type: "ADDED", object: { metadata: {} } })}\n`,
      "<html>proxy error</html>\n",
    ]);
    const events = await client(url).watchPods("default", {
      labelSelector: "",
      resourceVersion: "1",
      timeoutSeconds: 60,
    });
    await expect(take(events, 2)).rejects.toBeInstanceOf(WatchProtocolError);
  });
});

describe("KubeApi over HTTPS with the cluster's CA (the in-cluster path)", () => {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-kube-tls-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const ssl = (args: string[]) => Bun.spawnSync(["openssl", ...args], { cwd: dir, stderr: "pipe" });
  const haveOpenssl = Bun.which("openssl") !== null;

  test.skipIf(!haveOpenssl)(
    "a server certificate signed by the CA is trusted with the CA (Bun's fetch `tls.ca`) and refused without it",
    async () => {
      expect(
        ssl([
          "req",
          "-x509",
          "-newkey",
          "rsa:2048",
          "-nodes",
          "-keyout",
          "ca.key",
          "-out",
          "ca.crt",
          "-days",
          "1",
          "-subj",
          "/CN=cluster-ca",
        ]).exitCode,
      ).toBe(0);
      expect(
        ssl([
          "req",
          "-newkey",
          "rsa:2048",
          "-nodes",
          "-keyout",
          "srv.key",
          "-out",
          "srv.csr",
          "-subj",
          "/CN=kubernetes",
        ]).exitCode,
      ).toBe(0);
      writeFileSync(join(dir, "ext.cnf"), "subjectAltName=IP:127.0.0.1\n");
      expect(
        ssl([
          "x509",
          "-req",
          "-in",
          "srv.csr",
          "-CA",
          "ca.crt",
          "-CAkey",
          "ca.key",
          "-CAcreateserial",
          "-out",
          "srv.crt",
          "-days",
          "1",
          "-extfile",
          "ext.cnf",
        ]).exitCode,
      ).toBe(0);
      const read = (f: string) => readFileSync(join(dir, f), "utf8");
      const api = standIn({ tls: { cert: read("srv.crt"), key: read("srv.key") }, token: "t" });
      api.createPod({ name: "a", ip: "10.0.0.1" });
      const ca = read("ca.crt");
      const trusting = client(api.url, "t", (u, i) =>
        fetch(u, { ...i, tls: { ca } } as RequestInit),
      );
      expect((await trusting.listPods("default", "")).items.length).toBe(1);
      const [e] = await take(
        await trusting.watchPods("default", {
          labelSelector: "",
          resourceVersion: "0",
          timeoutSeconds: 60,
        }),
        1,
      );
      expect(e!.type).toBe("ADDED");
      await expect(client(api.url, "t").listPods("default", "")).rejects.toThrow();
    },
  );
});
