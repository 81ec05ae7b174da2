/**
 * Soak: a router (a real process) in front of simulated engines under a steady mixed load
 * while engines are killed (SIGKILL) and started again on the same port, and optionally
 * Redis is hung (SIGSTOP) for a while. Samples over time: the router's RSS, its index size
 * (switchyard_index_blocks), the active load it has booked, requests ok / failed. At the
 * end the load stops and the booked load must drain back to 0.
 *
 *   bun run bench:soak [--duration 60] [--engines 3] [--clients 8] [--kill-every 10]
 *                      [--sample-ms 1000] [--redis] [--seed 1] [--json out.json]
 *
 * `runSoak` is also what test/chaos/soak.test.ts runs (CI: 60 s). Seeds fix which engine
 * is killed when and which prompts are sent; the machine's speed still varies the counts.
 */
import { readFileSync } from "node:fs";
import { mulberry32 } from "../../test/support/prng.ts";
import { freePorts, startMain, stopAll, until, type Proc } from "../../test/support/processes.ts";
import { startRedisServer, type RedisServer } from "../../test/support/redis-server.ts";

export interface SoakOptions {
  readonly durationS: number;
  readonly engines: number;
  readonly clients: number;
  /** Seconds between engine kills (0: none). */
  readonly killEveryS: number;
  readonly sampleMs: number;
  /** Share sessions through a real redis-server, and hang it (SIGSTOP) for 2 s mid-run. */
  readonly redis: boolean;
  readonly seed: number;
  readonly log?: (line: string) => void;
}

export interface SoakSample {
  /** Seconds since the load started. */
  readonly t: number;
  readonly rssMiB: number;
  readonly indexBlocks: number;
  /** Prefill tokens + decode blocks booked on all workers. */
  readonly activeLoad: number;
  readonly ok: number;
  readonly failed: number;
  readonly event?: string;
}

export interface SoakResult {
  readonly options: Omit<SoakOptions, "log">;
  readonly samples: SoakSample[];
  readonly requests: number;
  readonly failed: number;
  readonly kills: number;
  readonly rssStartMiB: number;
  readonly rssEndMiB: number;
  readonly rssMaxMiB: number;
  readonly indexMaxBlocks: number;
  /** Booked load after the load stopped and drained (must be 0). */
  readonly activeLoadAfter: number;
  /** Milliseconds the booked load took to drain to 0 after the load stopped. */
  readonly drainMs: number;
  /** The slowest request, ms. */
  readonly maxRequestMs: number;
}

/** The simulated engines' cache size: the index can never need more than engines × this. */
export const SOAK_KV_BLOCKS = 4_096;

export const DEFAULT_SOAK: SoakOptions = {
  durationS: 60,
  engines: 3,
  clients: 8,
  killEveryS: 10,
  sampleMs: 1_000,
  redis: false,
  seed: 1,
};

const BS = 16;

function rssMiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const m = /VmRSS:\s+(\d+) kB/.exec(status);
    return m ? Math.round(Number(m[1]) / 102.4) / 10 : NaN;
  } catch {
    return NaN;
  }
}

async function metricValue(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}

async function bookedLoad(url: string): Promise<number> {
  const r = (await (await fetch(`${url}/v1/workers`)).json()) as {
    workers: { active_prefill_tokens: number; active_decode_blocks: number }[];
  };
  return r.workers.reduce((a, w) => a + w.active_prefill_tokens + w.active_decode_blocks, 0);
}

export async function runSoak(opts: SoakOptions): Promise<SoakResult> {
  const log = opts.log ?? (() => {});
  const rng = mulberry32(opts.seed);
  const ports = freePorts(opts.engines + 1);
  const routerPort = ports[0]!;
  const routerUrl = `http://127.0.0.1:${routerPort}`;
  const enginePorts = ports.slice(1);
  let redis: RedisServer | undefined;
  const engines: (Proc | undefined)[] = [];
  let router: Proc | undefined;
  const startEngine = (i: number) =>
    startMain([
      "mocker",
      "--port",
      String(enginePorts[i]),
      "--router-url",
      routerUrl,
      "--event-batch-ms",
      "5",
      "--block-size",
      String(BS),
      "--kv-blocks",
      String(SOAK_KV_BLOCKS),
      "--seed",
      String(i + 1),
      "--decode-ms-per-step",
      "2",
      "--prefill-us-per-token",
      "5",
    ]);
  try {
    if (opts.redis) redis = await startRedisServer();
    for (let i = 0; i < opts.engines; i++) engines.push(await startEngine(i));
    router = await startMain([
      "serve",
      "--port",
      String(routerPort),
      "--host",
      "127.0.0.1",
      "--block-size",
      String(BS),
      "--health-interval",
      "0.5",
      "--health-timeout",
      "0.5",
      "--first-byte-timeout",
      "5",
      "--log-level",
      "error",
      ...enginePorts.flatMap((p) => ["--worker", `http://127.0.0.1:${p}`]),
      ...(redis ? ["--redis", redis.url] : []),
    ]);
    const routerPid = router.pid;

    // The load: conversations (a shared system prefix per group, growing turns, a session id
    // each), streamed and not; every outcome counted.
    let ok = 0;
    let failed = 0;
    let maxRequestMs = 0;
    let running = true;
    const clients = Array.from({ length: opts.clients }, async (_, c) => {
      const crng = mulberry32(opts.seed * 1000 + c);
      for (let turn = 0; running; turn++) {
        const conv = Math.floor(crng() * 64);
        const tokens = Array.from(
          { length: BS * (4 + (turn % 8) * 2) },
          (_, i) => (conv % 8) * 100_000 + (i < 4 * BS ? i : conv * 1_000 + i),
        );
        const t0 = performance.now();
        try {
          const res = await fetch(`${routerUrl}/v1/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-session-id": `soak-${conv}` },
            body: JSON.stringify({
              prompt: tokens,
              max_tokens: 4 + Math.floor(crng() * 12),
              stream: crng() < 0.5,
            }),
            signal: AbortSignal.timeout(30_000),
          });
          const text = await res.text();
          if (res.status === 200 && !text.includes('"error"')) ok++;
          else failed++;
        } catch {
          failed++;
        }
        maxRequestMs = Math.max(maxRequestMs, performance.now() - t0);
      }
    });

    const samples: SoakSample[] = [];
    const start = performance.now();
    const sample = async (event?: string) => {
      samples.push({
        t: Math.round((performance.now() - start) / 100) / 10,
        rssMiB: rssMiB(routerPid),
        indexBlocks: await metricValue(routerUrl, "switchyard_index_blocks"),
        activeLoad: await bookedLoad(routerUrl),
        ok,
        failed,
        ...(event ? { event } : {}),
      });
      const s = samples.at(-1)!;
      log(
        `t=${s.t}s rss=${s.rssMiB}MiB index=${s.indexBlocks} load=${s.activeLoad} ok=${s.ok} failed=${s.failed}${event ? ` ${event}` : ""}`,
      );
    };
    await sample("start");
    let kills = 0;
    let nextKill = opts.killEveryS > 0 ? opts.killEveryS * 1000 : Infinity;
    let redisHung = false;
    const redisHangAt = opts.redis ? (opts.durationS * 1000) / 2 : Infinity;
    let nextSample = opts.sampleMs;
    while (performance.now() - start < opts.durationS * 1000) {
      const now = performance.now() - start;
      if (now >= nextKill) {
        nextKill += opts.killEveryS * 1000;
        const i = Math.floor(rng() * opts.engines);
        engines[i]!.proc.kill("SIGKILL");
        await engines[i]!.proc.exited;
        kills++;
        await sample(`killed engine ${i}`);
        await Bun.sleep(1_000); // down for a second, then the same port again
        engines[i] = await startEngine(i);
        await sample(`restarted engine ${i}`);
        nextSample = performance.now() - start + opts.sampleMs;
      } else if (!redisHung && now >= redisHangAt && redis?.pid !== undefined) {
        redisHung = true;
        process.kill(redis.pid, "SIGSTOP");
        await sample("redis SIGSTOP");
        await Bun.sleep(2_000);
        process.kill(redis.pid, "SIGCONT");
        await sample("redis SIGCONT");
        nextSample = performance.now() - start + opts.sampleMs;
      } else if (now >= nextSample) {
        await sample();
        nextSample = performance.now() - start + opts.sampleMs;
      } else {
        await Bun.sleep(Math.min(50, nextSample - now));
      }
    }
    running = false;
    await Promise.all(clients);
    const stopped = performance.now();
    await until(
      async () => (await bookedLoad(routerUrl)) === 0,
      "the booked load to drain to 0",
      15_000,
    ).catch(() => {});
    const drainMs = Math.round(performance.now() - stopped);
    await sample("load stopped");
    const rss = samples.map((s) => s.rssMiB).filter((x) => Number.isFinite(x));
    const last = samples.at(-1)!;
    return {
      options: {
        durationS: opts.durationS,
        engines: opts.engines,
        clients: opts.clients,
        killEveryS: opts.killEveryS,
        sampleMs: opts.sampleMs,
        redis: opts.redis,
        seed: opts.seed,
      },
      samples,
      requests: ok + failed,
      failed,
      kills,
      rssStartMiB: rss[0] ?? NaN,
      rssEndMiB: rss.at(-1) ?? NaN,
      rssMaxMiB: Math.max(...rss),
      indexMaxBlocks: Math.max(...samples.map((s) => s.indexBlocks)),
      activeLoadAfter: last.activeLoad,
      drainMs,
      maxRequestMs: Math.round(maxRequestMs),
    };
  } finally {
    if (redis?.pid !== undefined) process.kill(redis.pid, "SIGCONT");
    await stopAll([router, ...engines]);
    await redis?.stop();
  }
}

function parseArgs(argv: readonly string[]): SoakOptions & { json?: string } {
  const o: Record<string, unknown> = { ...DEFAULT_SOAK };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const num = () => {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v) || v < 0)
        throw new Error(`${a}: expected a number >= 0, got ${argv[i]}`);
      return v;
    };
    if (a === "--duration") o.durationS = num();
    else if (a === "--engines") o.engines = Math.max(1, num());
    else if (a === "--clients") o.clients = Math.max(1, num());
    else if (a === "--kill-every") o.killEveryS = num();
    else if (a === "--sample-ms") o.sampleMs = Math.max(100, num());
    else if (a === "--seed") o.seed = num();
    else if (a === "--redis") o.redis = true;
    else if (a === "--json") o.json = argv[++i];
    else throw new Error(`unknown flag ${a}`);
  }
  return o as unknown as SoakOptions & { json?: string };
}

if (import.meta.main) {
  const opts = parseArgs(process.argv.slice(2));
  const result = await runSoak({ ...opts, log: (l) => console.log(l) });
  const { samples: _s, ...summary } = result;
  console.log(JSON.stringify(summary, null, 2));
  if (opts.json) await Bun.write(opts.json, JSON.stringify(result, null, 2));
}
