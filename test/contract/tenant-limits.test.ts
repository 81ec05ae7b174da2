/**
 * Tenant limit counters: one contract run against the local counters and against the shared
 * ones in a real redis-server (its Lua script over RESP, and over Upstash REST through the
 * local bridge), so the two answer alike; then what only the shared ones must do: several
 * routers' checks drawing on one limit, and a concurrency slot that lapses when its router
 * never releases it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { LocalLimitCounters } from "../../src/protect/limits/local-counters.ts";
import type { Ask, Verdict } from "../../src/protect/limits/verdict.ts";
import type { TenantLimits } from "../../src/protect/tenant.ts";
import { openRespConnection } from "../../src/runtime/bun/resp-client.ts";
import { openRedisConnection } from "../../src/sync/redis-client.ts";
import { RedisLimitCounters } from "../../src/sync/tenant-limits.ts";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "../support/upstash-bridge.ts";

let server: RedisServer;
let bridge: UpstashBridge;
let prefixes = 0;
const freshPrefix = () => `t${process.pid}-${++prefixes}:{limits}:`;

beforeAll(async () => {
  server = await startRedisServer();
  bridge = await startUpstashBridge({ redisPort: server.port });
});

afterAll(async () => {
  await bridge?.stop();
  await server?.stop();
});

/** The counters under test with a clock the test moves. */
interface Counters {
  acquire(limits: TenantLimits, ask: Ask, id: string): Promise<Verdict>;
  release(
    limits: TenantLimits,
    id: string,
    booked: number,
    out: number,
    prompt?: { charged: number; used: number },
  ): Promise<void>;
  advance(ms: number): void;
  close(): Promise<void>;
}

type Make = () => Promise<Counters>;

function local(): Make {
  return async () => {
    let now = 1_000_000;
    const c = new LocalLimitCounters();
    return {
      acquire: async (l, a, id) => c.acquire("t", l, a, id, now),
      release: async (l, id, _booked, out, prompt) => c.release("t", l, id, out, now, prompt),
      advance: (ms) => void (now += ms),
      close: async () => {},
    };
  };
}

/** Each make() gets its own keys (and clock) unless routers are to share them. */
function redis(transport: "resp" | "rest", shared?: string, sharedClock?: { now: number }): Make {
  return async () => {
    const prefix = shared ?? freshPrefix();
    const clock = sharedClock ?? { now: 1_000_000 };
    const connection =
      transport === "resp"
        ? await openRedisConnection(server.url, {
            resp: openRespConnection,
            commandTimeoutMs: 2_000,
          })
        : await openRedisConnection(bridge.url, { token: bridge.token, commandTimeoutMs: 2_000 });
    const c = new RedisLimitCounters({
      connection,
      keyPrefix: prefix,
      now: () => clock.now,
      leaseMs: 5_000,
    });
    return {
      acquire: (l, a, id) => c.acquire("t", l, a, id),
      release: (l, id, booked, out, prompt) => c.release("t", l, id, booked, out, prompt),
      advance: (ms) => void (clock.now += ms),
      close: () => c.close(),
    };
  };
}

const ask = (promptTokens = 10, outputTokens = 5): Ask => ({ promptTokens, outputTokens });

function contract(name: string, make: Make): void {
  describe(`tenant limit counters: ${name}`, () => {
    test("requests per minute: a minute's worth at once, then at the rate; states and resets", async () => {
      const c = await make();
      try {
        const lim = { requestsPerMinute: 6 };
        for (let i = 0; i < 6; i++)
          expect((await c.acquire(lim, ask(), `r${i}`)).allowed).toBe(true);
        const r = await c.acquire(lim, ask(), "r6");
        expect(r).toMatchObject({ allowed: false, refused: "requests", retryAfterMs: 10_000 });
        expect(r.states.requests).toEqual({ limit: 6, remaining: 0, resetMs: 60_000 });
        c.advance(10_000);
        const ok = await c.acquire(lim, ask(), "r7");
        expect(ok.allowed).toBe(true);
        expect(ok.states.requests).toEqual({ limit: 6, remaining: 0, resetMs: 60_000 });
      } finally {
        await c.close();
      }
    });

    test("all limited dimensions together; a refused request takes nothing; too large is said", async () => {
      const c = await make();
      try {
        const lim = { requestsPerMinute: 100, promptTokensPerMinute: 1000 };
        expect((await c.acquire(lim, ask(800), "a")).allowed).toBe(true);
        const r = await c.acquire(lim, ask(300), "b");
        expect(r).toMatchObject({ allowed: false, refused: "prompt_tokens", retryAfterMs: 6_000 });
        expect(r.states.requests!.remaining).toBe(99);
        expect(r.states.prompt_tokens!.remaining).toBe(200);
        expect(await c.acquire(lim, ask(5000), "huge")).toMatchObject({
          allowed: false,
          refused: "prompt_tokens",
          tooLarge: true,
        });
      } finally {
        await c.close();
      }
    });

    test("output booked whole (more than a minute's worth is too large), corrected at release", async () => {
      const c = await make();
      try {
        const lim = { outputTokensPerMinute: 100 };
        expect(await c.acquire(lim, ask(0, 500), "huge")).toMatchObject({
          allowed: false,
          refused: "output_tokens",
          tooLarge: true,
        });
        expect((await c.acquire(lim, ask(0, 100), "big")).allowed).toBe(true);
        expect((await c.acquire(lim, ask(0, 1), "next")).allowed).toBe(false);
        await c.release(lim, "big", 100, 20);
        expect((await c.acquire(lim, ask(0, 80), "fits")).allowed).toBe(true);
      } finally {
        await c.close();
      }
    });

    test("prompt charged at its bound, settled at release to what the engine reported (refund or debt)", async () => {
      const c = await make();
      try {
        const lim = { promptTokensPerMinute: 1000, outputTokensPerMinute: 100 };
        expect((await c.acquire(lim, ask(900, 10), "a")).allowed).toBe(true);
        expect((await c.acquire(lim, ask(200, 10), "b")).allowed).toBe(false);
        await c.release(lim, "a", 10, 10, { charged: 900, used: 300 }); // 600 back
        const r = await c.acquire(lim, ask(600, 10), "c");
        expect(r.allowed).toBe(true);
        expect(r.states.prompt_tokens!.remaining).toBe(100);
        // More than charged: a debt that later requests wait for; the output bucket untouched.
        await c.release(lim, "c", 10, 10, { charged: 600, used: 900 });
        const after = await c.acquire(lim, ask(1, 1), "d");
        expect(after).toMatchObject({ allowed: false, refused: "prompt_tokens" });
        expect(after.states.output_tokens!.remaining).toBe(80);
      } finally {
        await c.close();
      }
    });

    test("concurrency: a slot per running request, back at release", async () => {
      const c = await make();
      try {
        const lim = { concurrentRequests: 2 };
        expect((await c.acquire(lim, ask(), "a")).states.concurrent).toEqual({
          limit: 2,
          remaining: 1,
          resetMs: 0,
        });
        expect((await c.acquire(lim, ask(), "b")).allowed).toBe(true);
        expect(await c.acquire(lim, ask(), "c")).toMatchObject({
          allowed: false,
          refused: "concurrent",
          retryAfterMs: 1000,
        });
        await c.release(lim, "a", 5, 5);
        expect((await c.acquire(lim, ask(), "d")).allowed).toBe(true);
      } finally {
        await c.close();
      }
    });
  });
}

contract("local", local());
contract("redis over RESP", redis("resp"));
contract("redis over Upstash REST", redis("rest"));

describe("shared counters", () => {
  test("three routers (RESP and REST mixed) draw on one limit: exactly the limit passes", async () => {
    const prefix = freshPrefix();
    const clock = { now: 5_000_000 };
    const routers = await Promise.all([
      redis("resp", prefix, clock)(),
      redis("resp", prefix, clock)(),
      redis("rest", prefix, clock)(),
    ]);
    try {
      const lim = { requestsPerMinute: 50 };
      const verdicts = await Promise.all(
        Array.from({ length: 90 }, (_, i) => routers[i % 3]!.acquire(lim, ask(), `r${i}`)),
      );
      expect(verdicts.filter((v) => v.allowed).length).toBe(50);
    } finally {
      await Promise.all(routers.map((r) => r.close()));
    }
  });

  test("a slot never released lapses after the lease (a router that died mid-request)", async () => {
    const prefix = freshPrefix();
    const clock = { now: 7_000_000 };
    const c = await redis("resp", prefix, clock)();
    try {
      const lim = { concurrentRequests: 1 };
      expect((await c.acquire(lim, ask(), "orphan")).allowed).toBe(true);
      expect((await c.acquire(lim, ask(), "x")).allowed).toBe(false);
      c.advance(5_001);
      expect((await c.acquire(lim, ask(), "y")).allowed).toBe(true);
    } finally {
      await c.close();
    }
  });

  test("with Redis's own clock (no test clock), checks still take from one bucket", async () => {
    const connection = await openRedisConnection(server.url, {
      resp: openRespConnection,
      commandTimeoutMs: 2_000,
    });
    const c = new RedisLimitCounters({ connection, keyPrefix: freshPrefix() });
    try {
      const lim = { requestsPerMinute: 3 };
      const ok = [];
      for (let i = 0; i < 5; i++) ok.push((await c.acquire("t", lim, ask(), `r${i}`)).allowed);
      expect(ok).toEqual([true, true, true, false, false]);
    } finally {
      await c.close();
    }
  });
});
