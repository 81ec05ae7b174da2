/**
 * An admin's drain of one worker, with real router and simulated engine processes:
 * POST /v1/workers/:id/drain (the admin token, as every /v1/workers route) takes the worker out
 * of rotation: new requests go elsewhere, and a seeded stream still running on it after
 * --migrate-after moves to the other engine, exact text, the worker not blamed.
 * DELETE /v1/workers/:id/drain puts it back; a stream on a worker put back before
 * --migrate-after stays where it is.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { metric } from "../chaos/faults.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import {
  adminWorkers,
  assemble,
  openStream,
  received,
  reference,
  startSameEngines,
} from "./migration-support.ts";
import { startRouter, urlOf } from "./multi-router-cluster.ts";

const TOKEN = "admin-token-for-the-drain-test";
const ADMIN = { authorization: `Bearer ${TOKEN}` };
const procs: Proc[] = [];
afterAll(async () => {
  await stopAll(procs);
});

async function twoEngines(migrateAfter: string) {
  const engines = await startSameEngines(2);
  procs.push(...engines);
  const router = await startRouter(engines, 0, [
    "--log-level",
    "error",
    "--health-interval",
    "0.2",
    "--admin-token",
    TOKEN,
    "--migrate-after",
    migrateAfter,
  ]);
  procs.push(router);
  const url = urlOf(router);
  await until(
    async () => (await adminWorkers(url, ADMIN)).every((w) => w.healthy),
    "both engines healthy",
  );
  return { url, engines };
}

function drain(
  url: string,
  id: string,
  method: "POST" | "DELETE",
  headers: Record<string, string> = ADMIN,
) {
  return fetch(`${url}/v1/workers/${id}/drain`, { method, headers });
}

const body = (maxTokens: number, seed: number) => ({
  prompt: `a long answer from a worker an admin drains (${seed})`,
  max_tokens: maxTokens,
  seed,
  stream_options: { include_usage: true },
});

describe("an admin drains one worker", () => {
  test("no new requests for it, its stream moves after --migrate-after (exact text, not blamed); undrain puts it back", async () => {
    const { url, engines } = await twoEngines("0.3");
    const b = body(150, 21);
    const live = openStream(url, "completions", b);
    await until(() => received(live) >= 3, "the stream under way");
    const on = live.worker;
    const other = (await adminWorkers(url, ADMIN)).find((w) => w.id !== on)!.id;

    expect((await drain(url, on, "POST", {})).status).toBe(401);
    expect((await drain(url, "99", "POST")).status).toBe(404);
    expect((await drain(url, "not-an-id", "POST")).status).toBe(400);
    const r = await drain(url, on, "POST");
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ id: on, draining: true, reason: "draining: admin" });
    const w = (await adminWorkers(url, ADMIN)).find((x) => x.id === on) as { reason?: string };
    expect(w.reason).toBe("draining: admin");

    // New requests go to the other worker.
    for (let i = 0; i < 4; i++) {
      const n = await fetch(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: `a new request ${i}`, max_tokens: 2 }),
      });
      expect(n.status).toBe(200);
      expect(n.headers.get("x-switchyard-worker")).toBe(other);
      await n.text();
    }

    await live.done;
    const a = assemble(live.raw);
    const ref = await reference(urlOf(engines[0]!), "completions", b);
    expect(live.broken).toBeUndefined();
    expect(a.errors).toBe(0);
    expect(a.dones).toBe(1);
    expect(a.text).toBe(ref.text);
    expect(a.usage?.completion_tokens).toBe(150);
    expect(
      a.notes.some((n) => n.includes(`from worker ${on} to worker ${other} (planned move`)),
    ).toBe(true);
    expect(await metric(url, "switchyard_worker_ejections_total", `{worker="${on}"}`)).toBe(0);

    const u = await drain(url, on, "DELETE");
    expect(u.status).toBe(200);
    expect(((await u.json()) as { draining: boolean }).draining).toBe(false);
    await until(
      async () => (await adminWorkers(url, ADMIN)).find((x) => x.id === on)?.healthy === true,
      "the worker back in rotation",
    );
  }, 60_000);

  test("a worker put back before --migrate-after keeps its stream", async () => {
    const { url } = await twoEngines("3");
    const live = openStream(url, "completions", body(400, 22));
    await until(() => received(live) >= 3, "the stream under way");
    expect((await drain(url, live.worker, "POST")).status).toBe(200);
    expect((await drain(url, live.worker, "DELETE")).status).toBe(200);
    await live.done;
    const a = assemble(live.raw);
    expect(live.broken).toBeUndefined();
    expect(a.dones).toBe(1);
    expect(a.text.length).toBe(400);
    expect(a.notes.filter((n) => n.includes("moved this stream"))).toEqual([]);
  }, 60_000);
});
