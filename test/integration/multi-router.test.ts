/**
 * Several routers, one truth: three router processes share one real redis-server (started
 * here on a free loopback port) and the same three simulated engines. Sticky bindings,
 * engine-backed session expiry and active load are shared through Redis; worker ids agree
 * because every router derives them from the engine URL. Every engine pushes its KV events
 * to all three routers, so each router's index follows the engines. Redis is killed and
 * restarted while requests flow. Every process is stopped by PID in afterAll.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { RedisClient } from "bun";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import {
  compareBlocks,
  complete,
  engineBlocks,
  engineSessions,
  freePorts,
  loopbackUrl,
  metric,
  peekSession,
  prompt,
  routerBlocks,
  routing,
  send,
  startEngines,
  startRouter,
  urlOf,
  workers,
} from "./multi-router-cluster.ts";

setDefaultTimeout(30_000);

/** Router-only (X-Session-ID) bindings live this long without use (seconds). */
const SESSION_TTL_S = 2;

let redis: RedisServer | undefined;
let engines: Proc[] = [];
let routers: Proc[] = [];
let r: string[] = []; // router URLs
const engineById = new Map<string, string>(); // worker id -> engine URL

beforeAll(async () => {
  redis = await startRedisServer();
  // Router ports first: every engine pushes its KV events to all three routers.
  const ports = freePorts(3);
  engines = await startEngines(3, ports.map(loopbackUrl));
  for (const e of engines) engineById.set(String(e.info.worker_id), urlOf(e));
  // Burst claims on (they are off by default): every test below runs through them too.
  const shared = [
    "--redis",
    redis.url,
    "--session-ttl",
    String(SESSION_TTL_S),
    "--session-reaper-interval",
    "0.2",
    "--burst-claims",
  ];
  routers = await Promise.all(ports.map((p) => startRouter(engines, p, shared)));
  r = routers.map(urlOf);
});

afterAll(async () => {
  await stopAll([...routers, ...engines]);
  await redis?.stop();
});

/** Failure context: the routers' logs. */
function logs(): string {
  return routers.map((p, i) => `router ${i + 1}:\n${p.output()}`).join("\n");
}

describe("worker identity", () => {
  test("every router knows each engine under the same id, the one the engine derives from its URL", async () => {
    const views = await Promise.all(r.map((u) => workers(u)));
    const ids = views.map((v) => v.map((w) => `${w.id}@${w.url}`).sort());
    expect(ids[1]).toEqual(ids[0]!);
    expect(ids[2]).toEqual(ids[0]!);
    expect(new Set(views[0]!.map((w) => w.id))).toEqual(new Set(engineById.keys()));
    for (const w of views[0]!) expect(w.url).toBe(engineById.get(w.id)!);
  });
});

describe("KV index on every router", () => {
  test("after requests through router 1 only, router 2's index matches the engines' caches (events reach every router)", async () => {
    for (let i = 0; i < 6; i++) {
      expect((await send(r[0]!, { prompt: prompt(`kv-${i}`, 3 + i), max_tokens: 1 })).status).toBe(
        200,
      );
    }
    // Routers 2 and 3 saw none of these requests: only the engines' events tell them.
    for (const i of [1, 2]) {
      let detail = "";
      await until(
        async () => {
          const [e, ri] = await Promise.all([
            engineBlocks([...engineById.values()]),
            routerBlocks(r[i]!),
          ]);
          const c = compareBlocks(e, ri);
          detail = c.detail;
          return e.size >= 3 + 4 + 5 + 6 + 7 + 8 && c.same;
        },
        () => `router ${i + 1}'s /debug/kv/dump to match the engines (${detail})\n${logs()}`,
      );
    }
  });
});

describe("sticky sessions through a shared Redis", () => {
  test("a session bound through router 1 is resolved by routers 2 and 3 to the same (worker, dp rank)", async () => {
    for (let s = 0; s < 6; s++) {
      const h = { "x-session-id": `shared-${s}` };
      const first = await send(r[0]!, { prompt: prompt(`shared-${s}-a`, 4), max_tokens: 1 }, h);
      expect(first.status).toBe(200);
      expect(engineById.has(first.worker)).toBe(true);
      // Other prompts, other routers: only the shared binding keeps them together.
      for (const [i, url] of [r[1]!, r[2]!].entries()) {
        const next = await send(url, { prompt: prompt(`shared-${s}-b${i}`, 4), max_tokens: 1 }, h);
        expect(next.status).toBe(200);
        expect({ worker: next.worker, dpRank: next.dpRank }).toEqual({
          worker: first.worker,
          dpRank: first.dpRank,
        });
      }
      const bound = await peekSession(r[2]!, `shared-${s}`);
      expect(bound).toMatchObject({
        worker_id: first.worker,
        dp_rank: first.dpRank,
        kind: "router-only",
      });
    }
  });

  test("a peek does not slide the TTL; a request through another router does", async () => {
    const h = { "x-session-id": "sliding" };
    expect((await send(r[0]!, { prompt: prompt("sliding", 2), max_tokens: 1 }, h)).status).toBe(
      200,
    );
    const a = (await peekSession(r[1]!, "sliding"))!;
    expect(a.ttl_ms).toBe(SESSION_TTL_S * 1000);
    await Bun.sleep(30); // let Redis' clock move on
    const b = (await peekSession(r[2]!, "sliding"))!;
    expect(b.expires_at_ms).toBe(a.expires_at_ms);
    expect((await send(r[1]!, { prompt: prompt("sliding-2", 2), max_tokens: 1 }, h)).status).toBe(
      200,
    );
    const c = (await peekSession(r[0]!, "sliding"))!;
    expect(c.expires_at_ms).toBeGreaterThanOrEqual(a.expires_at_ms + 30);
  });
});

describe("engine-backed sessions (nvext.session_control)", () => {
  const sc = (session_id: string, action?: "open" | "close", timeout?: number) => ({
    nvext: {
      session_control: {
        session_id,
        ...(action ? { action } : {}),
        ...(timeout !== undefined ? { timeout } : {}),
      },
    },
  });

  async function sessionOn(engineUrl: string, id: string) {
    return (await engineSessions(engineUrl)).find((s) => s.session_id === id);
  }

  async function everyEngineSession(id: string) {
    const all = await Promise.all([...engineById.values()].map((u) => sessionOn(u, id)));
    return all.filter((s) => s !== undefined);
  }

  test("open binds engine-backed on the engine that opened it; after expiry each is closed exactly once across 3 routers, router-only ones never", async () => {
    const expiredBefore = (
      await Promise.all(r.map((u) => metric(u, "switchyard_sessions_expired_total")))
    ).reduce((a, b) => a + b, 0);
    const opened: { id: string; engine: string }[] = [];
    for (let i = 0; i < 6; i++) {
      const id = `eng-${i}`;
      const res = await send(r[i % 3]!, {
        prompt: prompt(id, 2),
        max_tokens: 1,
        ...sc(id, "open", 1),
      });
      expect(res.status).toBe(200);
      const engine = engineById.get(res.worker)!;
      // The engine was asked first, with the router's timeout + 30 s.
      expect(await sessionOn(engine, id)).toMatchObject({
        open: true,
        opened_count: 1,
        closed_count: 0,
        timeout: 31,
      });
      expect(await peekSession(r[(i + 1) % 3]!, id)).toMatchObject({
        worker_id: res.worker,
        kind: "engine-backed",
        ttl_ms: 1000,
      });
      opened.push({ id, engine });
    }
    // Router-only sessions on every router: they expire too, silently.
    for (let i = 0; i < 3; i++) {
      expect(
        (
          await send(
            r[i]!,
            { prompt: prompt(`ro-${i}`, 2), max_tokens: 1 },
            { "x-session-id": `ro-${i}` },
          )
        ).status,
      ).toBe(200);
    }

    // Three reapers (every 0.2 s) race for each expired session.
    for (const o of opened) {
      await until(
        async () => ((await sessionOn(o.engine, o.id))?.closed_count ?? 0) >= 1,
        `session ${o.id} to be closed on its engine`,
        10_000,
      );
    }
    await until(
      async () =>
        (await Promise.all(r.map((u) => peekSession(u, "ro-0")))).every((b) => b === undefined),
      "router-only bindings to expire",
    );
    await Bun.sleep(600); // three more reaper periods: a second close would show now
    for (const o of opened) {
      const everywhere = await everyEngineSession(o.id);
      expect(everywhere).toHaveLength(1); // opened and closed on one engine only
      expect(everywhere[0]).toMatchObject({ open: false, opened_count: 1, closed_count: 1 });
    }
    for (let i = 0; i < 3; i++) expect(await everyEngineSession(`ro-${i}`)).toHaveLength(0);
    const expired = (
      await Promise.all(r.map((u) => metric(u, "switchyard_sessions_expired_total")))
    ).reduce((a, b) => a + b, 0);
    expect(expired - expiredBefore).toBe(6);
  });

  test("middle turns go to the session's engine and slide its TTL; close unbinds at once and closes on the engine after the answer", async () => {
    const id = "turns";
    const open = await send(r[0]!, {
      prompt: prompt("turn-0", 2),
      max_tokens: 1,
      ...sc(id, "open", 2),
    });
    expect(open.status).toBe(200);
    const engine = engineById.get(open.worker)!;
    const opened = (await peekSession(r[1]!, id))!;
    await Bun.sleep(30); // let Redis' clock move on
    for (let t = 1; t <= 3; t++) {
      const mid = await send(r[t % 3]!, {
        prompt: prompt(`turn-${t}`, 2),
        max_tokens: 1,
        ...sc(id),
      });
      expect(mid.worker).toBe(open.worker);
    }
    expect((await peekSession(r[2]!, id))!.expires_at_ms).toBeGreaterThanOrEqual(
      opened.expires_at_ms + 30,
    );
    const close = await complete(r[1]!, {
      prompt: prompt("turn-last", 2),
      max_tokens: 20,
      stream: true,
      ...sc(id, "close"),
    });
    expect(routing(close).worker).toBe(open.worker);
    expect(await peekSession(r[2]!, id)).toBeUndefined(); // unbound before the answer ends
    expect((await sessionOn(engine, id))?.closed_count).toBe(0); // closed only once generation is over
    await close.text();
    await until(
      async () => (await sessionOn(engine, id))?.closed_count === 1,
      "the engine to close the session after the last turn",
    );
    expect(await sessionOn(engine, id)).toMatchObject({
      opened_count: 1,
      closed_count: 1,
      open: false,
    });
  });

  test("a malformed session_control is a 400 naming the field", async () => {
    const bad = await complete(r[0]!, {
      prompt: "x",
      max_tokens: 1,
      nvext: { session_control: { session_id: "s", action: "pause" } },
    });
    expect(bad.status).toBe(400);
    const body = (await bad.json()) as { error: { message: string; param: string } };
    expect(body.error.param).toBe("nvext.session_control.action");
  });
});

describe("active load shared between routers", () => {
  test("a long stream through router 1 shows as load on its worker in router 2's /v1/workers, and goes when it ends", async () => {
    const ac = new AbortController();
    const res = await complete(
      r[0]!,
      { prompt: prompt("long-stream", 8), max_tokens: 5000, stream: true },
      {},
      ac.signal,
    );
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read(); // streaming now
    const w = routing(res).worker;
    const loadOn = async (url: string) => {
      const v = (await workers(url)).find((x) => x.id === w)!;
      return v.active_prefill_tokens + v.active_decode_blocks;
    };
    await until(
      async () => (await loadOn(r[1]!)) > 0,
      () => `router 2 to see the load on worker ${w}\n${logs()}`,
    );
    expect(await loadOn(r[2]!)).toBeGreaterThan(0);
    await reader.cancel();
    await until(async () => (await loadOn(r[1]!)) === 0, "router 2 to see the load freed");
    expect(await metric(r[1]!, "switchyard_load_sync_peers")).toBe(2);
    expect(await metric(r[0]!, "switchyard_load_sync_published_events_total")).toBeGreaterThan(0);
    expect(await metric(r[1]!, "switchyard_load_sync_received_messages_total")).toBeGreaterThan(0);
  });
});

describe("burst claims (the kv policy's decisions, claimed in one list the routers share)", () => {
  const OUTCOMES = ["clear", "counted", "moved", "failed"] as const;
  const claimsOf = async (url: string) =>
    Object.fromEntries(
      await Promise.all(
        OUTCOMES.map(
          async (o) =>
            [o, await metric(url, "switchyard_burst_claims_total", `{outcome="${o}"}`)] as const,
        ),
      ),
    );

  test("requests sent at once through the three routers: each is claimed exactly once, none fails, and the list names all three routers", async () => {
    const before = await Promise.all(r.map(claimsOf));
    const sent = await Promise.all(
      r.flatMap((url, i) =>
        [0, 1, 2].map((k) => send(url, { prompt: prompt(`burst-${i}-${k}`, 6), max_tokens: 1 })),
      ),
    );
    expect(sent.map((x) => x.status)).toEqual(sent.map(() => 200));
    const after = await Promise.all(r.map(claimsOf));
    for (let i = 0; i < 3; i++) {
      const delta = OUTCOMES.map((o) => after[i]![o]! - before[i]![o]!);
      expect({
        router: i + 1,
        claimed: delta.reduce((a, b) => a + b, 0),
        failed: delta[3],
      }).toEqual({ router: i + 1, claimed: 3, failed: 0 });
    }
    // The list is Redis's: its claims name the routers that made them.
    const client = new RedisClient(redis!.url);
    try {
      const held = (await client.send("LRANGE", [
        "switchyard:burst_claims",
        "0",
        "-1",
      ])) as string[];
      const routerIds = new Set(held.map((c) => c.split("|")[1]));
      expect(routerIds.size).toBe(3);
    } finally {
      client.close();
    }
  });
});

describe("request ids are per router", () => {
  test("two routers given the same client request_id at POST /v1/route both book it; each free releases its own", async () => {
    // Different prompts (same id): load that shares no prefix adds up in /v1/workers.
    const route = async (url: string) => {
      const tokens = Array.from({ length: 4 * 16 }, (_, i) => (url === r[0] ? 1000 : 5000) + i);
      const res = await fetch(`${url}/v1/route`, {
        method: "POST",
        body: JSON.stringify({ tokens, request_id: "client-id-1" }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { worker_id: string }).worker_id;
    };
    const total = async (url: string) =>
      (await workers(url)).reduce(
        (s, w) => s + w.active_prefill_tokens + w.active_decode_blocks,
        0,
      );
    await route(r[0]!);
    await until(
      async () => (await total(r[1]!)) > 0,
      () => `router 2 to see router 1's booking\n${logs()}`,
    );
    const seenOne = await total(r[1]!);
    // Before ids were kept per origin, router 2 refused its own "client-id-1" with 409.
    await route(r[1]!);
    expect(await total(r[1]!)).toBe(2 * seenOne);
    await until(
      async () => (await total(r[2]!)) === 2 * seenOne,
      () => `router 3 to see both bookings\n${logs()}`,
    );
    expect((await fetch(`${r[0]}/v1/route/client-id-1/free`, { method: "POST" })).status).toBe(200);
    await until(
      async () => (await total(r[2]!)) === seenOne,
      () => `router 3 to drop router 1's booking only\n${logs()}`,
    );
    expect(
      await (await fetch(`${r[1]}/v1/route/client-id-1/free`, { method: "POST" })).json(),
    ).toEqual({ success: true });
    await until(async () => (await total(r[2]!)) === 0, "router 3 to see router 2's free");
  });
});

describe("Redis goes away and comes back", () => {
  test("requests through both routers never fail while Redis is down; affinity resumes once it is back", async () => {
    const statuses: number[] = [];
    let stop = false;
    let n = 0;
    const loop = async (url: string, tag: string) => {
      while (!stop) {
        const i = n++;
        const res = await send(
          url,
          { prompt: prompt(`${tag}-${i}`, 2), max_tokens: 1 },
          { "x-session-id": `flow-${i % 5}` },
        );
        statuses.push(res.status);
      }
    };
    const loops = [loop(r[0]!, "a"), loop(r[1]!, "b"), loop(r[0]!, "c"), loop(r[1]!, "d")];
    try {
      await until(() => statuses.length >= 20, "requests to flow");
      const errorsBefore = await metric(r[0]!, "switchyard_affinity_store_errors_total");
      await redis!.stop();
      await until(
        async () =>
          (await metric(r[0]!, "switchyard_affinity_store_available")) === 0 &&
          (await metric(r[1]!, "switchyard_affinity_store_available")) === 0,
        "both routers to notice Redis is down",
      );
      const duringDown = statuses.length;
      await until(
        () => statuses.length >= duringDown + 40,
        "requests to keep flowing while Redis is down",
      );
      expect(await metric(r[0]!, "switchyard_affinity_store_errors_total")).toBeGreaterThan(
        errorsBefore,
      );
      await redis!.restart();
      // All three, not just the two sending: router 3 answers the peek at the end.
      await until(
        async () =>
          (await Promise.all(r.map((u) => metric(u, "switchyard_affinity_store_available")))).every(
            (v) => v === 1,
          ),
        "every router to reach Redis again",
      );
      const afterUp = statuses.length;
      await until(() => statuses.length >= afterUp + 20, "requests to flow after the restart");
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(statuses.length).toBeGreaterThan(80);

    // Affinity again: a binding made through one router holds on the other.
    const h = { "x-session-id": "after-restart" };
    const first = await send(r[1]!, { prompt: prompt("after-a", 3), max_tokens: 1 }, h);
    const next = await send(r[0]!, { prompt: prompt("after-b", 3), max_tokens: 1 }, h);
    expect(next.worker).toBe(first.worker);
    expect(await peekSession(r[2]!, "after-restart")).toMatchObject({ worker_id: first.worker });
    // The routers logged the outage once each, not once per request.
    const downLines = routers[0]!
      .output()
      .split("\n")
      .filter((l) => l.includes("Redis unavailable; sessions are not sticky"));
    expect(downLines).toHaveLength(1);
  });
});
