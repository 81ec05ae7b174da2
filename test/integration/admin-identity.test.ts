/**
 * No identity from an address, against real routers and engines: with --api-keys or a
 * non-loopback --host and no --admin-token, the admin API is closed to every client (loopback
 * included: behind a sidecar every client is loopback), with one line at start saying so;
 * engines push KV events with their own --events-token (counted and logged once per engine when
 * refused), which opens nothing else; `serve --engines 2` on every interface (the image's
 * command) keeps routing with precise events and no refused push.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256Hex } from "../../src/protect/key-set.ts";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

const ADMIN = "identity-admin-token";
const EVENTS = "identity-events-token-0123456789";
const procs: Proc[] = [];
let dir = "";

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "switchyard-identity-"));
});
afterAll(async () => {
  await stopAll(procs);
  rmSync(dir, { recursive: true, force: true });
});

async function start(args: readonly string[]): Promise<Proc> {
  const p = await startMain(args);
  procs.push(p);
  return p;
}

/** The port a router printed, reached over loopback whatever it listens on. */
const loopbackUrl = (p: Proc): string =>
  `http://127.0.0.1:${p.info.port ?? new URL(String(p.info.url)).port}`;

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n"))
    if (line.startsWith(name)) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  return sum;
}

async function completion(
  url: string,
  prompt: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ prompt, max_tokens: 2 }),
  });
}

describe("the admin API trusts no address once the router is exposed", () => {
  test("--api-keys without --admin-token: a loopback client gets 403 naming the flag; one line at start says so", async () => {
    const key = `sk-identity-${crypto.randomUUID()}`;
    writeFileSync(
      join(dir, "keys.json"),
      JSON.stringify({ keys: [{ tenant: "t", key_sha256: await sha256Hex(key) }] }),
    );
    const r = await start([
      "serve",
      "--port",
      "0",
      "--host",
      "127.0.0.1",
      "--api-keys",
      join(dir, "keys.json"),
    ]);
    for (const path of ["/v1/workers", "/debug/kv/dump", "/ui"]) {
      const res = await fetch(`${loopbackUrl(r)}${path}`);
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
        "--admin-token",
      );
    }
    // A client key is no admin credential either.
    expect(
      (await fetch(`${loopbackUrl(r)}/v1/workers`, { headers: { authorization: `Bearer ${key}` } }))
        .status,
    ).toBe(403);
    await until(() => r.output().includes("admin API closed"), "the start line");
    expect(
      r
        .output()
        .split("\n")
        .filter((l) => l.includes("admin API closed")),
    ).toHaveLength(1);
  });

  test("a non-loopback --host without --admin-token: closed too; with the token it answers", async () => {
    const closed = await start(["serve", "--port", "0", "--host", "0.0.0.0"]);
    const res = await fetch(`${loopbackUrl(closed)}/v1/workers`);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("--admin-token");
    const open = await start(["serve", "--port", "0", "--host", "0.0.0.0", "--admin-token", ADMIN]);
    expect((await fetch(`${loopbackUrl(open)}/v1/workers`)).status).toBe(401);
    expect(
      (
        await fetch(`${loopbackUrl(open)}/v1/workers`, {
          headers: { authorization: `Bearer ${ADMIN}` },
        })
      ).status,
    ).toBe(200);
  });

  test("the zero-config local start (default host, no keys) still trusts loopback", async () => {
    const r = await start(["serve", "--port", "0"]);
    expect((await fetch(`${loopbackUrl(r)}/v1/workers`)).status).toBe(200);
    expect(r.output()).not.toContain("admin API closed");
  });
});

describe("engines push events with their own credential", () => {
  test("the events token lets pushes in and opens nothing else; a wrong one is counted and logged once per engine", async () => {
    const r = await start([
      "serve",
      "--port",
      "0",
      "--host",
      "0.0.0.0",
      "--admin-token",
      ADMIN,
      "--events-token",
      EVENTS,
      "--block-size",
      "16",
    ]);
    const url = loopbackUrl(r);
    expect(await metric(url, "switchyard_kv_event_pushes_refused_total")).toBe(0);
    const good = await start([
      "mocker",
      "--port",
      "0",
      "--router-url",
      url,
      "--events-token",
      EVENTS,
      "--event-batch-ms",
      "2",
      "--block-size",
      "16",
      "--seed",
      "1",
    ]);
    const reg = await fetch(`${url}/v1/workers`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ url: good.info.url }),
    });
    expect(reg.status).toBe(201);
    await until(
      async () =>
        ((await (await fetch(`${url}/health`)).json()) as { healthy_workers: number })
          .healthy_workers === 1,
      "the engine healthy",
    );
    const prompt = "the same long prefix for both turns ".repeat(20);
    expect((await completion(url, prompt)).status).toBe(200);
    await until(
      async () => (await metric(url, "switchyard_kv_events_applied_total")) > 0,
      "the engine's events applied",
    );
    expect(await metric(url, "switchyard_kv_event_pushes_refused_total")).toBe(0);
    // The events token is no admin credential.
    expect(
      (await fetch(`${url}/v1/workers`, { headers: { authorization: `Bearer ${EVENTS}` } })).status,
    ).toBe(401);

    // An engine with a wrong token: every push refused and counted, one log line for it.
    const bad = await start([
      "mocker",
      "--port",
      "0",
      "--router-url",
      url,
      "--events-token",
      "not-the-events-token-at-all",
      "--event-batch-ms",
      "2",
      "--block-size",
      "16",
      "--seed",
      "2",
    ]);
    await fetch(`${url}/v1/workers`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ url: bad.info.url }),
    });
    for (let i = 0; i < 3; i++) await completion(String(bad.info.url), `turn ${i}: ${prompt}`);
    await until(
      async () => (await metric(url, "switchyard_kv_event_pushes_refused_total")) >= 3,
      () => `three refused pushes counted\n${bad.output()}\n${r.output()}`,
    );
    const lines = r
      .output()
      .split("\n")
      .filter((l) => l.includes("KV event push refused"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("--events-token");
  });

  test("with --events-token set, a loopback push without it is refused: no address passes instead, and the 401 names the flag", async () => {
    const r = await start([
      "serve",
      "--port",
      "0",
      "--host",
      "127.0.0.1",
      "--events-token",
      EVENTS,
    ]);
    const res = await fetch(`${loopbackUrl(r)}/v1/kv/events`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer wrong-wrong-wrong" },
      body: "[]",
    });
    expect(res.status).toBe(401);
    expect(await res.text()).toContain("--events-token");
    expect(
      await metric(loopbackUrl(r), 'switchyard_kv_event_pushes_refused_total{reason="invalid"}'),
    ).toBe(1);
  });

  test("the image's `serve --engines 2` on every interface: routes with overlap on the second turn, no push refused, admin closed", async () => {
    const r = await start(["serve", "--port", "0", "--host", "0.0.0.0", "--engines", "2"]);
    const url = loopbackUrl(r);
    await until(
      async () =>
        ((await (await fetch(`${url}/health`)).json()) as { healthy_workers: number })
          .healthy_workers === 2,
      "both embedded engines healthy",
    );
    const prompt =
      "a conversation long enough to fill several KV blocks of sixteen tokens each ".repeat(8);
    const first = await completion(url, prompt);
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    await until(
      async () => (await metric(url, "switchyard_kv_events_applied_total")) > 0,
      "events from the embedded engines",
    );
    const second = await completion(url, `${prompt} and a second turn`);
    expect(second.status).toBe(200);
    expect(Number(second.headers.get("x-switchyard-overlap-blocks"))).toBeGreaterThan(0);
    expect(await metric(url, "switchyard_kv_event_pushes_refused_total")).toBe(0);
    expect((await fetch(`${url}/v1/workers`)).status).toBe(403);
  });
});
