/**
 * Issue 12 §7, real processes: SIGTERM during load. The router stops taking work at once
 * (new requests: 503 `draining`; /health: 503 "draining"; /livez: 200), lets every stream in
 * flight finish (bounded by --drain-timeout) and exits 0; a second signal exits at once. The
 * simulated engine drains the same way. Readiness: /health is 503 while no worker is healthy.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { complete, startEngines, startRouter, urlOf } from "../integration/multi-router-cluster.ts";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { streamed, summary, type Outcome } from "./faults.ts";

const STREAMS = 6;
const procs: Proc[] = [];
afterAll(() => stopAll(procs));

/** `n` streams of `tokens` tokens; resolves once each has its first bytes (headers). */
async function inFlight(url: string, n: number, tokens: number): Promise<Promise<Outcome>[]> {
  let started = 0;
  const all = Array.from({ length: n }, (_, i) =>
    (async () => {
      const t0 = performance.now();
      const r = await complete(url, {
        prompt: `drain ${i}: a prompt to stream`,
        max_tokens: tokens,
        stream: true,
      });
      started++;
      let text = "";
      try {
        text = await r.text();
      } catch (e) {
        text = `[client error: ${(e as Error).message}]`;
      }
      return {
        status: r.status,
        complete: text.includes("data: [DONE]"),
        ms: performance.now() - t0,
        worker: "",
        text,
      };
    })(),
  );
  await until(() => started === n, "every stream to start", 10_000);
  return all;
}

async function exitOf(p: Proc, deadlineMs: number): Promise<number | null> {
  return Promise.race([p.proc.exited, Bun.sleep(deadlineMs).then(() => null)]);
}

describe("drain and readiness", () => {
  test("SIGTERM during load: streams in flight finish, new requests get 503 draining, /health 503, exit 0", async () => {
    const engines = await startEngines(1, [], ["--decode-ms-per-step", "20"]);
    const router = await startRouter(engines, 0, ["--log-level", "error", "--drain-timeout", "10"]);
    procs.push(...engines, router);
    const url = urlOf(router);
    const streams = await inFlight(url, STREAMS, 40); // ~0.8 s each
    const t0 = performance.now();
    router.proc.kill("SIGTERM");
    await until(
      async () => (await fetch(`${url}/health`)).status === 503,
      "/health to say draining",
      3_000,
    );
    expect(((await (await fetch(`${url}/health`)).json()) as { status: string }).status).toBe(
      "draining",
    );
    expect((await fetch(`${url}/livez`)).status).toBe(200);
    const refused = await complete(url, { prompt: "too late", max_tokens: 1 });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("draining");
    const s = summary(await Promise.all(streams));
    console.log(
      `chaos SIGTERM during load: failed ${s.failed}/${s.total}, longest stream ${s.longestMs} ms`,
    );
    expect(s.failed).toBe(0);
    expect(await exitOf(router, 5_000)).toBe(0);
    expect(performance.now() - t0).toBeLessThan(5_000);
  }, 30_000);

  test("a second signal exits at once, cutting what is in flight", async () => {
    const engines = await startEngines(1, [], ["--decode-ms-per-step", "50"]);
    const router = await startRouter(engines, 0, ["--log-level", "error", "--drain-timeout", "30"]);
    procs.push(...engines, router);
    const streams = await inFlight(urlOf(router), 2, 200); // ~10 s each
    router.proc.kill("SIGTERM");
    await Bun.sleep(100);
    const t0 = performance.now();
    router.proc.kill("SIGTERM");
    expect(await exitOf(router, 2_000)).toBe(1);
    expect(performance.now() - t0).toBeLessThan(2_000);
    expect(summary(await Promise.all(streams)).failed).toBe(2);
  }, 30_000);

  test("the simulated engine drains too: a stream in flight finishes, /health and new requests 503, exit 0", async () => {
    const [engine] = await startEngines(1, [], ["--decode-ms-per-step", "20"]);
    procs.push(engine!);
    const engineUrl = String(engine!.info.url);
    const pending = streamed(engineUrl, "an engine-side stream", 30);
    await Bun.sleep(100);
    engine!.proc.kill("SIGTERM");
    await until(
      async () => (await fetch(`${engineUrl}/health`)).status === 503,
      "the engine's /health to say draining",
      3_000,
    );
    expect((await complete(engineUrl, { prompt: "too late", max_tokens: 1 })).status).toBe(503);
    const o = await pending;
    expect(o.complete).toBe(true);
    expect(await exitOf(engine!, 5_000)).toBe(0);
  }, 30_000);

  test("the transfer agent answers /livez and exits 0 on SIGTERM", async () => {
    const agent = await startMain([
      "transfer",
      "--port",
      "0",
      "--device-blocks",
      "4",
      "--host-blocks",
      "4",
      "--disk-blocks",
      "0",
    ]);
    procs.push(agent);
    expect((await fetch(`${urlOf(agent)}/livez`)).status).toBe(200);
    agent.proc.kill("SIGTERM");
    expect(await exitOf(agent, 5_000)).toBe(0);
  }, 30_000);

  test("readiness: /health is 503 with no healthy worker, 200 with one; /livez is 200 either way", async () => {
    const empty = await startMain(["serve", "--port", "0", "--log-level", "error"]);
    procs.push(empty);
    const u = urlOf(empty);
    const h = await fetch(`${u}/health`);
    expect(h.status).toBe(503);
    expect(await h.json()).toEqual({ status: "no_healthy_worker", workers: 0, healthy_workers: 0 });
    expect((await fetch(`${u}/livez`)).status).toBe(200);
    const engines = await startEngines(1, []);
    procs.push(...engines);
    const r = await fetch(`${u}/v1/workers`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: engines[0]!.info.url }),
    });
    expect(r.status).toBe(201);
    await until(
      async () => (await fetch(`${u}/health`)).status === 200,
      "the router to be ready",
      5_000,
    );
  }, 30_000);
});
