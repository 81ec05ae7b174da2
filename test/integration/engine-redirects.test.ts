/**
 * The router's own calls to an engine never follow a redirect: an engine whose /health and
 * /v1/engine/info answer 302 to another host is not healthy (before: the redirect was
 * followed to any host and a redirected /health counted as healthy), and the host it points
 * at is never asked. A real router process; the engine and the other host are in-process.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { stopAll, until, type Proc } from "../support/processes.ts";
import { startRouter, urlOf, workers } from "./multi-router-cluster.ts";

let other: ReturnType<typeof Bun.serve>;
let engine: ReturnType<typeof Bun.serve>;
/** Healthy, but its model list redirects to the other host. */
let listsElsewhere: ReturnType<typeof Bun.serve>;
let router: Proc;
const otherHits: string[] = [];
let healthChecks = 0;

beforeAll(async () => {
  other = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      otherHits.push(new URL(req.url).pathname);
      return Response.json({ status: "ok", dp_ranks: 1, block_size: 16, loras: [] });
    },
  });
  const to = `http://127.0.0.1:${other.port}`;
  engine = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/health") healthChecks++;
      return new Response(null, { status: 302, headers: { location: `${to}${path}` } });
    },
  });
  listsElsewhere = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/v1/models")
        return new Response(null, { status: 302, headers: { location: `${to}${path}` } });
      if (path === "/v1/engine/info") return Response.json({ dp_ranks: 1, block_size: 16 });
      return Response.json({ status: "ok" });
    },
  });
  router = await startRouter([], 0, [
    "--log-level",
    "error",
    "--health-interval",
    "0.1",
    "--health-timeout",
    "0.5",
  ]);
});
afterAll(async () => {
  await stopAll([router]);
  engine.stop(true);
  listsElsewhere.stop(true);
  other.stop(true);
});

describe("redirects from an engine", () => {
  test("a /health that redirects is unhealthy, naming the 302; the host it points at is never called", async () => {
    const url = urlOf(router);
    const r = await fetch(`${url}/v1/workers`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: `http://127.0.0.1:${engine.port}` }),
    });
    expect(r.status).toBe(201);
    await until(
      async () =>
        ((await workers(url))[0] as unknown as { reason?: string })?.reason?.includes("302"),
      "the health check to name the 302",
      5_000,
    );
    const w = (await workers(url))[0]!;
    expect(w.healthy).toBe(false);
    // Several health rounds later, still unhealthy and still nobody asked the other host.
    const seen = healthChecks;
    await until(() => healthChecks >= seen + 3, "three more health checks", 5_000);
    expect((await workers(url))[0]!.healthy).toBe(false);
    expect(otherHits).toEqual([]);
  });

  test("GET /v1/models asks a healthy engine whose list is unknown; its redirect is not followed", async () => {
    const url = urlOf(router);
    const r = await fetch(`${url}/v1/workers`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: `http://127.0.0.1:${listsElsewhere.port}` }),
    });
    expect(r.status).toBe(201);
    const id = ((await r.json()) as { id: string }).id;
    await until(
      async () => (await workers(url)).some((w) => String(w.id) === id && w.healthy),
      "the second engine to be healthy",
      5_000,
    );
    const models = await fetch(`${url}/v1/models`);
    expect(models.status).toBe(200);
    expect(((await models.json()) as { data: unknown[] }).data).toEqual([]);
    expect(otherHits).toEqual([]);
  });
});
