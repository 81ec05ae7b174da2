/**
 * Issue 12 §5 against a real router process: what unauthenticated clients may learn and
 * make the router do. A 502 names worker ids, never an engine's URL or answer; a
 * malformed chunked body is logged as what it is; a `model` that climbs a path never
 * reaches an engine as a lora_path.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { engineLoras, startEngines, startRouter, urlOf } from "./multi-router-cluster.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";

const SECRET_TEXT = "CUDA out of memory at /srv/models/secret-weights";
const ADMIN_TOKEN = "router-admin-token-never-for-engines";
const ENGINE_TOKEN = "engine-token";

describe("security (real router)", () => {
  let fakeEngine: ReturnType<typeof Bun.serve> | undefined;
  let engines: Proc[] = [];
  let router: Proc | undefined;
  let url = "";
  const engineCalls: string[] = [];

  beforeAll(async () => {
    // An engine that is healthy but fails every completion with its own error text.
    fakeEngine = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req) {
        const path = new URL(req.url).pathname;
        engineCalls.push(`${path} ${req.headers.get("authorization") ?? "-"}`);
        if (path === "/health") return new Response("ok");
        if (path === "/v1/completions") return new Response(SECRET_TEXT, { status: 503 });
        return new Response("not here", { status: 404 });
      },
    });
    engines = await startEngines(1, [], ["--max-loras", "1"]);
    router = await startRouter(engines, 0, [
      "--lora-load-on-demand",
      "--lora-evict",
      "--max-retries",
      "0",
      "--health-interval",
      "0.2",
    ]);
    url = urlOf(router);
  });
  afterAll(async () => {
    await stopAll([router, ...engines]);
    fakeEngine?.stop(true);
  });

  test("a model that climbs a path is a 400 naming model; the engine is never asked to load it", async () => {
    const before = await engineLoras(urlOf(engines[0]!));
    const res = await fetch(`${url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "../../../../root/.ssh/id_rsa", prompt: "x", max_tokens: 1 }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe("model");
    expect(await engineLoras(urlOf(engines[0]!))).toEqual(before);
  });

  test("a 502 names the worker id, not the engine's URL or its error text", async () => {
    const engineUrl = `http://127.0.0.1:${fakeEngine!.port}`;
    // Register the failing engine alone, under its own router (no other worker to fall back on).
    // One retry allowed, one worker: the router gives up itself (502) instead of passing the
    // engine's last answer through, which a proxy does for answers it does not retry.
    const solo = await startRouter([], 0, [
      "--worker",
      engineUrl,
      "--max-retries",
      "1",
      "--health-interval",
      "0.2",
    ]);
    try {
      const soloUrl = urlOf(solo);
      await until(
        async () =>
          ((await (await fetch(`${soloUrl}/health`)).json()) as { healthy_workers: number })
            .healthy_workers === 1,
        "the fake engine to be healthy",
      );
      const res = await fetch(`${soloUrl}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "hello", max_tokens: 1 }),
      });
      const text = await res.text();
      expect(res.status).toBe(502);
      expect(text).not.toContain(String(fakeEngine!.port));
      expect(text).not.toContain("127.0.0.1");
      expect(text).not.toContain("secret-weights");
      expect(text).toMatch(/tried worker \d+/);
      // The operator still finds both in the log.
      await until(() => solo.output().includes(engineUrl), "the engine URL in the router's log");
    } finally {
      await solo.stop();
    }
  });

  test("the router's own calls to an engine carry --engine-token, never the admin token", async () => {
    const engineUrl = `http://127.0.0.1:${fakeEngine!.port}`;
    const before = engineCalls.length;
    const r = await startRouter([], 0, [
      "--worker",
      engineUrl,
      "--admin-token",
      ADMIN_TOKEN,
      "--engine-token",
      ENGINE_TOKEN,
      "--host",
      "127.0.0.1",
    ]);
    try {
      const own = (c: string) => c.startsWith("/kv/query") || c.startsWith("/v1/engine/info");
      await until(
        () => engineCalls.slice(before).filter(own).length >= 2,
        "the router's /v1/engine/info and /kv/query calls",
      );
      const calls = engineCalls.slice(before);
      expect(calls.filter(own).map((c) => c.split(" ").slice(1).join(" "))).toEqual(
        calls.filter(own).map(() => `Bearer ${ENGINE_TOKEN}`),
      );
      expect(calls.some((c) => c.includes(ADMIN_TOKEN))).toBe(false);
    } finally {
      await r.stop();
    }
  });

  test("POST /v1/workers refuses this router's own URL and any router's, and URLs off --worker-allow", async () => {
    const register = (routerUrl: string, workerUrl: string) =>
      fetch(`${routerUrl}/v1/workers`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: workerUrl }),
      });
    const own = await register(url, url);
    expect(own.status).toBe(400);
    expect(
      ((await own.json()) as { error: { param: string; message: string } }).error,
    ).toMatchObject({ param: "url" });
    const ownByName = await register(url, url.replace("127.0.0.1", "localhost"));
    expect(ownByName.status).toBe(400);
    const other = await startRouter([], 0, [
      "--worker-allow",
      `${urlOf(engines[0]!).replace(/:\d+$/, "")}:*`,
    ]);
    try {
      const peer = await register(url, urlOf(other));
      expect(peer.status).toBe(400);
      expect(((await peer.json()) as { error: { message: string } }).error.message).toContain(
        "answers as a Switchyard router",
      );
      // The other router allows only loopback engine URLs of the pattern; the engine matches.
      expect((await register(urlOf(other), "http://10.255.255.1:8000")).status).toBe(400);
      expect((await register(urlOf(other), urlOf(engines[0]!))).status).toBe(201);
    } finally {
      await other.stop();
    }
    // Nothing was registered on the first router by the refused calls.
    const listed = (await (await fetch(`${url}/v1/workers`)).json()) as {
      workers: { url: string }[];
    };
    expect(listed.workers.map((w) => w.url)).toEqual([urlOf(engines[0]!)]);
  });

  test("a malformed chunked body is logged as unreadable, never as an empty unhandled error", async () => {
    const port = Number(router!.info.port);
    await new Promise<void>((resolve) => {
      void Bun.connect({
        hostname: "127.0.0.1",
        port,
        socket: {
          open(s) {
            s.write(
              "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n",
            );
          },
          data() {},
          close: () => resolve(),
          error: () => resolve(),
        },
      });
    });
    await until(
      () => router!.output().includes("request body could not be read"),
      "the body-read log line",
    );
    expect(router!.output()).not.toMatch(/unhandled error: \n/);
  });
});
