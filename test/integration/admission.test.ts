/**
 * A saturated cluster (issue 13): one engine whose booked load passes its capacity
 * (--worker-capacity 100 tokens, --busy-threshold 1) is busy, so requests wait in the
 * router's admission queue (--max-queue 3, --queue-timeout 2): a full queue and a wait
 * past the timeout answer 429 with Retry-After in OpenAI's error shape, and the queue
 * drains in order — lower `priority` first, then arrival — one request each time the
 * engine finishes one (the engine holds every request until the test releases it). The
 * router is a real process; the engine is a small HTTP server in this test process.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Server } from "bun";
import { startMain, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

const PROMPT_TOKENS = 150; // > the 100-token capacity: one request makes the worker busy
let engine: Server<undefined> | undefined;
let router: Proc | undefined;
let routerUrl = "";
/** Requests the engine has, in arrival order, by label (the prompt's first token). */
const arrived: number[] = [];
const held = new Map<number, () => void>();

beforeAll(async () => {
  engine = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/health") return new Response("ok");
      if (path === "/v1/completions") {
        const label = ((await req.json()) as { prompt: number[] }).prompt[0]!;
        arrived.push(label);
        await new Promise<void>((resolve) => held.set(label, resolve));
        return Response.json({
          id: `c${label}`,
          object: "text_completion",
          choices: [{ index: 0, text: "ok", finish_reason: "stop" }],
        });
      }
      return new Response("not found", { status: 404 });
    },
  });
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--worker",
    `http://127.0.0.1:${engine.port}`,
    "--busy-threshold",
    "1",
    "--worker-capacity",
    "100",
    "--max-queue",
    "3",
    "--queue-timeout",
    "2",
    "--engine-metrics-interval",
    "0",
    // This engine holds every completion until the test lets it go: no canary sent to it by itself.
    "--canary=false",
  ]);
  routerUrl = String(router.info.url);
  await until(
    async () =>
      ((await (await fetch(`${routerUrl}/health`)).json()) as { healthy_workers: number })
        .healthy_workers === 1,
    "the worker to be healthy",
  );
});

afterAll(async () => {
  for (const release of held.values()) release();
  await router?.stop();
  await engine?.stop(true);
});

function send(label: number, priority?: number): Promise<Response> {
  const prompt = [label, ...Array.from({ length: PROMPT_TOKENS - 1 }, (_, i) => 1 + i)];
  return fetch(`${routerUrl}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      prompt,
      max_tokens: 1,
      ...(priority !== undefined ? { priority } : {}),
    }),
  });
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${routerUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(name + " ") || l.startsWith(name + "{"));
  return line === undefined ? 0 : Number(line.split(" ").pop());
}

const queued = (n: number) =>
  until(
    async () => (await metric("switchyard_admission_queue_length")) === n,
    `${n} requests in the admission queue`,
  );
const arrivedCount = (n: number) =>
  until(
    () => arrived.length === n,
    () => `${n} requests at the engine (got ${JSON.stringify(arrived)})`,
  );

/** Let the engine finish `label`, then check the answer. */
async function finish(label: number, res: Promise<Response>): Promise<void> {
  await until(() => held.has(label), `request ${label} at the engine`);
  held.get(label)!();
  held.delete(label);
  const r = await res;
  expect(r.status).toBe(200);
  await r.text();
}

describe("admission when every worker is busy", () => {
  test("a wait past --queue-timeout answers 429 queue_timeout with Retry-After", async () => {
    const first = send(1);
    await arrivedCount(1);
    const t0 = performance.now();
    const late = await send(2);
    const waited = performance.now() - t0;
    expect(late.status).toBe(429);
    expect(late.headers.get("retry-after")).toBe("2");
    const body = (await late.json()) as { error: { code: string; type: string; message: string } };
    expect(body.error.code).toBe("queue_timeout");
    expect(body.error.type).toBe("rate_limit_error");
    expect(waited).toBeGreaterThanOrEqual(1_900);
    expect(await metric('switchyard_admission_rejections_total{reason="queue_timeout"}')).toBe(1);
    await finish(1, first);
  });

  test("a full queue answers 429 queue_full at once; the queue drains by priority, then arrival", async () => {
    arrived.length = 0;
    const holder = send(10);
    await arrivedCount(1);
    const a = send(11); // priority 0 (default)
    await queued(1);
    const b = send(12, 0);
    await queued(2);
    const c = send(13, -1); // lower value: served first, as vLLM's priority
    await queued(3);
    const full = await send(14);
    expect(full.status).toBe(429);
    expect(full.headers.get("retry-after")).toBe("2");
    expect(((await full.json()) as { error: { code: string } }).error.code).toBe("queue_full");

    // One finishes, one is admitted (each booking makes the worker busy again).
    await finish(10, holder);
    await arrivedCount(2);
    await finish(13, c);
    await arrivedCount(3);
    await finish(11, a);
    await arrivedCount(4);
    await finish(12, b);
    expect(arrived).toEqual([10, 13, 11, 12]);
    expect(await metric("switchyard_admission_queue_length")).toBe(0);
    expect(await metric('switchyard_admission_rejections_total{reason="queue_full"}')).toBe(1);
    expect(await metric("switchyard_admission_wait_seconds_count")).toBe(3);
  });

  test("a priority that is not an integer is a 400 naming it", async () => {
    const r = await send(20, 1.5);
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { param: string } }).error.param).toBe("priority");
  });
});
