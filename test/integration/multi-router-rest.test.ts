/**
 * The same sharing over Upstash's REST protocol: two routers reach the redis-server through
 * the Upstash bridge (test/support/upstash-bridge.ts, an HTTP server speaking Upstash's
 * REST protocol, running in this test process) with `--redis http://… --redis-token …`.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import { startUpstashBridge, type UpstashBridge } from "../support/upstash-bridge.ts";
import {
  complete,
  engineSessions,
  peekSession,
  prompt,
  routing,
  send,
  startCluster,
  urlOf,
  workers,
} from "./multi-router-cluster.ts";

setDefaultTimeout(30_000);

let redis: RedisServer | undefined;
let bridge: UpstashBridge | undefined;
let engines: Proc[] = [];
let routers: Proc[] = [];
let r: string[] = [];
const engineById = new Map<string, string>();

beforeAll(async () => {
  redis = await startRedisServer();
  bridge = await startUpstashBridge({ redisPort: redis.port });
  const shared = [
    "--redis",
    bridge.url,
    "--redis-token",
    bridge.token,
    "--session-reaper-interval",
    "0.2",
  ];
  ({ engines, routers } = await startCluster(3, 2, shared));
  for (const e of engines) engineById.set(String(e.info.worker_id), urlOf(e));
  r = routers.map(urlOf);
});

afterAll(async () => {
  await stopAll([...routers, ...engines]);
  await bridge?.stop();
  await redis?.stop();
});

describe("two routers over Upstash REST", () => {
  test("a session bound through router 1 is resolved by router 2 to the same (worker, dp rank)", async () => {
    for (let s = 0; s < 4; s++) {
      const h = { "x-session-id": `rest-${s}` };
      const first = await send(r[0]!, { prompt: prompt(`rest-${s}-a`, 4), max_tokens: 1 }, h);
      expect(first.status).toBe(200);
      const next = await send(r[1]!, { prompt: prompt(`rest-${s}-b`, 4), max_tokens: 1 }, h);
      expect(next.status).toBe(200);
      expect({ worker: next.worker, dpRank: next.dpRank }).toEqual({
        worker: first.worker,
        dpRank: first.dpRank,
      });
    }
    expect(bridge!.requests.get("/pipeline") ?? 0).toBeGreaterThan(0); // it really went through REST
  });

  test("an expired engine-backed session is closed exactly once", async () => {
    const res = await send(r[1]!, {
      prompt: prompt("rest-eng", 2),
      max_tokens: 1,
      nvext: { session_control: { session_id: "rest-eng", action: "open", timeout: 1 } },
    });
    expect(res.status).toBe(200);
    expect(await peekSession(r[0]!, "rest-eng")).toMatchObject({
      worker_id: res.worker,
      kind: "engine-backed",
    });
    const engine = engineById.get(res.worker)!;
    const closed = async () =>
      (await engineSessions(engine)).find((s) => s.session_id === "rest-eng")?.closed_count ?? 0;
    await until(
      async () => (await closed()) >= 1,
      "the expired session to be closed on its engine",
    );
    await Bun.sleep(600); // three more reaper periods on both routers
    expect(await closed()).toBe(1);
  });

  test("a long stream through router 1 shows as load in router 2's /v1/workers", async () => {
    const res = await complete(r[0]!, {
      prompt: prompt("rest-long", 8),
      max_tokens: 5000,
      stream: true,
    });
    const reader = res.body!.getReader();
    await reader.read();
    const w = routing(res).worker;
    const loadOn = async () => {
      const v = (await workers(r[1]!)).find((x) => x.id === w)!;
      return v.active_prefill_tokens + v.active_decode_blocks;
    };
    await until(
      async () => (await loadOn()) > 0,
      "router 2 to see the load through the REST stream",
    );
    await reader.cancel();
    await until(async () => (await loadOn()) === 0, "router 2 to see it freed");
  });
});
