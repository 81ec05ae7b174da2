/**
 * Redis outages with real processes (issue 12 §4, §8): a router with `--redis` (RESP, and
 * Upstash REST through the local bridge) in front of two simulated engines, a steady load
 * of session requests (each one reads and writes its binding in Redis), and redis-server
 * stopped by SIGSTOP (a hang: the socket stays open, nothing answers) or killed by SIGKILL
 * and started again. Each asserts the bound it promises: no request fails, a request waits
 * at most a small bounded time for Redis (`--redis-timeout`, default 50 ms; it used to be
 * 1.2–2.2 s per request), the store is available again once Redis answers, sessions stick
 * again, and the load booked on the workers goes back to 0.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { stopAll, until, type Proc } from "../support/processes.ts";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "../support/upstash-bridge.ts";
import {
  metric,
  prompt,
  send,
  startCluster,
  urlOf,
  workers,
} from "../integration/multi-router-cluster.ts";

setDefaultTimeout(60_000);

/** What a request may cost beyond its usual time while Redis hangs: the 50 ms bound plus a noisy machine's scheduling. */
/**
 * The longest a request may take while Redis is hung or gone: --redis-timeout (50 ms) plus the
 * scheduling noise of a loaded 2-core machine, measured from this process (which also runs
 * the Upstash bridge). Before the guard, every request took 1.2-2.2 s; a full CI run under load
 * once saw 538 ms here, hence 1 s rather than 500 ms.
 */
const HANG_MAX_MS = 1_000;
const CLIENTS = 4;

interface Sample {
  readonly at: number;
  readonly ms: number;
  readonly status: number;
}

/** CLIENTS loops of session requests until stop(); every outcome recorded. */
function startLoad(routerUrl: string, tag: string) {
  const samples: Sample[] = [];
  let running = true;
  const loops = Array.from({ length: CLIENTS }, async (_, c) => {
    for (let k = 0; running; k++) {
      const t0 = performance.now();
      let status = 0;
      try {
        status = (
          await send(
            routerUrl,
            { prompt: prompt(`${tag}-${c}-${k % 3}`, 2), max_tokens: 1 },
            { "x-session-id": `${tag}-${c}-${k % 3}` },
          )
        ).status;
      } catch {
        status = -1;
      }
      samples.push({ at: t0, ms: performance.now() - t0, status });
    }
  });
  return {
    samples,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

function summary(samples: readonly Sample[], from: number, to: number) {
  const s = samples.filter((x) => x.at >= from && x.at < to);
  const ms = s.map((x) => x.ms).sort((a, b) => a - b);
  const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] ?? NaN;
  return {
    requests: s.length,
    failed: s.filter((x) => x.status !== 200).length,
    rps: Math.round((s.length / (to - from)) * 1000),
    p50: Math.round(q(0.5)),
    p99: Math.round(q(0.99)),
    max: Math.round(ms.at(-1) ?? NaN),
  };
}

async function totalLoad(routerUrl: string): Promise<number> {
  return (await workers(routerUrl)).reduce(
    (a, w) => a + w.active_prefill_tokens + w.active_decode_blocks,
    0,
  );
}

/** A new session's second turn lands where its first did (the store answers again). */
async function sticks(routerUrl: string, id: string): Promise<boolean> {
  const a = await send(
    routerUrl,
    { prompt: prompt(`${id}-a`, 2), max_tokens: 1 },
    { "x-session-id": id },
  );
  const b = await send(
    routerUrl,
    { prompt: prompt(`${id}-b`, 2), max_tokens: 1 },
    { "x-session-id": id },
  );
  const bound = await fetch(`${routerUrl}/debug/sessions/${id}`);
  return a.status === 200 && b.status === 200 && bound.status === 200 && a.worker === b.worker;
}

for (const transport of ["resp", "rest"] as const) {
  describe(`Redis outages (${transport})`, () => {
    let redis: RedisServer | undefined;
    let bridge: UpstashBridge | undefined;
    let engines: Proc[] = [];
    let router: Proc | undefined;
    let url = "";

    beforeAll(async () => {
      redis = await startRedisServer();
      let flags = ["--redis", redis.url];
      if (transport === "rest") {
        bridge = await startUpstashBridge({ redisPort: redis.port });
        flags = ["--redis", bridge.url, "--redis-token", bridge.token];
      }
      let routers: Proc[];
      // The default bound (50 ms) is what is under test, stated so the test helpers do not raise it.
      ({ engines, routers } = await startCluster(2, 1, [
        ...flags,
        "--redis-timeout",
        "0.05",
        "--session-reaper-interval",
        "0.5",
      ]));
      router = routers[0];
      url = urlOf(router!);
      // The first writes may miss the 50 ms bound while the machine is busy starting things.
      let attempt = 0;
      await until(
        async () => sticks(url, `${transport}-warm-${attempt++}`),
        "a session to stick before the outage",
        10_000,
      );
    });

    afterAll(async () => {
      if (redis?.pid !== undefined) process.kill(redis.pid, "SIGCONT");
      await stopAll([router, ...engines]);
      await bridge?.stop();
      await redis?.stop();
    });

    test("SIGSTOP: requests never fail and wait at most the bound; all resumes after SIGCONT", async () => {
      const load = startLoad(url, `${transport}-stop`);
      const t0 = performance.now();
      await Bun.sleep(1_000); // baseline
      const t1 = performance.now();
      process.kill(redis!.pid!, "SIGSTOP");
      await Bun.sleep(2_000); // Redis hung
      const t2 = performance.now();
      process.kill(redis!.pid!, "SIGCONT");
      await until(
        async () => (await metric(url, "switchyard_affinity_store_available")) === 1,
        "the store to be available again",
        10_000,
      );
      const t3 = performance.now();
      await Bun.sleep(500);
      await load.stop();
      const t4 = performance.now();
      const before = summary(load.samples, t0, t1);
      const hung = summary(load.samples, t1, t2);
      const after = summary(load.samples, t3, t4);
      console.log(
        `redis SIGSTOP (${transport}): before ${JSON.stringify(before)} hung ${JSON.stringify(hung)} after ${JSON.stringify(after)}; back ${Math.round(t3 - t2)} ms after SIGCONT`,
      );
      expect(load.samples.filter((s) => s.status !== 200)).toEqual([]);
      expect(hung.requests).toBeGreaterThan(10);
      expect(hung.max).toBeLessThan(HANG_MAX_MS);
      expect(await metric(url, "switchyard_affinity_store_errors_total")).toBeGreaterThan(0); // it really hung
      // Sessions stick again once the store answers: polled with fresh session ids, since one
      // write may still miss the 50 ms bound on a loaded machine (that request then routes
      // without a binding, which is the designed fallback, not a failure).
      let attempt = 0;
      await until(
        async () => sticks(url, `${transport}-after-stop-${attempt++}`),
        "sessions to stick again after SIGCONT",
        10_000,
      );
      await until(async () => (await totalLoad(url)) === 0, "the booked load to go back to 0");
    });

    test("SIGKILL and restart: requests never fail and wait at most the bound; sessions stick again", async () => {
      const load = startLoad(url, `${transport}-kill`);
      await Bun.sleep(500);
      const t1 = performance.now();
      process.kill(redis!.pid!, "SIGKILL");
      await redis!.stop(); // reaps it
      await Bun.sleep(1_000); // Redis gone
      const t2 = performance.now();
      await redis!.restart(); // same port, empty
      await until(
        async () =>
          (await metric(url, "switchyard_affinity_store_available")) === 1 &&
          (await sticks(url, `${transport}-probe-${performance.now()}`)),
        "sessions to stick again",
        10_000,
      );
      await load.stop();
      const down = summary(load.samples, t1, t2);
      console.log(`redis SIGKILL (${transport}): down ${JSON.stringify(down)}`);
      expect(load.samples.filter((s) => s.status !== 200)).toEqual([]);
      expect(down.requests).toBeGreaterThan(10);
      expect(down.max).toBeLessThan(HANG_MAX_MS);
      await until(async () => (await totalLoad(url)) === 0, "the booked load to go back to 0");
    });
  });
}
