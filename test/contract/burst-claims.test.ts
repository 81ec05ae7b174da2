/**
 * Burst claims (src/sync/burst-claim-store.ts) against a real redis-server, over RESP (Bun's
 * RedisClient) and over Upstash REST (@upstash/redis through the local bridge): each claim sees
 * exactly the claims appended before it inside the window, in order; claims that raced (sent at
 * once from several connections) are ordered by Redis, so every one of them sees all that came
 * before it and none sees one that came after; a moved claim replaces its old place; the window
 * and the cap bound what is kept; and a reply is decoded whatever the request id holds.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { worker } from "../../src/core/ids.ts";
import type { BurstClaim } from "../../src/router/index.ts";
import {
  decodeStoredClaim,
  encodeClaim,
  MAX_CLAIMS,
  RedisBurstClaims,
} from "../../src/sync/burst-claim-store.ts";
import { openRedisConnection } from "../../src/sync/redis-client.ts";
import type { RedisConnection } from "../../src/sync/redis-connection.ts";
import { openRespConnection } from "../../src/runtime/bun/resp-client.ts";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "../support/upstash-bridge.ts";

let server: RedisServer;
let bridge: UpstashBridge;
let keys = 0;
/** Each test gets its own list, so tests sharing the server never see each other's claims. */
const freshKey = () => `t${process.pid}-${++keys}:claims`;
const open: RedisConnection[] = [];

beforeAll(async () => {
  server = await startRedisServer();
  bridge = await startUpstashBridge({ redisPort: server.port });
});

afterAll(async () => {
  for (const c of open) await c.close();
  await bridge?.stop();
  await server?.stop();
});

async function connect(transport: "resp" | "rest"): Promise<RedisConnection> {
  // 2 s, not 50 ms: a busy machine must not fail a claim by scheduling alone.
  const c =
    transport === "resp"
      ? await openRedisConnection(server.url, { commandTimeoutMs: 2000, resp: openRespConnection })
      : await openRedisConnection(bridge.url, { token: bridge.token, commandTimeoutMs: 2000 });
  open.push(c);
  return c;
}

/** Each claim carries prefix marks (its sequence hashes at a few depths), made up from its id and tokens. */
const claim = (router: bigint, id: string, w: number, tokens: number): BurstClaim => ({
  routerId: router,
  requestId: id,
  worker: worker(w, 0),
  tokens,
  prefix: [1, 2, 3].map((b) => ({ blocks: b, hash: BigInt(tokens * 1000 + b) << 40n })),
});

for (const transport of ["resp", "rest"] as const) {
  describe(`burst claims over ${transport}`, () => {
    test("each claim returns the ones appended before it, oldest first, its own router's included", async () => {
      const key = freshKey();
      let now = 1_000_000;
      const a = new RedisBurstClaims(await connect(transport), {
        key,
        windowMs: 100,
        now: () => now,
      });
      const b = new RedisBurstClaims(await connect(transport), {
        key,
        windowMs: 100,
        now: () => now,
      });
      const first = await a.claim(claim(1n, "a-0", 7, 500));
      expect(first.earlier).toEqual([]);
      now += 1;
      const second = await b.claim(claim(2n, "b-0", 7, 300));
      expect(second.earlier).toEqual([claim(1n, "a-0", 7, 500)]);
      expect(second.held.stored.startsWith("1000001|")).toBe(true);
      now += 1;
      const third = await a.claim(claim(1n, "a-1", 8, 100));
      expect(third.earlier).toEqual([claim(1n, "a-0", 7, 500), claim(2n, "b-0", 7, 300)]);
    });

    test("claims sent at once from four connections are ordered: the k-th sees exactly the k - 1 before it", async () => {
      const key = freshKey();
      const stores = await Promise.all(
        [0, 1, 2, 3].map(
          async () => new RedisBurstClaims(await connect(transport), { key, windowMs: 10_000 }),
        ),
      );
      const sent = stores.flatMap((s, r) =>
        [0, 1, 2].map((i) => ({
          s,
          c: claim(BigInt(r + 1), `r${r}-${i}`, 1 + i, 10 * (r + 1) + i),
        })),
      );
      const replies = await Promise.all(sent.map(({ s, c }) => s.claim(c)));
      // Redis ran them one at a time: sorted by how many they saw, each reply extends the previous by one claim.
      const order = replies
        .map((r, i) => ({ seen: r.earlier, mine: sent[i]!.c }))
        .sort((x, y) => x.seen.length - y.seen.length);
      expect(order.map((o) => o.seen.length)).toEqual([...order.keys()]);
      for (let k = 1; k < order.length; k++)
        expect(order[k]!.seen).toEqual([...order[k - 1]!.seen, order[k - 1]!.mine]);
    });

    test("a moved claim replaces its old place: later claims see it once, where it went", async () => {
      const key = freshKey();
      const s = new RedisBurstClaims(await connect(transport), { key, windowMs: 10_000 });
      const { held } = await s.claim(claim(3n, "x", 1, 400));
      await s.claim(claim(4n, "y", 1, 50));
      await s.claim(claim(3n, "x", 2, 400), held);
      const { earlier } = await s.claim(claim(5n, "z", 3, 1));
      expect(earlier).toEqual([claim(4n, "y", 1, 50), claim(3n, "x", 2, 400)]);
    });

    test("claims older than the window are dropped, and the list holds at most MAX_CLAIMS", async () => {
      const key = freshKey();
      let now = 5_000_000;
      const s = new RedisBurstClaims(await connect(transport), {
        key,
        windowMs: 100,
        now: () => now,
      });
      await s.claim(claim(1n, "old", 1, 10));
      now += 60;
      await s.claim(claim(1n, "mid", 1, 10));
      now += 60; // "old" is 120 ms old now, "mid" 60
      const { earlier } = await s.claim(claim(1n, "new", 1, 10));
      expect(earlier.map((c) => c.requestId)).toEqual(["mid"]);
      const conn = await connect(transport);
      const many = new RedisBurstClaims(conn, { key: freshKey(), windowMs: 10_000 });
      for (let i = 0; i < MAX_CLAIMS + 5; i++) await many.claim(claim(1n, `m${i}`, 1, 1));
      const last = await many.claim(claim(1n, "last", 1, 1));
      expect(last.earlier.length).toBe(MAX_CLAIMS);
      expect(last.earlier[0]!.requestId).toBe("m5");
    });
  });
}

describe("the stored form", () => {
  test("round-trips any request id ('|' and newlines included), a u64 worker id and hash, and no prefix marks at all", () => {
    const c: BurstClaim = {
      routerId: 0xfedcba9876543210n,
      requestId: "client|id\nwith|bars",
      worker: { workerId: (1n << 64n) - 1n, dpRank: 3 },
      tokens: 4096,
      prefix: [
        { blocks: 1, hash: 0n },
        { blocks: 2, hash: (1n << 64n) - 1n },
      ],
    };
    expect(decodeStoredClaim(`123|${encodeClaim(c)}`)).toEqual(c);
    expect(decodeStoredClaim(`123|${encodeClaim({ ...c, prefix: [] })}`)).toEqual({
      ...c,
      prefix: [],
    });
  });

  test("anything else decodes to undefined, never a throw", () => {
    const bad = [
      "",
      "abc",
      "1|zz|1|0|1||x",
      "1|0000000000000001|1|0|-5||x",
      `1|0000000000000001|${1n << 64n}|0|1||x`,
      "1|0000000000000001|1|0|5|1:|x",
      "1|0000000000000001|1|0|5|1:12345678901234567|x",
    ];
    for (const s of bad) {
      expect(decodeStoredClaim(s)).toBeUndefined();
    }
  });
});
