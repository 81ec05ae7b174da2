/**
 * A fresh simulated cluster for one replay: N engine processes and one router process on
 * loopback, started from this checkout and stopped by PID.
 */
import { spawn, type Subprocess } from "bun";
import { join } from "node:path";
import { freePorts, until } from "../../test/support/processes.ts";

const ROOT = join(import.meta.dir, "..", "..");
const MAIN = join(ROOT, "src", "main.ts");

/** Resolves once `url`/health answers 2xx; fails at once if `proc` exits first. */
export async function waitHealthy(url: string, deadlineMs = 20_000, proc?: Subprocess): Promise<void> {
  const state = await until(
    async () => (proc && proc.exitCode !== null ? "exited" : (await fetch(`${url}/health`)).ok && "healthy"),
    `${url} to be healthy`,
    deadlineMs,
    50,
  );
  if (state === "exited") throw new Error(`${url}: process exited with ${proc!.exitCode}`);
}

export interface EngineTiming {
  prefillUsPerToken: number;
  decodeMsPerStep: number;
  decodeBatchFactor: number;
  maxConcurrency: number;
}

export interface ClusterOptions {
  engines: number;
  kvBlocks: number;
  blockSize: number;
  speedup: number;
  policy: string;
  timing: EngineTiming;
  routerArgs?: string[];
  quiet?: boolean;
}

export interface Cluster {
  routerUrl: string;
  engineUrls: string[];
  stop(): Promise<void>;
}

export async function startCluster(o: ClusterOptions): Promise<Cluster> {
  const procs: Subprocess[] = [];
  const stdio = o.quiet === false ? "inherit" : "ignore";
  const stop = async () => {
    for (const p of procs) p.kill("SIGTERM");
    await Promise.all(procs.map((p) => Promise.race([p.exited, Bun.sleep(3000).then(() => p.kill("SIGKILL"))])));
  };
  try {
    // All ports at once, so no two repeat; engines need the router's before it starts.
    const [routerPort, ...enginePorts] = freePorts(o.engines + 1);
    const routerUrl = `http://127.0.0.1:${routerPort}`;
    const engineUrls: string[] = [];
    for (let i = 0; i < o.engines; i++) {
      const port = enginePorts[i]!;
      const url = `http://127.0.0.1:${port}`;
      const p = spawn({
        cmd: [
          process.execPath, MAIN, "mocker", "--host", "127.0.0.1", "--port", String(port), "--router-url", routerUrl,
          "--block-size", String(o.blockSize), "--kv-blocks", String(o.kvBlocks), "--speedup", String(o.speedup),
          "--prefill-us-per-token", String(o.timing.prefillUsPerToken), "--decode-ms-per-step", String(o.timing.decodeMsPerStep),
          "--decode-batch-factor", String(o.timing.decodeBatchFactor), "--max-concurrency", String(o.timing.maxConcurrency),
          "--seed", String(i + 1),
        ],
        stdout: stdio, stderr: stdio,
      });
      procs.push(p);
      engineUrls.push(url);
    }
    await Promise.all(engineUrls.map((u, i) => waitHealthy(u, 20_000, procs[i])));
    const router = spawn({
      cmd: [
        process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", String(routerPort), "--policy", o.policy,
        "--block-size", String(o.blockSize), ...engineUrls.flatMap((u) => ["--worker", u]), ...(o.routerArgs ?? []),
      ],
      stdout: stdio, stderr: stdio,
    });
    procs.push(router);
    await waitHealthy(routerUrl, 20_000, router);
    return { routerUrl, engineUrls, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
