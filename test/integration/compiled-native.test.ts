/**
 * The single binary (`bun run compile`'s exact command, into a temporary folder) embeds the
 * native library and uses it from any directory: run from an empty folder, with nothing
 * beside it, the router logs the native block hasher (issue 10: it used to fall back to the
 * portable one), and `--version` names the commit the compile script defined. The library
 * must be built first (`bun run build:ffi`; CI does), as the compile command embeds it.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileSwitchyard } from "../support/compile.ts";
import { ROOT, until } from "../support/processes.ts";

const LIB = join(ROOT, "ffi", "build", "libswitchyard.so");
const dir = mkdtempSync(join(tmpdir(), "switchyard-native-bin-"));
let proc: ReturnType<typeof Bun.spawn> | undefined;

afterAll(async () => {
  if (proc) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

test("the compiled router loads the embedded native library from an empty folder", async () => {
  if (!existsSync(LIB))
    throw new Error(
      `${LIB} is not built: run \`bun run build:ffi\` (the compile command embeds it)`,
    );
  const bin = join(dir, "switchyard");
  const built = compileSwitchyard(bin);
  expect(built.exitCode).toBe(0);
  // The binary names the commit it was built from (src/core/build-info.ts).
  const head = Bun.spawnSync({
    cmd: ["git", "rev-parse", "--short", "HEAD"],
    cwd: ROOT,
    stdout: "pipe",
  });
  const commit = head.exitCode === 0 ? head.stdout.toString().trim() : "unknown";
  const version = Bun.spawnSync({ cmd: [bin, "--version"], stdout: "pipe" });
  expect(version.stdout.toString().trim()).toMatch(
    new RegExp(`^switchyard \\d+\\.\\d+\\.\\d+\\S* \\(${commit}, bun \\d+\\.\\d+\\.\\d+\\)$`),
  );
  const run = mkdtempSync(join(dir, "cwd-"));
  const env = { ...process.env };
  delete env.SWITCHYARD_FFI_LIB;
  const p = Bun.spawn({
    cmd: [bin, "serve", "--port", "0", "--log-level", "info"],
    cwd: run,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  proc = p;
  let err = "";
  void (async () => {
    const dec = new TextDecoder();
    for await (const c of p.stderr as ReadableStream<Uint8Array>)
      err += dec.decode(c, { stream: true });
  })().catch(() => {});
  const line = await until(
    () => err.split("\n").find((l) => l.includes("block hasher:")),
    () => `the hasher line\n${err}`,
    15_000,
  );
  expect(line).toContain("block hasher: native");
  expect(line).toContain("$bunfs");
}, 60_000);
