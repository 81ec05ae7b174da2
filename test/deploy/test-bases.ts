/**
 * The Debian-made base images the container tests build on (no image registry where they
 * run): deploy/image/debian-bases.sh's two bases, kept between runs under a tag keyed by
 * the script's content and Bun's version, so a second run skips the minutes they take.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");

export interface TestBases {
  readonly runtime: string;
  readonly build: string;
  /** The key both tags carry; images made from the bases can key on it too. */
  readonly key: string;
}

export function testBaseTags(): TestBases {
  const key = createHash("sha256")
    .update(readFileSync(join(ROOT, "deploy/image/debian-bases.sh")))
    .update(Bun.version)
    .digest("hex")
    .slice(0, 12);
  return {
    runtime: `localhost/switchyard-test-base/runtime:${key}`,
    build: `localhost/switchyard-test-base/build:${key}`,
    key,
  };
}

/** Run a command with a deadline (SIGKILL at it); never hangs the suite. */
export async function runWithDeadline(
  cmd: readonly string[],
  env: Record<string, string | undefined>,
  deadlineMs: number,
): Promise<{ code: number; out: string; err: string }> {
  let proc;
  try {
    proc = Bun.spawn({
      cmd: [...cmd],
      env,
      cwd: ROOT,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
  } catch (e) {
    return { code: 127, out: "", err: `${cmd[0]}: ${(e as Error).message}` }; // not installed
  }
  const timer = setTimeout(() => proc.kill("SIGKILL"), deadlineMs);
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { code, out, err };
}

/** Make both bases unless podman already has them (debian-bases.sh: mmdebstrap, minutes). */
export async function ensureTestBases(
  env: Record<string, string | undefined>,
): Promise<TestBases & { madeS?: number }> {
  const bases = testBaseTags();
  const have = await Promise.all(
    [bases.runtime, bases.build].map((t) =>
      runWithDeadline(["podman", "image", "exists", t], env, 60_000),
    ),
  );
  if (have.every((r) => r.code === 0)) return bases;
  const t0 = performance.now();
  const r = await runWithDeadline(
    ["bash", join(ROOT, "deploy/image/debian-bases.sh"), bases.runtime, bases.build],
    env,
    10 * 60_000,
  );
  if (r.code !== 0)
    throw new Error(`debian-bases.sh exited ${r.code}\n${r.err.slice(-4000)}${r.out.slice(-2000)}`);
  return { ...bases, madeS: (performance.now() - t0) / 1000 };
}
