/**
 * A fresh simulated cluster for one replay: N engine processes and one or more router
 * processes on loopback (several routers share a redis-server for sessions and active load,
 * as a deployment behind a load balancer would), started from this checkout and stopped by PID.
 */
import { spawn, type Subprocess } from "bun";
import { join } from "node:path";
import { freePorts, until } from "../../test/support/processes.ts";
import { startRedisServer, type RedisServer } from "../../test/support/redis-server.ts";

const ROOT = join(import.meta.dir, "..", "..");
const MAIN = join(ROOT, "src", "main.ts");

/** Resolves once `url`/health answers 2xx; fails at once if `proc` exits first. */
export async function waitHealthy(
  url: string,
  deadlineMs = 20_000,
  proc?: Subprocess,
): Promise<void> {
  const state = await until(
    async () =>
      proc && proc.exitCode !== null ? "exited" : (await fetch(`${url}/health`)).ok && "healthy",
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
  /** Appended to every engine's command line. */
  engineArgs?: string[];
  /** Routers in front of the same engines (> 1: they share a redis-server). Default 1. */
  routers?: number;
  quiet?: boolean;
  /** How long each process may take to answer /health (default 20 s; engines loading a tokenizer on a busy machine take longer). */
  healthDeadlineMs?: number;
}

export interface Cluster {
  /** The first router (the only one unless `routers` > 1). */
  routerUrl: string;
  routerUrls: string[];
  /** Router process ids, for their CPU time in /proc. */
  routerPids: number[];
  engineUrls: string[];
  stop(): Promise<void>;
}

/** A simulated engine restart: caches empty, KV event ids from 0 (the mocker's admin route). */
export async function restartEngine(engineUrl: string): Promise<void> {
  const res = await fetch(`${engineUrl}/admin/restart-events`, {
    method: "POST",
    signal: AbortSignal.timeout(5000),
  });
  if (!res.ok) throw new Error(`${engineUrl}: restart failed with HTTP ${res.status}`);
}

/**
 * The routers an engine pushes its KV events to. approx is the router without KV events (spec
 * §3.7: its own decisions only); our router applies events to any index that is sent them, so
 * an approx cell's engines push none, or "approx" would be kv plus its own decisions.
 */
export function eventTargetsFor(policy: string, routerUrls: readonly string[]): readonly string[] {
  return policy === "approx" ? [] : routerUrls;
}

export async function startCluster(o: ClusterOptions): Promise<Cluster> {
  const procs: Subprocess[] = [];
  const stdio = o.quiet === false ? "inherit" : "ignore";
  let redis: RedisServer | undefined;
  const stop = async () => {
    for (const p of procs) p.kill("SIGTERM");
    await Promise.all(
      procs.map((p) => Promise.race([p.exited, Bun.sleep(3000).then(() => p.kill("SIGKILL"))])),
    );
    await redis?.stop();
  };
  try {
    const nRouters = Math.max(1, o.routers ?? 1);
    // Redis first: its port is bound before the others are chosen, so none can repeat it.
    if (nRouters > 1) redis = await startRedisServer();
    // All ports at once, so no two repeat; engines need the routers' before they start.
    const ports = freePorts(o.engines + nRouters);
    const routerPorts = ports.slice(0, nRouters);
    const enginePorts = ports.slice(nRouters);
    const routerUrls = routerPorts.map((p) => `http://127.0.0.1:${p}`);
    const engineUrls: string[] = [];
    const eventTargets = eventTargetsFor(o.policy, routerUrls);
    for (let i = 0; i < o.engines; i++) {
      const port = enginePorts[i]!;
      const url = `http://127.0.0.1:${port}`;
      const p = spawn({
        cmd: [
          process.execPath,
          MAIN,
          "mocker",
          "--host",
          "127.0.0.1",
          "--port",
          String(port),
          ...eventTargets.flatMap((u) => ["--router-url", u]),
          "--block-size",
          String(o.blockSize),
          "--kv-blocks",
          String(o.kvBlocks),
          "--speedup",
          String(o.speedup),
          "--prefill-us-per-token",
          String(o.timing.prefillUsPerToken),
          "--decode-ms-per-step",
          String(o.timing.decodeMsPerStep),
          "--decode-batch-factor",
          String(o.timing.decodeBatchFactor),
          "--max-concurrency",
          String(o.timing.maxConcurrency),
          "--seed",
          String(i + 1),
          ...(o.engineArgs ?? []),
        ],
        stdout: stdio,
        stderr: stdio,
      });
      procs.push(p);
      engineUrls.push(url);
    }
    await Promise.all(
      engineUrls.map((u, i) => waitHealthy(u, o.healthDeadlineMs ?? 20_000, procs[i])),
    );
    const routers = routerPorts.map((port) => {
      const router = spawn({
        cmd: [
          process.execPath,
          MAIN,
          "serve",
          "--host",
          "127.0.0.1",
          "--port",
          String(port),
          "--policy",
          o.policy,
          "--block-size",
          String(o.blockSize),
          ...engineUrls.flatMap((u) => ["--worker", u]),
          // 1 s, not the default 50 ms: a dozen processes share this machine's 2 cores, and a
          // Redis answer late by scheduling alone would mark the store down mid-replay.
          ...(redis ? ["--redis", redis.url, "--redis-timeout", "1"] : []),
          ...(o.routerArgs ?? []),
        ],
        stdout: stdio,
        stderr: stdio,
      });
      procs.push(router);
      return router;
    });
    await Promise.all(
      routerUrls.map((u, i) => waitHealthy(u, o.healthDeadlineMs ?? 20_000, routers[i])),
    );
    return {
      routerUrl: routerUrls[0]!,
      routerUrls,
      routerPids: routers.map((r) => r.pid),
      engineUrls,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
