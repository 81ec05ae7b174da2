/**
 * A client that stops reading a huge answer, against a real router and a real engine that
 * sends 256 MiB as fast as its connection takes them (test/support/fault-engine.ts `flood`).
 * Before, the router read the engine's answer as fast as the engine sent it and buffered it
 * for the client (the issue's probe: a 1 GB answer to a client with a 4 KB receive buffer
 * took the router from 69 to 1,451 MB, and 1,097 MB were still held 20 s later). Now the
 * client's full socket stops the engine's socket, and after --stream-idle-timeout without
 * the client taking anything both connections are cut and the booking freed.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256Hex } from "../../src/protect/key-set.ts";
import { startRouter, urlOf } from "../integration/multi-router-cluster.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import { postRequest, stalledClient } from "../support/stalled-client.ts";
import { bookedLoad, engineStats, metric, startFaultEngine } from "./faults.ts";

const procs: Proc[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await stopAll(procs);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Resident memory of a process, MB (Linux /proc). */
async function rssMb(pid: number): Promise<number> {
  const status = await Bun.file(`/proc/${pid}/status`).text();
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
  return kb / 1024;
}

describe("a client that stops reading", () => {
  // Routers run without the canary here: the flooding engine counts every connection closed on it,
  // and the canary's own (a bounded read, cut at 64 KiB) is not the client's stream.
  test("the engine's socket is stopped, not buffered in the router; the client is cut after --stream-idle-timeout", async () => {
    const engine = await startFaultEngine("flood", ["--flood-mb", "256"]);
    procs.push(engine);
    const router = await startRouter([engine], 0, [
      "--log-level",
      "error",
      "--stream-idle-timeout",
      "1",
      "--canary=false",
    ]);
    procs.push(router);
    const url = urlOf(router);
    const engineUrl = String(engine.info.url);
    const before = await rssMb(router.pid);
    const client = await stalledClient(
      Number(new URL(url).port),
      postRequest("/v1/completions", {
        prompt: "a huge answer, please",
        max_tokens: 1,
        stream: true,
      }),
    );
    const t0 = performance.now();
    let peak = before;
    await until(
      async () => {
        peak = Math.max(peak, await rssMb(router.pid));
        return client.isClosed();
      },
      "the router to cut the client that reads nothing",
      10_000,
      50,
    );
    const cutAfter = performance.now() - t0;
    const sent = (await engineStats(engineUrl)).bytes_sent / (1 << 20);
    console.log(
      `chaos slow reader: router RSS ${Math.round(before)} -> peak ${Math.round(peak)} MB; engine sent ${sent.toFixed(1)} of 256 MiB; client cut after ${Math.round(cutAfter)} ms`,
    );
    expect(peak - before).toBeLessThan(64); // before: the whole answer (256 MiB here, 1.4 GB in the probe)
    expect(sent).toBeLessThan(64);
    expect(cutAfter).toBeLessThan(1_000 + 2_000);
    await until(
      async () => (await engineStats(engineUrl)).closed_by_peer === 1,
      "the engine to see its connection closed",
      3_000,
    );
    expect(
      await metric(
        url,
        "switchyard_requests_total",
        `{worker="${((await (await fetch(`${url}/v1/workers`)).json()) as { workers: { id: string }[] }).workers[0]!.id}",status="client_stalled"}`,
      ),
    ).toBe(1);
    expect(await bookedLoad(url)).toBe(0);
  }, 30_000);

  test("with --api-keys (the answer read for the tenant's usage): still stopped, the booking and the tenant's slot freed; a reading client gets the stream", async () => {
    const key = `sk-test-stall-${crypto.randomUUID()}`;
    const dir = mkdtempSync(join(tmpdir(), "switchyard-stall-keys-"));
    dirs.push(dir);
    writeFileSync(
      join(dir, "keys.json"),
      JSON.stringify({
        keys: [
          { tenant: "t", key_sha256: await sha256Hex(key), limits: { concurrent_requests: 1 } },
        ],
      }),
    );
    const engine = await startFaultEngine("flood", ["--flood-mb", "256"]);
    procs.push(engine);
    const router = await startRouter([engine], 0, [
      "--log-level",
      "error",
      "--stream-idle-timeout",
      "1",
      "--canary=false",
      "--api-keys",
      join(dir, "keys.json"),
      "--admin-token",
      "slow-reader-admin",
    ]);
    procs.push(router);
    const url = urlOf(router);
    const engineUrl = String(engine.info.url);
    const body = { prompt: "a huge answer, please", max_tokens: 1, stream: true };
    const before = await rssMb(router.pid);
    const client = await stalledClient(
      Number(new URL(url).port),
      postRequest("/v1/completions", body, { authorization: `Bearer ${key}` }),
    );
    let peak = before;
    await until(
      async () => {
        peak = Math.max(peak, await rssMb(router.pid));
        return (
          (await metric(
            url,
            "switchyard_requests_total",
            `{worker="${((await (await fetch(`${url}/v1/workers`, { headers: { authorization: "Bearer slow-reader-admin" } })).json()) as { workers: { id: string }[] }).workers[0]!.id}",status="client_stalled"}`,
          )) === 1
        );
      },
      "the router to give up on the client that reads nothing",
      10_000,
      50,
    );
    const sent = (await engineStats(engineUrl)).bytes_sent / (1 << 20);
    console.log(
      `chaos slow reader with a key: router RSS ${Math.round(before)} -> peak ${Math.round(peak)} MB; engine sent ${sent.toFixed(1)} of 256 MiB`,
    );
    expect(peak - before).toBeLessThan(64);
    expect(sent).toBeLessThan(64);
    await until(
      async () => (await engineStats(engineUrl)).closed_by_peer === 1,
      "the engine to see its connection closed",
      3_000,
    );
    expect(await bookedLoad(url, "slow-reader-admin")).toBe(0);
    // The tenant's one concurrent slot is free again: a reading client is served, and its
    // stream flows (it broke after the first chunk when the body was Bun's direct stream).
    const r = await fetch(`${url}/v1/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(r.status).toBe(200);
    let got = 0;
    for await (const chunk of r.body!) {
      got += chunk.length;
      if (got >= 32 << 20) break;
    }
    expect(got).toBeGreaterThanOrEqual(32 << 20);
    client.close();
  }, 30_000);

  test("the canary reads at most 64 KiB of an engine's answer: a flooding engine costs the router no memory at registration", async () => {
    const engine = await startFaultEngine("flood", ["--flood-mb", "256"]);
    procs.push(engine);
    const router = await startRouter([engine], 0, ["--log-level", "error"]);
    procs.push(router);
    const engineUrl = String(engine.info.url);
    const before = await rssMb(router.pid);
    let peak = before;
    // The canary runs at registration; its answer is cut at the bound and its connection closed.
    await until(
      async () => {
        peak = Math.max(peak, await rssMb(router.pid));
        return (await engineStats(engineUrl)).closed_by_peer >= 1;
      },
      "the canary to cut the flooding answer",
      15_000,
      50,
    );
    const sent = (await engineStats(engineUrl)).bytes_sent / (1 << 20);
    console.log(
      `chaos flooding canary answer: router RSS ${Math.round(before)} -> peak ${Math.round(peak)} MB; engine sent ${sent.toFixed(1)} of 256 MiB`,
    );
    expect(peak - before).toBeLessThan(64); // unbounded, the router read all 256 MiB (RSS +400-500 MB)
    expect(sent).toBeLessThan(64);
  }, 30_000);
});
