/**
 * `switchyard serve` refuses a start it cannot honour the way it refuses a bad flag: one
 * clean line on stderr naming what to fix, no stack trace, exit 2 — a port already in use,
 * a workers file that cannot be read or parsed, a tokenizer directory that cannot be read.
 * And what a real process does with a YAML --config, an unknown SWITCHYARD_* variable and
 * --version. Every process started here is stopped by its PID.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { MAIN, ROOT, until } from "../support/processes.ts";

const dir = mkdtempSync(join(tmpdir(), "switchyard-start-errors-"));
const started: ReturnType<typeof Bun.spawn>[] = [];
afterAll(async () => {
  for (const p of started) p.kill("SIGKILL");
  await Promise.all(started.map((p) => p.exited));
  rmSync(dir, { recursive: true, force: true });
});

/** Run `serve` to its end (bounded); its exit code and stderr. */
/**
 * The caller's environment without its SWITCHYARD_* variables: each run sees only the settings
 * the test gives it (CI itself sets SWITCHYARD_IMAGE_TEST, which the router rightly warns about,
 * and that warning would be a second stderr line here).
 */
const cleanEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith("SWITCHYARD_")),
);

async function serveFails(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stderr: string }> {
  const p = Bun.spawn({
    cmd: [process.execPath, MAIN, "serve", ...args],
    cwd: ROOT,
    env: { ...cleanEnv, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  started.push(p);
  const code = await Promise.race([p.exited, Bun.sleep(15_000).then(() => null)]);
  return { code, stderr: await new Response(p.stderr).text() };
}

/** No stack trace, no source excerpt: what Bun prints for an uncaught error. */
function expectNoStack(stderr: string): void {
  expect(stderr).not.toMatch(/^\s+at /m);
  expect(stderr).not.toMatch(/^\s*\d+ \| /m);
  expect(stderr).not.toContain("Bun v");
}

describe("start-up inputs that cannot work: one line, exit 2", () => {
  test("a port already in use (the line names --port; nothing else is printed)", async () => {
    const taken = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const { code, stderr } = await serveFails([
        "--port",
        String(taken.port),
        "--host",
        "127.0.0.1",
      ]);
      expect(code).toBe(2);
      expect(stderr.trim().split("\n")).toEqual([
        `--port ${taken.port}: 127.0.0.1:${taken.port} is already in use (another process listens there; pick another --port, or 0 for any free one)`,
      ]);
    } finally {
      taken.stop(true);
    }
  }, 20_000);

  test("a workers file that cannot be read, or does not parse", async () => {
    const missing = join(dir, "nowhere", "workers.yaml");
    const unreadable = await serveFails(["--port", "0", "--workers-file", missing]);
    expect(unreadable.code).toBe(2);
    expect(unreadable.stderr.trim().split("\n")).toHaveLength(1);
    expect(unreadable.stderr).toStartWith(`--workers-file ${missing}: cannot read (`);

    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "workers: [\n");
    const unparsable = await serveFails(["--port", "0", "--workers-file", bad]);
    expect(unparsable.code).toBe(2);
    expect(unparsable.stderr.trim().split("\n")).toHaveLength(1);
    expect(unparsable.stderr).toStartWith(`--workers-file ${bad}: not valid YAML`);

    // Read with the watch's bounds: a symlink to a device is refused unread, not read forever.
    const zero = join(dir, "zero.yaml");
    symlinkSync("/dev/zero", zero);
    const device = await serveFails(["--port", "0", "--workers-file", zero]);
    expect(device.code).toBe(2);
    expect(device.stderr.trim().split("\n")).toHaveLength(1);
    expect(device.stderr).toStartWith(`--workers-file ${zero}: cannot read (`);
    expect(device.stderr).toContain("not a regular file");
  }, 45_000);

  test("a tokenizer directory that cannot be read (the one line after the start-up log)", async () => {
    const { code, stderr } = await serveFails([
      "--port",
      "0",
      "--log-level",
      "warn",
      "--tokenizer",
      join(dir, "no-tokenizer"),
    ]);
    expect(code).toBe(2);
    expectNoStack(stderr);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toStartWith(`--tokenizer ${join(dir, "no-tokenizer")}: `);
  }, 20_000);

  test("a TLS pair that cannot be served: the file and why, exit 2, no stack", async () => {
    const cert = join(dir, "tls.crt");
    const key = join(dir, "tls.key");
    const other = join(dir, "other.key");
    const made = Bun.spawnSync({
      cmd: [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        key,
        "-out",
        cert,
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
      ],
      stderr: "pipe",
    });
    expect(made.exitCode).toBe(0);
    expect(
      Bun.spawnSync({ cmd: ["openssl", "genrsa", "-out", other, "2048"], stderr: "pipe" }).exitCode,
    ).toBe(0);
    const missing = await serveFails([
      "--port",
      "0",
      "--tls-cert",
      join(dir, "none.crt"),
      "--tls-key",
      key,
    ]);
    expect(missing.code).toBe(2);
    expectNoStack(missing.stderr);
    expect(missing.stderr).toContain(`--tls-cert ${join(dir, "none.crt")}: cannot read`);
    const mismatch = await serveFails(["--port", "0", "--tls-cert", cert, "--tls-key", other]);
    expect(mismatch.code).toBe(2);
    expect(mismatch.stderr).toContain(
      `--tls-key ${other}: not the private key of the certificate in ${cert}`,
    );
    const alone = await serveFails(["--port", "0", "--tls-cert", cert]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain("--tls-cert: needs --tls-key");
  }, 30_000);

  test("a --config file that cannot be read: the configuration error, exit 2, no stack", async () => {
    const { code, stderr } = await serveFails(["--config", join(dir, "none.yaml")]);
    expect(code).toBe(2);
    expectNoStack(stderr);
    expect(stderr).toContain(`--config ${join(dir, "none.yaml")}: cannot read`);
  }, 20_000);
});

/**
 * Start `serve` (stopped in afterAll, or by the test), collect its stderr as it comes, and wait
 * for its listening line: the process, the stderr so far, and that line.
 */
async function serveListening(args: readonly string[], env: Record<string, string> = {}) {
  const p = Bun.spawn({
    cmd: [process.execPath, MAIN, "serve", ...args],
    cwd: ROOT,
    env: { ...cleanEnv, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  started.push(p);
  let err = "";
  void (async () => {
    const dec = new TextDecoder();
    for await (const c of p.stderr) err += dec.decode(c, { stream: true });
  })().catch(() => {});
  const line = await until(
    () => err.split("\n").find((l) => l.includes("switchyard listening on")),
    () => `the listening line\n${err}`,
    15_000,
  );
  return { p, stderr: () => err, line };
}

/** Exactly one stderr line mentions `about`, and it is a WARN that says `says`. */
function expectOneWarning(stderr: string, about: string, says: string): void {
  const warnings = stderr.split("\n").filter((l) => l.includes(about));
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain("WARN");
  expect(warnings[0]).toContain(says);
}

describe("a real router process", () => {
  test("reads a YAML --config, and warns once about each unknown SWITCHYARD_* variable", async () => {
    const config = join(dir, "router.yaml");
    writeFileSync(config, "port: 0\nblock-size: 32\npolicy: round-robin\nlog-level: info\n");
    const { p, stderr, line } = await serveListening(["--config", config], {
      SWITCHYARD_BLOKC_SIZE: "64",
      SWITCHYARD_BLOCK_SIZE: "",
    });
    expect(line).toContain("block_size=32");
    expect(line).toContain("policy=round-robin");
    expectOneWarning(stderr(), "SWITCHYARD_BLOKC_SIZE", "did you mean SWITCHYARD_BLOCK_SIZE?");
    p.kill("SIGKILL");
    await p.exited;
  }, 30_000);

  test("bound to every interface, the listening line says so (not the loopback URL alone)", async () => {
    const { p, line } = await serveListening(["--port", "0", "--host", "0.0.0.0"]);
    expect(line).toMatch(
      /switchyard listening on http:\/\/0\.0\.0\.0:\d+ \(every interface; http:\/\/127\.0\.0\.1:\d+ from this host\)/,
    );
    p.kill("SIGKILL");
    await p.exited;
  }, 30_000);

  test("--burst-claims without --redis starts, and says once that it has no effect", async () => {
    const { p, stderr } = await serveListening(["--port", "0", "--burst-claims"]);
    expectOneWarning(stderr(), "--burst-claims", "has no effect without --redis");
    p.kill("SIGKILL");
    await p.exited;
  }, 30_000);

  test("--version prints the version, the commit (unknown from source) and the runtime, exit 0", () => {
    for (const args of [["--version"], ["serve", "--version"]]) {
      const r = Bun.spawnSync({ cmd: [process.execPath, MAIN, ...args], cwd: ROOT });
      expect(r.exitCode).toBe(0);
      expect(r.stdout.toString().trim()).toBe(
        `switchyard ${pkg.version} (unknown, bun ${Bun.version})`,
      );
    }
  });
});
