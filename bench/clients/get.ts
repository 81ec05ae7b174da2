/**
 * `bun bench/clients/get.ts --sglang PATH --vllm PATH`: puts the pinned benchmark clients
 * (pins.ts) where bench:clients runs them, outside the repository (CACHE_DIR, default
 * ~/.cache/switchyard/bench-clients), and makes their Python venv from the local wheel index.
 *
 * PATH is either a git checkout of the project (the file is read at the pinned commit with `git
 * show COMMIT:PATH`, so any branch may be checked out) or a folder holding the files themselves
 * (bench_serving.py; benchmark_serving_multi_turn.py, bench_dataset.py, bench_utils.py). Every
 * file must have the pinned SHA-256: a different text is refused, never run. Either flag may be
 * left out to fetch one client only. Also written: a stand-in `vllm.benchmarks.lib.utils` with
 * `redact_sensitive_namespace` (later versions of vLLM's client import it; vllm itself does not
 * install here), and the venv (`python3 -m venv`, then pip with the packages of pins.ts).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";
import {
  CACHE_DIR,
  CLIENTS,
  clientDir,
  PACKAGES,
  type PinnedClient,
  shimDir,
  venvPython,
} from "./pins.ts";

const SHIM = `"""Stand-in for vllm.benchmarks.lib.utils (vllm is not installed): what the multi-turn client imports."""
import argparse


def redact_sensitive_namespace(namespace, fields=("api_key",)):
    """A copy of the namespace with the named fields' values replaced, for logging."""
    values = dict(vars(namespace))
    for name in fields:
        if values.get(name) is not None:
            values[name] = "***"
    return argparse.Namespace(**values)
`;

function sha256(text: Uint8Array): string {
  return createHash("sha256").update(text).digest("hex");
}

function readPinned(c: PinnedClient, source: string, path: string): Uint8Array {
  if (existsSync(join(source, ".git")) || existsSync(join(source, "HEAD"))) {
    const r = Bun.spawnSync({
      cmd: ["git", "-C", source, "show", `${c.commit}:${path}`],
      stdout: "pipe",
      stderr: "pipe",
    });
    if (r.exitCode !== 0)
      throw new Error(
        `${source}: no ${path} at ${c.commit} (${r.stderr.toString().trim()}); fetch that commit of ${c.repo} first`,
      );
    return r.stdout;
  }
  const file = join(source, basename(path));
  if (!existsSync(file))
    throw new Error(`${source}: neither a git checkout nor a folder with ${basename(path)}`);
  return readFileSync(file);
}

export function install(c: PinnedClient, source: string): void {
  if (!existsSync(source) || !statSync(source).isDirectory())
    throw new Error(`--${c.name}: ${source} is not a folder`);
  const dir = clientDir(c);
  mkdirSync(dir, { recursive: true });
  for (const f of c.files) {
    const text = readPinned(c, source, f.path);
    const got = sha256(text);
    if (got !== f.sha256)
      throw new Error(
        `${c.repo} ${f.path}: SHA-256 ${got}, pinned ${f.sha256} (commit ${c.commit}): not the pinned text`,
      );
    writeFileSync(join(dir, basename(f.path)), text);
  }
  console.log(
    `${c.name}: ${c.files.length} file(s) of ${c.repo}@${c.commit.slice(0, 12)} -> ${dir}`,
  );
}

export function ensureVenv(): void {
  const shim = join(shimDir(), "vllm", "benchmarks", "lib");
  mkdirSync(shim, { recursive: true });
  for (const d of ["vllm", "vllm/benchmarks", "vllm/benchmarks/lib"])
    writeFileSync(join(shimDir(), d, "__init__.py"), "");
  writeFileSync(join(shim, "utils.py"), SHIM);
  if (existsSync(venvPython())) return;
  const venv = join(CACHE_DIR, "venv");
  for (const cmd of [
    ["python3", "-m", "venv", venv],
    [join(venv, "bin", "pip"), "install", "--retries", "0", "--timeout", "2", ...PACKAGES],
  ]) {
    console.log(`$ ${cmd.join(" ")}`);
    const r = Bun.spawnSync({ cmd, stdout: "inherit", stderr: "inherit" });
    if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed with ${r.exitCode}`);
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: { sglang: { type: "string" }, vllm: { type: "string" }, help: { type: "boolean" } },
  });
  if (values.help || (values.sglang === undefined && values.vllm === undefined)) {
    console.log(
      "usage: bun bench/clients/get.ts [--sglang SGLANG_CHECKOUT_OR_FOLDER] [--vllm VLLM_CHECKOUT_OR_FOLDER]",
    );
    for (const c of CLIENTS)
      console.log(`  ${c.repo} @ ${c.commit}: ${c.files.map((f) => f.path).join(", ")}`);
    process.exit(values.help ? 0 : 2);
  }
  for (const c of CLIENTS) {
    const source = values[c.name];
    if (source !== undefined) install(c, source);
  }
  ensureVenv();
}
