/**
 * Routers on Bun, Deno and workerd sharing ONE session store and their active load through
 * Upstash's REST protocol (issue 10 §2): a real redis-server, the Upstash REST bridge in this
 * test process (test/support/upstash-bridge.ts), two simulated engines (Bun, 2 dp ranks each),
 * and one router per runtime with `--redis <bridge url> --redis-token <token>` in front of the
 * same engines. Checks: a session bound through any runtime's router resolves on the other two
 * to the same (worker, dp rank); load booked by one router shows in the others' /v1/workers;
 * a hung Redis (SIGSTOP) costs a Deno or workerd router's request at most about
 * --redis-timeout (plus scheduling noise), never a failure; redis:// is refused by name on Deno and workerd.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { startUpstashBridge, type UpstashBridge } from "../support/upstash-bridge.ts";
import { RUNTIMES, startRouter, type Runtime } from "./runtimes.ts";

setDefaultTimeout(30_000);

const BS = 4;
const ADMIN = "conformance-admin";
const AUTH = { authorization: `Bearer ${ADMIN}` };
/** --redis-timeout under test (seconds); a request while Redis hangs must finish well within HANG_MAX_MS. */
const REDIS_TIMEOUT_S = 0.1;
/** Generous for a loaded 2-core machine; without the bound the request would wait for Redis forever. */
const HANG_MAX_MS = 1_500;

let redis: RedisServer | undefined;
let bridge: UpstashBridge | undefined;
const engines: Proc[] = [];
const routers = new Map<Runtime["name"], Proc>();
const urlOf = (name: Runtime["name"]): string => String(routers.get(name)!.info.url);

interface Routed {
  readonly status: number;
  readonly worker: string;
  readonly dpRank: number;
}

async function send(
  url: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Routed> {
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "switchyard-sim", max_tokens: 1, ...body }),
  });
  await res.arrayBuffer();
  return {
    status: res.status,
    worker: res.headers.get("x-switchyard-worker") ?? "",
    dpRank: Number(res.headers.get("x-switchyard-dp-rank")),
  };
}

async function peek(
  url: string,
  id: string,
): Promise<{ worker_id: string; dp_rank: number } | undefined> {
  const r = await fetch(`${url}/debug/sessions/${encodeURIComponent(id)}`, { headers: AUTH });
  if (r.status === 404) return undefined;
  if (!r.ok) throw new Error(`GET /debug/sessions/${id}: HTTP ${r.status}`);
  return (await r.json()) as { worker_id: string; dp_rank: number };
}

async function loadOn(url: string, worker: string): Promise<number> {
  const r = (await (await fetch(`${url}/v1/workers`, { headers: AUTH })).json()) as {
    workers: { id: string; active_prefill_tokens: number; active_decode_blocks: number }[];
  };
  const w = r.workers.find((x) => x.id === worker);
  return w === undefined ? 0 : w.active_prefill_tokens + w.active_decode_blocks;
}

beforeAll(async () => {
  redis = await startRedisServer();
  bridge = await startUpstashBridge({ redisPort: redis.port });
  for (let i = 0; i < 2; i++) {
    engines.push(
      await startMain([
        "mocker",
        "--port",
        "0",
        "--block-size",
        String(BS),
        "--dp-ranks",
        "2",
        "--decode-ms-per-step",
        "8",
        "--seed",
        String(i + 1),
      ]),
    );
  }
  const flags = [
    "--port",
    "0",
    "--block-size",
    String(BS),
    "--admin-token",
    ADMIN,
    "--health-interval",
    "1",
    "--redis",
    bridge.url,
    "--redis-token",
    bridge.token,
    "--redis-timeout",
    String(REDIS_TIMEOUT_S),
    ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
  ];
  // One at a time: Deno compiles and workerd bundles on first start (2 shared cores).
  for (const rt of RUNTIMES) routers.set(rt.name, await startRouter(rt, flags));
  for (const rt of RUNTIMES) {
    await until(
      async () => {
        const r = (await (
          await fetch(`${urlOf(rt.name)}/v1/workers`, { headers: AUTH })
        ).json()) as { workers: { healthy: boolean }[] };
        return r.workers.length === 2 && r.workers.every((w) => w.healthy);
      },
      `two healthy workers on the ${rt.name} router`,
      20_000,
    );
  }
}, 180_000);

afterAll(async () => {
  if (redis?.pid !== undefined) process.kill(redis.pid, "SIGCONT");
  await stopAll([...routers.values(), ...engines]);
  await bridge?.stop();
  await redis?.stop();
});

describe("Bun, Deno and workerd routers sharing Redis over Upstash REST", () => {
  for (const origin of RUNTIMES) {
    test(`a session bound through the ${origin.name} router resolves to the same (worker, dp rank) on the others`, async () => {
      const others = RUNTIMES.filter((r) => r.name !== origin.name);
      for (let s = 0; s < 3; s++) {
        const id = `shared-${origin.name}-${s}`;
        const h = { "x-session-id": id };
        const first = await send(urlOf(origin.name), { prompt: `${id} first turn` }, h);
        expect(first.status).toBe(200);
        for (const other of others) {
          // The binding itself, read without sliding its TTL, as the other router sees it.
          expect(await peek(urlOf(other.name), id)).toMatchObject({
            worker_id: first.worker,
            dp_rank: first.dpRank,
          });
          // And a request there (different prompt: without the session it could go anywhere).
          const next = await send(
            urlOf(other.name),
            { prompt: `${id} next turn on ${other.name} ${"y".repeat(40 * s)}` },
            h,
          );
          expect(next.status).toBe(200);
          expect({ worker: next.worker, dpRank: next.dpRank }).toEqual({
            worker: first.worker,
            dpRank: first.dpRank,
          });
        }
      }
      expect(bridge!.requests.get("/pipeline") ?? 0).toBeGreaterThan(0); // it really went through REST
    });
  }

  test("a long stream through the Bun router shows as load in the Deno and workerd routers (load sync over REST)", async () => {
    const res = await fetch(`${urlOf("bun")}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "switchyard-sim",
        prompt: "a long stream to share",
        max_tokens: 5000,
        stream: true,
      }),
    });
    expect(res.status).toBe(200);
    const worker = res.headers.get("x-switchyard-worker")!;
    const reader = res.body!.getReader();
    await reader.read();
    for (const name of ["deno", "workerd"] as const) {
      await until(
        async () => (await loadOn(urlOf(name), worker)) > 0,
        `the ${name} router to see the Bun router's load`,
      );
    }
    await reader.cancel();
    for (const name of ["deno", "workerd"] as const) {
      await until(
        async () => (await loadOn(urlOf(name), worker)) === 0,
        `the ${name} router to see it freed`,
      );
    }
  });

  for (const name of ["deno", "workerd"] as const) {
    test(`a hung Redis (SIGSTOP) never fails a ${name} request and costs it at most about --redis-timeout`, async () => {
      const url = urlOf(name);
      process.kill(redis!.pid!, "SIGSTOP");
      const took: number[] = [];
      try {
        for (let i = 0; i < 5; i++) {
          const t0 = performance.now();
          const r = await send(
            url,
            { prompt: `while redis hangs ${i}` },
            { "x-session-id": `hung-${name}-${i}` },
          );
          took.push(performance.now() - t0);
          expect(r.status).toBe(200);
        }
      } finally {
        process.kill(redis!.pid!, "SIGCONT");
      }
      console.log(
        `${name} router, redis SIGSTOP, --redis-timeout ${REDIS_TIMEOUT_S}s: request ms ${took.map(Math.round).join(", ")}`,
      );
      expect(Math.max(...took)).toBeLessThan(HANG_MAX_MS);
      // Back: a new binding is written through this router and read by the Bun one.
      await until(
        async () => {
          const id = `after-hang-${name}-${performance.now()}`;
          const first = await send(url, { prompt: "after the hang" }, { "x-session-id": id });
          const seen = await peek(urlOf("bun"), id);
          return first.status === 200 && seen?.worker_id === first.worker;
        },
        `sessions shared again through ${name} after SIGCONT`,
        15_000,
        200,
      );
    });
  }
});

describe("redis:// (RESP) is refused by name where it cannot run", () => {
  for (const name of ["deno", "workerd"] as const) {
    test(`${name}: --redis redis://… exits 2 naming it and the REST alternative`, async () => {
      const rt = RUNTIMES.find((r) => r.name === name)!;
      const proc = Bun.spawn({
        cmd: rt.command(["--redis", "redis://127.0.0.1:1"]),
        stdout: "pipe",
        stderr: "pipe",
      });
      const code = await proc.exited;
      const stderr = await new Response(proc.stderr).text();
      expect(code).toBe(2);
      expect(stderr).toContain(
        `--redis: redis:// is not available on ${name === "deno" ? "Deno" : "workerd"}`,
      );
      expect(stderr).toContain("https://");
    }, 60_000);
  }
});
