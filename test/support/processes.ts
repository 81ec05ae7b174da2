/**
 * Real processes for integration tests: `bun src/main.ts <command> …` started from this
 * checkout, its first stdout JSON line read as its address, stdout/stderr kept for failure
 * messages, and every process stopped by PID. Also: a free port, and polling with a deadline.
 * With SWITCHYARD_TEST_TRUTH_LOG=FILE, the cache check's state changes of each stopped process go to FILE.
 */
import type { Subprocess } from "bun";
import { appendFileSync } from "node:fs";
import { join } from "node:path";

export const ROOT = join(import.meta.dir, "..", "..");
export const MAIN = join(ROOT, "src", "main.ts");

/** A TCP port nobody listens on right now (the OS picks it). */
export function freePort(): number {
  return freePorts(1)[0]!;
}

/**
 * `n` distinct loopback ports nobody listens on right now. All probes stay open until all
 * are chosen, so no two repeat (e.g. routers' ports, chosen before the engines that need them).
 */
export function freePorts(n: number): number[] {
  const probes = Array.from({ length: n }, () =>
    Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } }),
  );
  const ports = probes.map((p) => p.port);
  for (const p of probes) p.stop(true);
  return ports;
}

/** Poll `cond` every `everyMs` until it returns a truthy value or the deadline passes. */
export async function until<T>(
  cond: () => T | Promise<T>,
  what: string | (() => string),
  deadlineMs = 10_000,
  everyMs = 10,
): Promise<NonNullable<T>> {
  const end = performance.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await cond();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (performance.now() > end) {
      const label = typeof what === "string" ? what : what();
      throw new Error(
        `timed out after ${deadlineMs} ms waiting for ${label}${last ? ` (last error: ${String(last)})` : ""}`,
      );
    }
    await Bun.sleep(everyMs);
  }
}

export interface Proc {
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly pid: number;
  /** The first JSON line the process printed on stdout. */
  readonly info: Record<string, unknown>;
  /** Everything it wrote so far (for failure messages). */
  output(): string;
  /** SIGTERM, then SIGKILL after a deadline; resolves when it exited. */
  stop(): Promise<void>;
}

async function drain(stream: ReadableStream<Uint8Array>, sink: (s: string) => void): Promise<void> {
  const dec = new TextDecoder();
  for await (const chunk of stream) sink(dec.decode(chunk, { stream: true }));
}

/** Start `bun src/main.ts ...args` and wait for its JSON address line. */
export function startMain(args: readonly string[], deadlineMs = 15_000): Promise<Proc> {
  return startCommand([process.execPath, MAIN, ...args], args[0] ?? "main", deadlineMs);
}

/** Start any command from the checkout (another runtime's entry) and wait for its JSON address line. */
export async function startCommand(
  cmd: readonly string[],
  label: string,
  deadlineMs = 15_000,
): Promise<Proc> {
  const proc = Bun.spawn({
    cmd: [...cmd],
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  let err = "";
  void drain(proc.stdout, (s) => (out += s)).catch(() => {});
  void drain(proc.stderr, (s) => (err += s)).catch(() => {});
  const output = () => `--- stdout\n${out}\n--- stderr\n${err}`;
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill("SIGTERM");
    const killed = await Promise.race([
      proc.exited.then(() => true),
      Bun.sleep(3_000).then(() => false),
    ]);
    if (!killed) {
      proc.kill("SIGKILL");
      await proc.exited;
    }
    noteTruthTransitions(cmd, `${out}\n${err}`);
  };
  const end = performance.now() + deadlineMs;
  for (;;) {
    const line = out.split("\n").find((l) => l.startsWith("{") && l.endsWith("}"));
    if (line !== undefined)
      return {
        proc,
        pid: proc.pid,
        info: JSON.parse(line) as Record<string, unknown>,
        output,
        stop,
      };
    if (proc.exitCode !== null || performance.now() > end) {
      await stop();
      throw new Error(
        `${label} did not print its address (exit code ${proc.exitCode})\n${output()}`,
      );
    }
    await Bun.sleep(10);
  }
}

/** A router's cache-check state change, as its log writes it (src/fleet/cache-truth/tracker.ts). */
const TRUTH_TRANSITION =
  /cache truth: worker \S+ dp rank \d+ (exact|degraded|blind) -> (exact|degraded|blind)[^\n]*/g;

/**
 * With SWITCHYARD_TEST_TRUTH_LOG=FILE, every stopped process's cache-check transitions are appended
 * to FILE (one line each, with the time it stopped and its command; `bun test` runs many files in
 * one process, so the file is not known here): a run of the integration tests says whether the
 * check raised an alarm where no fault was injected, without reading every log.
 */
function noteTruthTransitions(cmd: readonly string[], output: string): void {
  const file = process.env.SWITCHYARD_TEST_TRUTH_LOG;
  if (file === undefined || file === "" || !output.includes("cache truth: worker")) return;
  const lines = [...output.matchAll(TRUTH_TRANSITION)].map(
    (m) => `${new Date().toISOString()} | ${cmd.slice(2, 5).join(" ")} | ${m[0].slice(0, 400)}`,
  );
  if (lines.length > 0) appendFileSync(file, `${lines.join("\n")}\n`);
}

/** Stop every process (in parallel); never throws. */
export async function stopAll(procs: readonly (Proc | undefined)[]): Promise<void> {
  await Promise.all(procs.map((p) => p?.stop().catch(() => {})));
}
