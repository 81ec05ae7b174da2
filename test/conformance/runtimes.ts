/**
 * How the conformance suite starts the router on each runtime, from this checkout, as an
 * operator would: Bun runs src/main.ts serve; Deno (the `deno` npm devDependency's binary)
 * runs src/runtime/deno.ts; workerd (the `workerd` npm devDependency's binary) is started by
 * src/runtime/workerd-launch.ts. Each prints {"url","port"} once listening.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { MAIN, ROOT, startCommand, type Proc } from "../support/processes.ts";

export interface Runtime {
  readonly name: "bun" | "deno" | "workerd";
  /** The command line that runs `switchyard serve` with `flags`. */
  command(flags: readonly string[]): string[];
}

/** Deno's binary from node_modules/@deno/<platform>/deno (npm's optional dependency), else the npm bin wrapper. */
export function denoBinary(): string {
  const dir = join(ROOT, "node_modules", "@deno");
  if (existsSync(dir)) {
    for (const p of readdirSync(dir)) {
      const bin = join(dir, p, "deno");
      if (existsSync(bin)) return bin;
    }
  }
  return join(ROOT, "node_modules", ".bin", "deno");
}

export const DENO_RUN = [
  "run",
  "--allow-net",
  "--allow-env",
  "--allow-read",
  "--node-modules-dir=manual",
  join(ROOT, "src", "runtime", "deno.ts"),
];

export const RUNTIMES: readonly Runtime[] = [
  { name: "bun", command: (flags) => [process.execPath, MAIN, "serve", ...flags] },
  { name: "deno", command: (flags) => [denoBinary(), ...DENO_RUN, ...flags] },
  {
    name: "workerd",
    command: (flags) => [
      process.execPath,
      join(ROOT, "src", "runtime", "workerd-launch.ts"),
      ...flags,
    ],
  },
];

/** Start the router on `rt`; Deno compiles and workerd bundles on first start, so their deadline is longer. */
export function startRouter(rt: Runtime, flags: readonly string[]): Promise<Proc> {
  return startCommand(rt.command(flags), `${rt.name} router`, rt.name === "bun" ? 15_000 : 60_000);
}
