/**
 * The single binary built by the package's own `compile` script, with only the output moved:
 * run through a shell, as `bun run compile` runs it (the commit it defines is a command
 * substitution), with this Bun in place of the `bun` on PATH.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./processes.ts";

export function compileSwitchyard(outfile: string): {
  readonly exitCode: number;
  readonly stderr: string;
  readonly script: string;
} {
  const script = (
    JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: { compile: string } }
  ).scripts.compile;
  if (!script.startsWith("bun "))
    throw new Error(`the compile script does not start with bun: ${script}`);
  const cmd = `'${process.execPath}' ${script.slice("bun ".length).replace("dist/switchyard", `'${outfile}'`)}`;
  const built = Bun.spawnSync({
    cmd: ["sh", "-c", cmd],
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  return { exitCode: built.exitCode, stderr: built.stderr.toString(), script };
}
