/**
 * Python's official `openai` client in a venv made from the machine's local wheel index (PyPI is
 * not reachable here: /work/shared/NOTES-toolchain.md), or why there is none, so a test can skip
 * with the reason. `--retries 0 --timeout 2`: pip would otherwise retry the unreachable index for
 * minutes.
 */
import { join } from "node:path";

export function pythonOpenai(dir: string): { python: string } | { missing: string } {
  const sh = (cmd: string[]) => {
    const p = Bun.spawnSync({ cmd, cwd: dir, stdout: "pipe", stderr: "pipe" });
    return { code: p.exitCode, out: `${p.stdout.toString()}${p.stderr.toString()}` };
  };
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
