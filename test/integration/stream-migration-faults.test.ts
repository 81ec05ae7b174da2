/**
 * Streams whose engine answers badly mid-stream, with real router and engine processes (the
 * fault engine, test/support/fault-engine.ts, and the simulated engine): a malformed event
 * (an error event after two tokens) moves the stream to another engine, which continues from
 * the text sent so far; the move limit (--max-migrations) and the client's
 * `x-switchyard-migrate: off` end the stream as it ends without migration; no booking is left.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { startRouter, urlOf, workers } from "./multi-router-cluster.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import { bookedLoad, metric, startFaultEngine } from "../chaos/faults.ts";
import { assemble, openStream, reference, startSameEngines } from "./migration-support.ts";

const procs: Proc[] = [];
afterAll(async () => {
  await stopAll(procs);
});

const ROUTER_FLAGS = [
  "--log-level",
  "error",
  "--health-interval",
  "0.2",
  "--health-timeout",
  "0.3",
  "--stream-idle-timeout",
  "5",
];

async function release(engine: Proc): Promise<void> {
  const r = await fetch(`${urlOf(engine)}/release`, { method: "POST" });
  expect(r.status).toBe(200);
}

/** The router's count of moves by outcome. */
const moves = (url: string, outcome: string) =>
  metric(url, "switchyard_stream_migrations_total", `{outcome="${outcome}"}`);

describe("a stream whose engine answers badly mid-stream", () => {
  test("an error event after two tokens: the stream moves to the other engine, which continues from the text sent; one [DONE], no error", async () => {
    // Only the fault engine at first, so the stream starts there; the simulated engine joins before the fault.
    const fault = await startFaultEngine("garbage");
    procs.push(fault);
    const [engine] = await startSameEngines(1);
    procs.push(engine!);
    const router = await startRouter([fault], 0, ROUTER_FLAGS);
    procs.push(router);
    const url = urlOf(router);
    await until(
      async () => (await workers(url))[0]?.healthy === true,
      "the fault engine to be healthy",
    );
    const body = {
      prompt: "a malformed answer",
      max_tokens: 12,
      seed: 5,
      stream_options: { include_usage: true },
    };
    const live = openStream(url, "completions", body);
    await until(() => live.raw.includes("t1 "), "two tokens from the fault engine");
    await fetch(`${url}/v1/workers`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: urlOf(engine!) }),
    });
    await until(
      async () => (await workers(url)).filter((w) => w.healthy).length === 2,
      "the simulated engine to join",
    );
    await release(fault);
    await live.done;
    const a = assemble(live.raw);
    // The continuation is what the simulated engine writes for the prompt + the 2 tokens sent, for the 10 tokens left.
    const rest = await reference(urlOf(engine!), "completions", {
      ...body,
      prompt: `${body.prompt}t0 t1 `,
      max_tokens: 10,
    });
    expect(live.broken).toBeUndefined();
    expect(a.errors).toBe(0);
    expect(a.dones).toBe(1);
    expect(a.text).toBe(`t0 t1 ${rest.text}`);
    expect(a.ids).toEqual(new Set(["f"]));
    expect(a.usage?.completion_tokens).toBe(12);
    expect(a.usage?.prompt_tokens).toBe(rest.usage.prompt_tokens - 2);
    expect(await moves(url, "moved")).toBe(1);
    await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 5_000);
  }, 40_000);

  test("the move limit: with --max-migrations 1 and two failing engines, the second failure reaches the client as it does without migration", async () => {
    const faults = [await startFaultEngine("garbage"), await startFaultEngine("garbage")];
    procs.push(...faults);
    const router = await startRouter(faults, 0, [...ROUTER_FLAGS, "--max-migrations", "1"]);
    procs.push(router);
    const url = urlOf(router);
    await until(
      async () => (await workers(url)).every((w) => w.healthy),
      "both engines to be healthy",
    );
    const live = openStream(url, "completions", { prompt: "limit", max_tokens: 8 });
    await until(() => live.raw.includes("t1 "), "two tokens from the first engine");
    for (const f of faults) await release(f);
    await live.done;
    const a = assemble(live.raw);
    expect(await moves(url, "moved")).toBe(1);
    expect(await moves(url, "refused")).toBe(1);
    // Two tokens from each engine, then the second engine's error event, passed on as it came.
    expect(a.text).toBe("t0 t1 t0 t1 ");
    expect(a.errors).toBe(1);
    expect(a.notes.length).toBe(1);
    await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 5_000);
  }, 40_000);

  test("x-switchyard-migrate: off: the stream is not moved, the error event reaches the client as before", async () => {
    const faults = [await startFaultEngine("garbage"), await startFaultEngine("garbage")];
    procs.push(...faults);
    const router = await startRouter(faults, 0, ROUTER_FLAGS);
    procs.push(router);
    const url = urlOf(router);
    await until(
      async () => (await workers(url)).every((w) => w.healthy),
      "both engines to be healthy",
    );
    const live = openStream(
      url,
      "completions",
      { prompt: "off", max_tokens: 8 },
      { "x-switchyard-migrate": "off" },
    );
    await until(() => live.raw.includes("t1 "), "two tokens from the engine");
    for (const f of faults) await release(f);
    await live.done;
    const a = assemble(live.raw);
    expect(a.text).toBe("t0 t1 ");
    expect(a.errors).toBe(1);
    expect(a.notes).toEqual([]);
    expect(await moves(url, "moved")).toBe(0);
    await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 5_000);
  }, 40_000);
});
