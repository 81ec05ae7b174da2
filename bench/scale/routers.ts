/**
 * bench:scale's routers part: N routers (1 → 8) in front of the same 64 simulated engines
 * (fleet.ts, one process), every engine pushing its KV events to every router; with Redis the
 * routers share sessions and active load (load sync). Each router's CPU comes from
 * /proc/PID/stat over fixed windows while a steady open-loop load runs:
 *
 *   idle       no traffic
 *   events     requests sent to the engines directly: the routers only apply KV events
 *   routed     the same requests through the routers (round robin), with Redis: events +
 *              their own requests + load sync
 *   no sync    the same, routers restarted without --redis
 *
 * Per router, CPU ms per second: events = events − idle; load sync = routed − no sync;
 * requests = no sync − events. Events/s per router from its switchyard_kv_events_applied_total.
 *
 *   bun bench/scale/routers.ts [--routers 1,2,4,8] [--rate 100] [--seconds 6] [--json FILE]
 */
import { spawn, type Subprocess } from "bun";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { freePorts, until } from "../../test/support/processes.ts";
import { startRedisServer } from "../../test/support/redis-server.ts";
import type { RoutersRow } from "./run.ts";

const ROOT = join(import.meta.dir, "..", "..");
const MAIN = join(ROOT, "src", "main.ts");
const ENGINES = 64;
const PROMPT_TOKENS = 1024;

const TICK_MS = 1000 / 100; // /proc/PID/stat counts CPU in clock ticks of 10 ms (USER_HZ 100)

function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime + stime
}

async function stopProc(p: Subprocess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  p.kill("SIGTERM");
  const done = await Promise.race([p.exited.then(() => true), Bun.sleep(3000).then(() => false)]);
  if (!done) {
    p.kill("SIGKILL");
    await p.exited;
  }
}

async function firstJsonLine(
  p: Subprocess<"ignore", "pipe", "inherit">,
): Promise<Record<string, unknown>> {
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of p.stdout) {
    buf += dec.decode(chunk, { stream: true });
    const line = buf.split("\n").find((l) => l.startsWith("{") && l.endsWith("}"));
    if (line) return JSON.parse(line) as Record<string, unknown>;
  }
  throw new Error(`process ${p.pid} ended before printing its JSON line`);
}

async function eventsApplied(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let n = 0;
  for (const line of text.split("\n"))
    if (line.startsWith("switchyard_kv_events_applied_total{")) n += Number(line.split(" ").at(-1));
  return n;
}

/** Open-loop load at `rate` requests/s for `seconds`, round robin over `targets`; resolves when all answered. */
async function load(
  targets: readonly string[],
  rate: number,
  seconds: number,
  seed: number,
): Promise<number> {
  let x = seed >>> 0 || 1;
  const rnd = () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), (x >>> 0) % 150_000);
  const inflight: Promise<unknown>[] = [];
  const t0 = performance.now();
  let ok = 0;
  for (let i = 0; i < rate * seconds; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await Bun.sleep(wait);
    // A shared 256-token prefix per "tenant" (one of 32) + a unique tail: events store new blocks, matches find some.
    const prefix = Array.from({ length: 256 }, (_, k) => ((i % 32) * 7919 + k) % 150_000);
    const body = JSON.stringify({
      model: "switchyard-sim",
      prompt: [...prefix, ...Array.from({ length: PROMPT_TOKENS - 256 }, rnd)],
      max_tokens: 4,
    });
    const url = targets[i % targets.length]!;
    inflight.push(
      fetch(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      })
        .then(async (r) => {
          await r.arrayBuffer();
          if (r.ok) ok++;
        })
        .catch(() => {}),
    );
  }
  await Promise.all(inflight);
  return ok;
}

interface Window {
  cpuMsPerS: number[];
  eventsPerS: number[];
}

async function measure(
  pids: readonly number[],
  urls: readonly string[],
  seconds: number,
  work: () => Promise<unknown>,
): Promise<Window> {
  const c0 = pids.map(cpuMs);
  const e0 = await Promise.all(urls.map(eventsApplied));
  const t0 = performance.now();
  await work();
  const s = (performance.now() - t0) / 1000;
  const c1 = pids.map(cpuMs);
  const e1 = await Promise.all(urls.map(eventsApplied));
  void seconds;
  return {
    cpuMsPerS: c1.map((c, i) => (c - c0[i]!) / s),
    eventsPerS: e1.map((e, i) => (e - e0[i]!) / s),
  };
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function startRouters(
  ports: readonly number[],
  engineUrls: readonly string[],
  redisUrl: string | undefined,
): Promise<{ procs: Subprocess[]; urls: string[] }> {
  const procs = ports.map((port) =>
    spawn({
      cmd: [
        process.execPath,
        MAIN,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        ...engineUrls.flatMap((u) => ["--worker", u]),
        // 1 s: a dozen busy processes share 2 cores; a Redis answer late by scheduling alone would mark the store down.
        ...(redisUrl ? ["--redis", redisUrl, "--redis-timeout", "1"] : []),
        "--log-level",
        "warn",
      ],
      cwd: ROOT,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "ignore",
    }),
  );
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  await Promise.all(
    urls.map((u) =>
      until(async () => (await fetch(`${u}/health`)).ok, `${u} healthy`, 60_000, 100),
    ),
  );
  return { procs, urls };
}

export async function runRouters(
  ns: readonly number[],
  rate = 100,
  seconds = 6,
): Promise<RoutersRow[]> {
  const rows: RoutersRow[] = [];
  for (const n of ns) {
    const redis = await startRedisServer();
    const ports = freePorts(n + ENGINES);
    const routerPorts = ports.slice(0, n);
    const routerUrls = routerPorts.map((p) => `http://127.0.0.1:${p}`);
    const fleet = spawn({
      cmd: [
        process.execPath,
        join(import.meta.dir, "fleet.ts"),
        "--engines",
        String(ENGINES),
        "--ports",
        ports.slice(n).join(","),
        ...routerUrls.flatMap((u) => ["--router-url", u]),
      ],
      cwd: ROOT,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "inherit",
    });
    let routers: Subprocess[] = [];
    try {
      const engineUrls = (await firstJsonLine(fleet)).urls as string[];
      let set = await startRouters(routerPorts, engineUrls, redis.url);
      routers = set.procs;
      await Bun.sleep(2000); // registration's restores and the first health checks settle
      const pids = routers.map((p) => p.pid);
      const idle = await measure(pids, set.urls, seconds, () => Bun.sleep(seconds * 1000));
      const events = await measure(pids, set.urls, seconds, () =>
        load(engineUrls, rate, seconds, 1),
      );
      const routed = await measure(pids, set.urls, seconds, () => load(set.urls, rate, seconds, 2));
      await Promise.all(routers.map(stopProc));
      set = await startRouters(routerPorts, engineUrls, undefined);
      routers = set.procs;
      await Bun.sleep(2000);
      const noSync = await measure(
        routers.map((p) => p.pid),
        set.urls,
        seconds,
        () => load(set.urls, rate, seconds, 3),
      );
      const r = (x: number) => +x.toFixed(1);
      rows.push({
        routers: n,
        engines: ENGINES,
        requests_per_s: rate,
        events_per_s: Math.round(mean(events.eventsPerS)),
        per_router_cpu_ms_per_s: {
          idle: r(mean(idle.cpuMsPerS)),
          events: r(mean(events.cpuMsPerS) - mean(idle.cpuMsPerS)),
          load_sync: r(mean(routed.cpuMsPerS) - mean(noSync.cpuMsPerS)),
          requests: r(mean(noSync.cpuMsPerS) - mean(events.cpuMsPerS)),
        },
      });
      process.stderr.write(`routers ${n}: ${JSON.stringify(rows.at(-1))}\n`);
    } finally {
      await Promise.all(routers.map(stopProc));
      await stopProc(fleet);
      await redis.stop();
    }
  }
  return rows;
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      routers: { type: "string", default: "1,2,4,8" },
      rate: { type: "string", default: "100" },
      seconds: { type: "string", default: "6" },
      json: { type: "string" },
    },
  });
  const rows = await runRouters(
    values.routers!.split(",").map(Number),
    Number(values.rate),
    Number(values.seconds),
  );
  console.log(JSON.stringify(rows, null, 2));
  if (values.json) await Bun.write(values.json, JSON.stringify(rows, null, 2));
}
