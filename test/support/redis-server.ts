/**
 * A real redis-server for tests: on 127.0.0.1, a port free at run time, no persistence.
 * Stopped by PID; `restart()` brings it back on the same port (for "Redis went away" tests).
 * If redis-server is not installed the start fails with a message saying so: the Redis tests
 * must fail, not skip (CI installs it).
 */
import { RedisClient, type Subprocess } from "bun";
import { freePort } from "./processes.ts";

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** PID of the running server; undefined while stopped. */
  readonly pid: number | undefined;
  /** Kill the server (SIGTERM, then SIGKILL after a deadline) and wait for it to exit. */
  stop(): Promise<void>;
  /** Start it again on the same port and wait until it answers PING. */
  restart(): Promise<void>;
}

const START_DEADLINE_MS = 10_000;

export function redisServerPath(): string {
  const path = Bun.which("redis-server");
  if (!path) {
    throw new Error(
      "redis-server is not installed (not on PATH). The Redis store tests need a real server: " +
        "apt-get install -y redis-server (the CI runner .ci/run does this).",
    );
  }
  return path;
}

export async function startRedisServer(): Promise<RedisServer> {
  const binary = redisServerPath();
  // The port is free when chosen but another process may take it before redis binds;
  // a few fresh tries make that race harmless.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = freePort();
    const server = new LocalRedis(binary, port);
    try {
      await server.restart();
      return server;
    } catch (e) {
      lastError = e;
      await server.stop();
    }
  }
  throw lastError;
}

class LocalRedis implements RedisServer {
  readonly url: string;
  #proc: Subprocess<"ignore", "pipe", "pipe"> | undefined;

  constructor(
    readonly binary: string,
    readonly port: number,
  ) {
    this.url = `redis://127.0.0.1:${port}`;
  }

  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  async restart(): Promise<void> {
    if (this.#proc) throw new Error(`redis-server on port ${this.port} is already running`);
    const proc = Bun.spawn(
      [
        this.binary,
        "--port",
        String(this.port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--loglevel",
        "warning",
      ],
      { stdin: "ignore", stdout: "pipe", stderr: "pipe" },
    );
    this.#proc = proc;
    const deadline = performance.now() + START_DEADLINE_MS;
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        const out =
          (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text());
        this.#proc = undefined;
        throw new Error(
          `redis-server on port ${this.port} exited (${proc.exitCode ?? proc.signalCode}): ${out.trim()}`,
        );
      }
      if (await ping(this.url)) return;
      if (performance.now() > deadline)
        throw new Error(
          `redis-server on port ${this.port} did not answer PING in ${START_DEADLINE_MS} ms`,
        );
      await Bun.sleep(20);
    }
  }

  async stop(): Promise<void> {
    const proc = this.#proc;
    if (!proc) return;
    this.#proc = undefined;
    proc.kill("SIGTERM");
    const exited = await Promise.race([
      proc.exited.then(() => true),
      Bun.sleep(5_000).then(() => false),
    ]);
    if (!exited) {
      proc.kill("SIGKILL");
      await proc.exited;
    }
  }
}

async function ping(url: string): Promise<boolean> {
  const client = new RedisClient(url, {
    autoReconnect: false,
    connectionTimeout: 500,
    enableOfflineQueue: false,
  });
  try {
    await client.connect();
    return (await client.send("PING", [])) === "PONG";
  } catch {
    return false;
  } finally {
    client.close();
  }
}
