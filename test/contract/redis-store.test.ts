/**
 * The Redis affinity store against a real redis-server: the AffinityStore contract over
 * RESP (Bun's RedisClient) and over Upstash REST (@upstash/redis through the local bridge),
 * then what only a shared store must do: close each expired engine session exactly once
 * across several routers, and survive Redis going away and coming back.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Redis } from "@upstash/redis";
import { worker } from "../../src/core/ids.ts";
import { openRedisConnection } from "../../src/sync/redis-client.ts";
import type { RedisConnection } from "../../src/sync/redis-connection.ts";
import { openRespConnection } from "../../src/runtime/bun/resp-client.ts";
import { RedisAffinityStore } from "../../src/sync/redis-store.ts";
import type { Binding } from "../../src/router/sessions/store.ts";
import type { Logger } from "../../src/core/logger.ts";
import { until } from "../support/processes.ts";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "../support/upstash-bridge.ts";
import { runAffinityStoreContract, type MakeStore } from "./affinity-store.contract.ts";

let server: RedisServer;
let bridge: UpstashBridge;
let prefixes = 0;
/** Each store gets its own keys, so tests sharing the server never see each other. */
const freshPrefix = () => `t${process.pid}-${++prefixes}:{sticky}:`;
const silent: Pick<Logger, "warn"> = { warn() {} };

beforeAll(async () => {
  server = await startRedisServer();
  bridge = await startUpstashBridge({ redisPort: server.port });
});

afterAll(async () => {
  await bridge?.stop();
  await server?.stop();
});

/** `commandTimeoutMs`: the hang guard's bound (default 50 ms); bursts of hundreds of calls through the one-socket bridge need more. */
function connect(transport: "resp" | "rest", commandTimeoutMs?: number): Promise<RedisConnection> {
  return transport === "resp"
    ? openRedisConnection(server.url, { commandTimeoutMs, resp: openRespConnection })
    : openRedisConnection(bridge.url, { token: bridge.token, commandTimeoutMs });
}

function contractFactory(transport: "resp" | "rest"): MakeStore {
  return async (clock, opts) => {
    const store = new RedisAffinityStore({
      connection: await connect(transport),
      keyPrefix: freshPrefix(),
      now: () => clock.now(),
      every: (ms, fn) => clock.every(ms, fn),
      logger: silent,
      ...opts,
    });
    return {
      store,
      advance: async (ms) => clock.advance(ms),
      reap: async () => void (await store.reapExpired()),
      cleanup: () => store.close(),
    };
  };
}

runAffinityStoreContract("redis over RESP", contractFactory("resp"));
runAffinityStoreContract("redis over Upstash REST", contractFactory("rest"));

describe("RedisAffinityStore on the wire", () => {
  test("a binding is one string key; engine-backed ids sit in the expiry set, router-only ones do not", async () => {
    const prefix = freshPrefix();
    const raw = await connect("resp");
    const store = new RedisAffinityStore({
      connection: await connect("resp"),
      keyPrefix: prefix,
      now: () => 1_000_000,
      reaperIntervalMs: 0,
    });
    try {
      await store.put("e", worker(18446744073709551615n, 3), 300_000, "engine-backed");
      await store.put("r", worker(42, 0), 60_000, "router-only");

      expect(await raw.command(["GET", `${prefix}s:e`])).toBe(
        "18446744073709551615|3|300000|e|1300000",
      );
      expect(await raw.command(["GET", `${prefix}s:r`])).toBe("42|0|60000|r|1060000");
      expect(await raw.command(["ZRANGE", `${prefix}expiry`, "0", "-1", "WITHSCORES"])).toEqual([
        ["e", 1_300_000],
      ]);
      // Redis's own TTL only collects garbage; it is always longer than the binding's.
      expect(Number(await raw.command(["PTTL", `${prefix}s:r`]))).toBeGreaterThan(60_000);
      expect(Number(await raw.command(["PTTL", `${prefix}s:e`]))).toBeGreaterThan(300_000);
    } finally {
      await store.close();
      await raw.close();
    }
  });

  test("scripts are reloaded after the server forgets them (SCRIPT FLUSH)", async () => {
    for (const transport of ["resp", "rest"] as const) {
      const raw = await connect("resp");
      const store = new RedisAffinityStore({
        connection: await connect(transport),
        keyPrefix: freshPrefix(),
        reaperIntervalMs: 0,
        logger: silent,
      });
      try {
        await store.put("s", worker(1, 1), 60_000, "router-only");
        await until(
          async () => (await store.get("s")) !== undefined,
          `a ${transport} store to read its binding`,
        );
        expect(await raw.command(["SCRIPT", "FLUSH"])).toBe("OK");
        expect((await store.get("s"))?.worker).toEqual(worker(1, 1));
        expect(store.stats().errors).toBe(0);
      } finally {
        await store.close();
        await raw.close();
      }
    }
  });

  test("with no injected clock, expiry follows Redis TIME", async () => {
    const closed: string[] = [];
    const store = new RedisAffinityStore({
      connection: await connect("resp"),
      keyPrefix: freshPrefix(),
      reaperIntervalMs: 10,
      onExpire: (id) => closed.push(id),
    });
    try {
      const raw = await connect("resp");
      const [sec, usec] = (await raw.command(["TIME"])) as [string, string];
      await raw.close();
      const redisNow = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
      await store.put("e", worker(5), 150, "engine-backed");
      const b = await store.peek("e");
      expect(b?.expiresAt).toBeGreaterThanOrEqual(redisNow + 150);
      expect(b!.expiresAt).toBeLessThan(redisNow + 150 + 2_000);
      await until(
        () => closed.length === 1,
        "the reaper to close the session after 150 ms of Redis time",
      );
      expect(closed).toEqual(["e"]);
      expect(await store.peek("e")).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});

describe("several routers sharing one Redis", () => {
  test("each expired engine-backed session is closed exactly once, router-only ones never", async () => {
    // Three routers (two over RESP, one over REST) on one key space, real Redis time.
    // Their reapers sweep every 15 ms while all three also look every session up, so
    // lookups race reapers and reapers race each other for the same expiries.
    const seed = 20261121;
    let state = seed;
    const rng = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    const prefix = freshPrefix();
    const closes = new Map<string, number>();
    const byRouter = [0, 0, 0];
    const routers = await Promise.all(
      (["resp", "resp", "rest"] as const).map(
        async (transport, i) =>
          new RedisAffinityStore({
            // 720 lookups at once queue behind each other: this test is about exactly-once, not hangs.
            connection: await connect(transport, 5_000),
            keyPrefix: prefix,
            reaperIntervalMs: 15,
            logger: silent,
            onExpire: (id: string, b: Binding) => {
              expect(b.kind).toBe("engine-backed");
              closes.set(id, (closes.get(id) ?? 0) + 1);
              byRouter[i]!++;
            },
          }),
      ),
    );
    try {
      const n = 240;
      const engine = new Set<string>();
      await Promise.all(
        Array.from({ length: n }, (_, i) => {
          const id = `sess-${i}`;
          const kind = i % 2 === 0 ? "engine-backed" : "router-only";
          if (kind === "engine-backed") engine.add(id);
          return routers[i % 3]!.put(id, worker(i, i % 4), 40 + Math.floor(rng() * 160), kind);
        }),
      );
      const lookups = async () => {
        for (let round = 0; round < 6; round++) {
          await Promise.all(
            routers.flatMap((r) =>
              Array.from({ length: n }, (_, i) =>
                rng() < 0.5 ? r.peek(`sess-${i}`) : r.get(`sess-${i}`),
              ),
            ),
          );
        }
      };
      await lookups();
      await until(
        () => closes.size === engine.size,
        `all ${engine.size} engine sessions to be closed`,
        10_000,
      );
      await Promise.all(routers.map((r) => r.reapExpired()));
      await lookups();

      try {
        expect([...closes.keys()].sort()).toEqual([...engine].sort());
        expect([...closes.values()].every((c) => c === 1)).toBe(true);
        expect(byRouter.reduce((a, b) => a + b, 0)).toBe(engine.size);
        expect(routers.map((r) => r.stats().errors)).toEqual([0, 0, 0]);
      } catch (e) {
        console.error(`3-router expiry: seed=${seed} closes by router=${byRouter}`);
        throw e;
      }
    } finally {
      await Promise.all(routers.map((r) => r.close()));
    }
  });
});

describe("Redis going away", () => {
  test("every call resolves while Redis is down, the outage is logged once, and affinity resumes", async () => {
    const warnings: string[] = [];
    const logger: Pick<Logger, "warn"> = { warn: (m) => warnings.push(m) };
    const stores = await Promise.all(
      (["resp", "rest"] as const).map(
        async (t) =>
          new RedisAffinityStore({
            connection: await connect(t),
            keyPrefix: freshPrefix(),
            reaperIntervalMs: 0,
            logger,
          }),
      ),
    );
    try {
      for (const s of stores) {
        await s.put("before", worker(1), 60_000, "engine-backed");
        expect((await s.get("before"))?.worker).toEqual(worker(1));
      }

      await server.stop();
      for (const s of stores) {
        for (let i = 0; i < 3; i++) {
          expect(await s.get("before")).toBeUndefined();
          expect(await s.peek("before")).toBeUndefined();
          expect(await s.put("during", worker(2), 60_000, "router-only")).toBeUndefined();
          expect(await s.remove("before")).toBeUndefined();
          expect(await s.reapExpired()).toBe(0);
        }
        expect(s.stats().available).toBe(false);
        expect(s.stats().errors).toBeGreaterThanOrEqual(15);
      }
      // One line per store for the whole outage, not one per failed call.
      expect(warnings.filter((w) => w.includes("unavailable"))).toHaveLength(2);

      await server.restart(); // same port, empty: no persistence
      for (const s of stores) {
        await until(
          async () => {
            await s.put("after", worker(3, 1), 60_000, "engine-backed");
            return (await s.get("after"))?.worker.workerId === 3n;
          },
          "the store to bind and resolve again after Redis restarted",
          10_000,
          50,
        );
        expect(s.stats().available).toBe(true);
      }
      expect(warnings.filter((w) => w.includes("reachable again"))).toHaveLength(2);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});

describe("upstash bridge (test support)", () => {
  test("checks the token, and base64-encodes nested replies when asked", async () => {
    const wrong = new Redis({
      url: bridge.url,
      token: "nope",
      retry: { retries: 0 },
      enableTelemetry: false,
    });
    await expect(wrong.get("x")).rejects.toThrow("Unauthorized");

    const plain = new Redis({
      url: bridge.url,
      token: bridge.token,
      responseEncoding: false,
      enableTelemetry: false,
      automaticDeserialization: false,
    });
    const encoded = new Redis({
      url: bridge.url,
      token: bridge.token,
      enableTelemetry: false,
      automaticDeserialization: false,
    });
    const key = `${freshPrefix()}list`;
    await encoded.rpush(key, "ünï", "1234", "PONG");
    expect(await encoded.lrange(key, 0, -1)).toEqual(["ünï", "1234", "PONG"]);
    expect(await plain.lrange(key, 0, -1)).toEqual(["ünï", "1234", "PONG"]);
    const tx = encoded.multi();
    tx.set(`${key}:a`, "1");
    tx.incr(`${key}:a`);
    expect(await tx.exec()).toEqual(["OK", 2]);
    expect(bridge.requests.get("/multi-exec")).toBeGreaterThanOrEqual(1);
    expect(bridge.requests.get("/pipeline")).toBeGreaterThanOrEqual(1);
  });
});
