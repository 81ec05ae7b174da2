/**
 * LoRA placement across routers: three simulated engines with one adapter slot each
 * (--max-loras 1), two routers that load unknown adapters on demand, and a third that may
 * evict. Engines report their adapters in GET /v1/engine/info, which is what these tests
 * check; the routers do not share LoRA state, they agree through rendezvous hashing and the
 * engines' answers. Every process is stopped by PID in afterAll.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { stopAll, until, type Proc } from "../support/processes.ts";
import {
  engineLoras,
  freePorts,
  loopbackUrl,
  metric,
  prompt,
  send,
  startEngines,
  startRouter,
  urlOf,
  workers,
} from "./multi-router-cluster.ts";

setDefaultTimeout(30_000);

const BASE = "switchyard-sim"; // the engines' base model (reported in /v1/engine/info)

let engines: Proc[] = [];
let routers: Proc[] = [];
let r1 = "";
let r2 = "";
const engineById = new Map<string, string>();

beforeAll(async () => {
  const ports = freePorts(2);
  engines = await startEngines(3, ports.map(loopbackUrl), ["--max-loras", "1"]);
  for (const e of engines) engineById.set(String(e.info.worker_id), urlOf(e));
  const onDemand = ["--lora-load-on-demand", "--lora-path", "/adapters/{name}"];
  routers = await Promise.all(ports.map((p) => startRouter(engines, p, onDemand)));
  [r1, r2] = routers.map(urlOf) as [string, string];
});

afterAll(async () => {
  await stopAll([...routers, ...engines]);
});

/** Engine URLs holding `name`, per their own /v1/engine/info. */
async function holders(name: string): Promise<string[]> {
  const out: string[] = [];
  for (const url of engineById.values()) if ((await engineLoras(url)).includes(name)) out.push(url);
  return out;
}

const loads = (url: string, result: string) =>
  metric(url, "switchyard_lora_loads_total", `{result="${result}"}`);

async function cachedOn(worker: string): Promise<number> {
  return (await workers(r1)).find((w) => w.id === worker)!.cached_blocks;
}

describe("LoRA adapters loaded on demand", () => {
  test("the first request loads the adapter on exactly one engine; later ones through either router go there", async () => {
    const first = await send(r1, { model: "sql", prompt: prompt("sql-0", 2), max_tokens: 1 });
    expect(first.status).toBe(200);
    expect(await holders("sql")).toEqual([engineById.get(first.worker)!]);
    for (const [i, url] of [r1, r2, r2, r1].entries()) {
      const next = await send(url, {
        model: "sql",
        prompt: prompt(`sql-${i + 1}`, 2),
        max_tokens: 1,
      });
      expect(next.status).toBe(200);
      expect(next.worker).toBe(first.worker);
    }
    expect(await holders("sql")).toHaveLength(1);
    expect(await loads(r1, "loaded")).toBe(1);
    // Router 2 placed it on the same engine (same hashing), which said "already loaded".
    expect(await loads(r2, "already_loaded")).toBe(1);
    expect(await loads(r2, "loaded")).toBe(0);
    expect((await workers(r2)).find((w) => w.id === first.worker)!.loras).toEqual(["sql"]);
  });

  test("concurrent first requests for one adapter on one router trigger one load", async () => {
    const before = await loads(r2, "loaded");
    const all = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        send(r2, { model: "chat", prompt: prompt(`chat-${i}`, 2), max_tokens: 1 }),
      ),
    );
    expect(all.map((x) => x.status)).toEqual(Array(8).fill(200));
    expect(new Set(all.map((x) => x.worker)).size).toBe(1);
    expect(await holders("chat")).toEqual([engineById.get(all[0]!.worker)!]);
    expect((await loads(r2, "loaded")) - before).toBe(1);
    expect(await loads(r2, "already_loaded")).toBe(1); // still only the one from the sql test
  });

  test("a LoRA request never matches the base model's blocks of the same prompt, even on the same engine", async () => {
    const p = prompt("shared-prefix", 6);
    const pin = { "x-session-id": "lora-vs-base" };
    // Counted before: the engine already caches earlier tests' blocks, which must not pass for these.
    const cachedBefore = new Map((await workers(r1)).map((w) => [w.id, w.cached_blocks]));
    const sqlWorker = (await send(r1, { model: "sql", prompt: p, max_tokens: 1 }, pin)).worker;
    const cachedAfterLora = cachedBefore.get(sqlWorker)! + 6;
    await until(
      async () => (await cachedOn(sqlWorker)) >= cachedAfterLora,
      "the adapter's blocks in router 1's index",
    );

    // Same tokens, base model, same engine (the session pins it): nothing cached for it yet.
    const base = await send(r1, { model: BASE, prompt: p, max_tokens: 1 }, pin);
    expect(base.status).toBe(200);
    expect(base.worker).toBe(sqlWorker);
    expect(base.overlap).toBe(0);
    await until(
      async () => (await cachedOn(sqlWorker)) >= cachedAfterLora + 6,
      "the base model's blocks in the index",
    );

    // Each now matches its own blocks.
    expect((await send(r1, { model: "sql", prompt: p, max_tokens: 1 }, pin)).overlap).toBe(6);
    expect((await send(r1, { model: BASE, prompt: p, max_tokens: 1 }, pin)).overlap).toBe(6);
  });

  test("no free slot anywhere: 503 naming the adapter, through either router", async () => {
    expect(
      (await send(r1, { model: "third", prompt: prompt("third", 2), max_tokens: 1 })).status,
    ).toBe(200);
    for (const url of [r1, r2]) {
      const full = await send(url, { model: "fourth", prompt: prompt("fourth", 2), max_tokens: 1 });
      expect(full.status).toBe(503);
      const err = (JSON.parse(full.text) as { error: { code: string; message: string } }).error;
      expect(err.code).toBe("lora_no_capacity");
      expect(err.message).toContain('"fourth"');
    }
    expect(await holders("fourth")).toEqual([]);
  });

  test("--lora-evict unloads the least recently used adapter to make room; a router that lost it answers 503, not a stray 404", async () => {
    const evicting = await startRouter(engines, 0, ["--lora-load-on-demand", "--lora-evict"]);
    routers.push(evicting);
    const r3 = urlOf(evicting);
    const before = new Map<string, string[]>();
    for (const url of engineById.values()) before.set(url, await engineLoras(url));

    const res = await send(r3, { model: "fourth", prompt: prompt("fourth-2", 2), max_tokens: 1 });
    expect(res.status).toBe(200);
    const engine = engineById.get(res.worker)!;
    expect(await holders("fourth")).toEqual([engine]);
    const evicted = before.get(engine)![0]!;
    expect(await engineLoras(engine)).toEqual(["fourth"]);
    expect(await metric(r3, "switchyard_lora_unloads_total")).toBe(1);

    // Router 1 still believes `evicted` is there: the engine's 404 makes it look again.
    const stale = await send(r1, { model: evicted, prompt: prompt("stale", 2), max_tokens: 1 });
    expect(stale.status).toBe(503);
    expect((JSON.parse(stale.text) as { error: { message: string } }).error.message).toContain(
      `"${evicted}"`,
    );
  });
});
