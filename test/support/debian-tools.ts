/**
 * Debian's observability tools the tests drive (prometheus, promtool, chromium): where they
 * are, and why a test that needs one cannot run here. .ci/run installs them; a developer
 * machine without them skips those tests with the reason printed.
 */
import { existsSync } from "node:fs";

export const PROMTOOL = "/usr/bin/promtool";
export const PROMETHEUS = "/usr/bin/prometheus";
export const CHROMIUM = "/usr/bin/chromium";

/** Why `bin` cannot be used here (printed by the skipped test), or undefined when it can. */
export function missingTool(bin: string, pkg: string): string | undefined {
  if (existsSync(bin)) return undefined;
  const reason = `${bin} is not installed (apt-get install -y ${pkg}; .ci/run does)`;
  console.warn(`skipped: ${reason}`);
  return reason;
}

/** Run a tool to completion with `stdin`; its exit code and output. */
export function runTool(cmd: readonly string[], stdin?: string): { code: number; out: string } {
  const r = Bun.spawnSync({
    cmd: [...cmd],
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode ?? -1, out: `${r.stdout.toString()}${r.stderr.toString()}` };
}
