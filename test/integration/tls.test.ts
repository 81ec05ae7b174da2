/**
 * The router serving TLS itself (--tls-cert, --tls-key), with a real chain made here by openssl:
 * a CA, and a server certificate it signed for localhost and 127.0.0.1. The official OpenAI
 * clients accept it when told to trust the CA, and refuse it when not (so the chain really is
 * checked): Python's `openai` (installed into a venv from the local wheel index) and the npm
 * `openai` package run under Node with NODE_EXTRA_CA_CERTS. Then the files change under the
 * running process: a renewed certificate is served to new connections without a restart, and
 * a key that does not match keeps the previous certificate, with one error in the log.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, startMain, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(60_000);

const dir = mkdtempSync(join(tmpdir(), "switchyard-tls-"));
const CLIENTS = join(ROOT, "test/support/openai-clients");

function sh(cmd: string[], env: Record<string, string> = {}): { code: number; out: string } {
  const p = Bun.spawnSync({
    cmd,
    cwd: dir,
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: p.exitCode, out: `${p.stdout.toString()}${p.stderr.toString()}` };
}

function must(cmd: string[]): void {
  const r = sh(cmd);
  if (r.code !== 0) throw new Error(`${cmd.join(" ")} failed (${r.code}): ${r.out}`);
}

/** A server key and a certificate the test CA signed for localhost and 127.0.0.1. */
function serverPair(name: string, org: string): void {
  must([
    "openssl",
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    `/O=${org}/CN=localhost`,
  ]);
  must([
    "openssl",
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-extfile",
    "san.cnf",
  ]);
}

must([
  "openssl",
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
  "2",
  "-subj",
  "/CN=Switchyard Test CA",
]);
writeFileSync(join(dir, "san.cnf"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
serverPair("first", "first");
serverPair("renewed", "renewed");
serverPair("other", "other");
const CA = join(dir, "ca.crt");
const CERT = join(dir, "tls.crt");
const KEY = join(dir, "tls.key");
writeFileSync(CERT, readFileSync(join(dir, "first.crt")));
writeFileSync(KEY, readFileSync(join(dir, "first.key")));

/** Python's openai in a venv from the local wheel index, or why not. */
function pythonOpenai(): { python: string } | { missing: string } {
  const venv = join(dir, "venv");
  const made = sh(["python3", "-m", "venv", venv]);
  if (made.code !== 0)
    return { missing: `python3 -m venv failed: ${made.out.trim().split("\n").pop()}` };
  const pip = sh([join(venv, "bin/pip"), "install", "--retries", "0", "--timeout", "2", "openai"]);
  if (pip.code !== 0)
    return {
      missing: `pip install openai failed (no wheel index?): ${pip.out.trim().split("\n").pop()}`,
    };
  return { python: join(venv, "bin/python") };
}
const py = pythonOpenai();
const node = Bun.which("node");

let router: Proc | undefined;
let url = "";

beforeAll(async () => {
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--engines",
    "1",
    "--tls-cert",
    CERT,
    "--tls-key",
    KEY,
  ]);
  url = String(router.info.url);
});

afterAll(async () => {
  await router?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a client script; its JSON line and exit code. */
async function client(
  cmd: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; body: Record<string, unknown> }> {
  const p = Bun.spawn({
    cmd,
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(p.stdout).text(),
    new Response(p.stderr).text(),
    p.exited,
  ]);
  const line = out.split("\n").find((l) => l.startsWith("{"));
  if (line === undefined)
    throw new Error(`${cmd.join(" ")}: no JSON line (exit ${code})\n${out}\n${err}`);
  return { code, body: JSON.parse(line) as Record<string, unknown> };
}

/** The serial number of the certificate a new connection is served (trusting the test CA). */
function servedSerial(): Promise<string> {
  const port = Number(new URL(url).port);
  return new Promise((resolve, reject) => {
    const s = connect(
      { host: "127.0.0.1", port, ca: readFileSync(CA), servername: "localhost" },
      () => {
        const serial = s.getPeerCertificate().serialNumber;
        s.end();
        resolve(serial);
      },
    );
    s.on("error", reject);
  });
}

const serialOf = (name: string) =>
  sh(["openssl", "x509", "-in", `${name}.crt`, "-noout", "-serial"])
    .out.trim()
    .replace(/^serial=/, "")
    .toUpperCase();

describe("the router serving TLS", () => {
  test("it says https, and serves the certificate it was given", async () => {
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect((await servedSerial()).toUpperCase()).toBe(serialOf("first"));
    expect(router!.output()).toContain("switchyard listening on https://127.0.0.1:");
  });

  test.skipIf("missing" in py)(
    `Python's openai client accepts the chain with the CA, refuses it without${"missing" in py ? ` (skipped: ${py.missing})` : ""}`,
    async () => {
      const python = (py as { python: string }).python;
      const ok = await client([python, join(CLIENTS, "chat.py"), `${url}/v1`, CA]);
      expect(ok.code).toBe(0);
      expect(ok.body.client).toStartWith("python openai");
      expect(ok.body.usage).toBe(4);
      expect(String(ok.body.text).length).toBeGreaterThan(0);
      expect(String(ok.body.streamed).length).toBeGreaterThan(0);
      const untrusted = await client([python, join(CLIENTS, "chat.py"), `${url}/v1`, "-"]);
      expect(untrusted.code).toBe(3);
      expect(String(untrusted.body.error)).toContain("CERTIFICATE_VERIFY_FAILED");
    },
  );

  test.skipIf(node === null)(
    `the npm openai client (under Node) accepts the chain with NODE_EXTRA_CA_CERTS, refuses it without${node === null ? " (skipped: no node)" : ""}`,
    async () => {
      const ok = await client(
        [node!, join(CLIENTS, "chat.mjs"), `${url.replace("127.0.0.1", "localhost")}/v1`],
        { NODE_EXTRA_CA_CERTS: CA },
      );
      expect(ok.code).toBe(0);
      expect(ok.body.usage).toBe(4);
      expect(String(ok.body.streamed).length).toBeGreaterThan(0);
      const untrusted = await client([node!, join(CLIENTS, "chat.mjs"), `${url}/v1`], {
        NODE_EXTRA_CA_CERTS: "",
      });
      expect(untrusted.code).toBe(3);
      expect(String(untrusted.body.error)).toContain("verify");
    },
  );

  test("a renewed certificate is served to new connections without a restart", async () => {
    const pid = router!.pid;
    // As a renewal writes them: the certificate first, its key a moment later (a mismatched pair meanwhile).
    writeFileSync(join(dir, "tls.crt.tmp"), readFileSync(join(dir, "renewed.crt")));
    renameSync(join(dir, "tls.crt.tmp"), CERT);
    writeFileSync(join(dir, "tls.key.tmp"), readFileSync(join(dir, "renewed.key")));
    renameSync(join(dir, "tls.key.tmp"), KEY);
    await until(
      async () => (await servedSerial()).toUpperCase() === serialOf("renewed"),
      "the renewed certificate served",
      15_000,
      100,
    );
    expect(router!.proc.exitCode).toBeNull();
    expect(router!.pid).toBe(pid);
    expect(router!.output()).toContain("TLS: certificate reloaded");
    const r = await fetch(`${url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "after the renewal", max_tokens: 2 }),
      tls: { ca: readFileSync(CA, "utf8") },
    });
    expect(r.status).toBe(200);
  });

  test("a key that is not the certificate's keeps the previous certificate, with one error", async () => {
    writeFileSync(join(dir, "tls.key.tmp"), readFileSync(join(dir, "other.key")));
    renameSync(join(dir, "tls.key.tmp"), KEY);
    await until(
      () => router!.output().includes("not the private key of the certificate"),
      "the mismatch logged",
      15_000,
      100,
    );
    expect((await servedSerial()).toUpperCase()).toBe(serialOf("renewed"));
    expect(
      router!
        .output()
        .split("\n")
        .filter((l) => l.includes("not the private key")).length,
    ).toBe(1);
    expect(router!.output()).toContain("still serving the previous certificate");
  });
});
