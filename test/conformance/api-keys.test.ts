/**
 * Client API keys and tenant limits on every runtime (Bun, Deno, workerd), real processes in
 * front of one simulated engine (Bun). Per runtime, a router with --api-keys (JSON: Deno reads
 * JSON; workerd gets the document from its launcher) and no Redis: keys checked (401 in
 * OpenAI's shape), models a key may not use are 404, limits kept in the router's memory answer
 * 429 with OpenAI's headers. Then one router per runtime on ONE Redis through Upstash's REST
 * protocol (the local bridge): a tenant's limit is shared by all three, whatever runtime each
 * request goes through.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256Hex } from "../../src/protect/key-set.ts";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "../support/upstash-bridge.ts";
import { RUNTIMES, startRouter, type Runtime } from "./runtimes.ts";

setDefaultTimeout(30_000);

const KEY = `sk-conformance-${crypto.randomUUID()}`;
const MODEL = "switchyard-sim";
/** Requests per minute: small, so a handful of requests reaches it. */
const LIMIT = 4;

let engine: Proc | undefined;
let dir = "";
let keysPath = "";

async function complete(
  url: string,
  key: string | undefined,
  body: Record<string, unknown> = {},
): Promise<Response> {
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}),
    },
    body: JSON.stringify({ model: MODEL, prompt: "conformance keys", max_tokens: 1, ...body }),
  });
  return res;
}

async function healthy(url: string): Promise<void> {
  await until(
    async () =>
      ((await (await fetch(`${url}/health`)).json()) as { healthy_workers: number })
        .healthy_workers === 1,
    `${url} to count its engine healthy`,
    20_000,
  );
}

beforeAll(async () => {
  engine = await startMain(["mocker", "--port", "0", "--block-size", "4", "--model", MODEL]);
  dir = mkdtempSync(join(tmpdir(), "switchyard-conformance-keys-"));
  keysPath = join(dir, "keys.json");
  writeFileSync(
    keysPath,
    JSON.stringify({
      keys: [
        {
          tenant: "conf",
          key_sha256: await sha256Hex(KEY),
          models: [MODEL],
          limits: { requests_per_minute: LIMIT },
        },
      ],
    }),
  );
}, 30_000);

afterAll(async () => {
  await stopAll([engine]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

for (const rt of RUNTIMES) {
  describe(`client API keys and local limits on ${rt.name}`, () => {
    let router: Proc | undefined;
    let url = "";

    beforeAll(async () => {
      router = await startRouter(rt, [
        "--port",
        "0",
        "--block-size",
        "4",
        "--api-keys",
        keysPath,
        "--worker",
        String(engine!.info.url),
        "--health-interval",
        "1",
      ]);
      url = String(router.info.url);
      await healthy(url);
    }, 90_000);

    afterAll(async () => {
      await stopAll([router]);
    });

    test("no key or a wrong one: 401 invalid_api_key; another model: 404; the key: served with the tenant's headers", async () => {
      for (const key of [undefined, `${KEY}x`]) {
        const r = await complete(url, key);
        expect(r.status).toBe(401);
        expect(((await r.json()) as { error: { code: string } }).error.code).toBe(
          "invalid_api_key",
        );
      }
      const other = await complete(url, KEY, { model: "another-model" });
      expect(other.status).toBe(404);
      await other.text();
      const ok = await complete(url, KEY);
      expect(ok.status).toBe(200);
      expect(ok.headers.get("x-ratelimit-limit-requests")).toBe(String(LIMIT));
      await ok.text();
    });

    test("past the limit: 429 rate_limit_exceeded with Retry-After", async () => {
      let last: Response | undefined;
      for (let i = 0; i < LIMIT + 1; i++) {
        last = await complete(url, KEY);
        if (last.status === 429) break;
        await last.text();
      }
      expect(last!.status).toBe(429);
      expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(((await last!.json()) as { error: { code: string } }).error.code).toBe(
        "rate_limit_exceeded",
      );
    });
  });
}

describe("one tenant limit shared by routers on Bun, Deno and workerd through Upstash REST", () => {
  let redis: RedisServer | undefined;
  let bridge: UpstashBridge | undefined;
  const routers = new Map<Runtime["name"], Proc>();

  beforeAll(async () => {
    redis = await startRedisServer();
    bridge = await startUpstashBridge({ redisPort: redis.port });
    const flags = [
      "--port",
      "0",
      "--block-size",
      "4",
      "--api-keys",
      keysPath,
      "--worker",
      String(engine!.info.url),
      "--health-interval",
      "1",
      "--redis",
      bridge.url,
      "--redis-token",
      bridge.token,
      "--redis-timeout",
      "1",
    ];
    for (const rt of RUNTIMES) routers.set(rt.name, await startRouter(rt, flags));
    for (const r of routers.values()) await healthy(String(r.info.url));
  }, 120_000);

  afterAll(async () => {
    await stopAll([...routers.values()]);
    await bridge?.stop();
    await redis?.stop();
  });

  test("requests through any runtime's router draw on one limit", async () => {
    const urls = [...routers.values()].map((r) => String(r.info.url));
    const statuses: number[] = [];
    for (let i = 0; i < 3 * LIMIT; i++) {
      const r = await complete(urls[i % urls.length]!, KEY);
      statuses.push(r.status);
      await r.arrayBuffer();
    }
    // One limit for the three (plus at most one refilled meanwhile), not one each.
    const served = statuses.filter((s) => s === 200).length;
    expect(served).toBeGreaterThanOrEqual(LIMIT);
    expect(served).toBeLessThanOrEqual(LIMIT + 1);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
  });
});
