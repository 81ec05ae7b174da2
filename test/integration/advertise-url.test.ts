/**
 * Engines in containers listen on 0.0.0.0 and are reached by another name. Real processes:
 * a router and simulated engines listening on 0.0.0.0. With `--advertise-url` set to the URL
 * the router registers, each engine's worker id is the router's own, so its pushed KV events
 * fill that worker's part of the index and a second turn is routed onto its cache. Engines
 * that claim one id (the listen address every container shares) are refused at registration
 * with a message naming both URLs and the flag.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { workerIdFromUrl } from "../../src/core/worker-id.ts";
import { freePorts, startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

let router: Proc | undefined;
let routerUrl = "";
const engines: Proc[] = [];

beforeAll(async () => {
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    "4",
    "--health-interval",
    "0.2",
  ]);
  routerUrl = String(router.info.url);
});

afterAll(async () => {
  await stopAll([router, ...engines]);
});

/** A simulated engine on 0.0.0.0:port (as in a container), pushing its events to the router. */
async function engine(port: number, advertise: string): Promise<Proc> {
  const p = await startMain([
    "mocker",
    "--host",
    "0.0.0.0",
    "--port",
    String(port),
    "--advertise-url",
    advertise,
    "--block-size",
    "4",
    "--router-url",
    routerUrl,
    "--event-batch-ms",
    "2",
    "--decode-ms-per-step",
    "1",
    "--prefill-us-per-token",
    "1",
  ]);
  engines.push(p);
  return p;
}

const register = (url: string) =>
  fetch(`${routerUrl}/v1/workers`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url }),
  });

interface WorkerRow {
  id: string;
  url: string;
  cached_blocks: number;
  healthy: boolean;
}
const workers = async () =>
  ((await (await fetch(`${routerUrl}/v1/workers`)).json()) as { workers: WorkerRow[] }).workers;

describe("--advertise-url", () => {
  test("two engines claiming one id (the shared listen address): the second is refused, naming both and the flag", async () => {
    const [p1, p2] = freePorts(2);
    const shared = "http://0.0.0.0:8000"; // what every container's engine derives its id from
    const [a, b] = await Promise.all([engine(p1!, shared), engine(p2!, shared)]);
    expect(a.info.worker_id).toBe(b.info.worker_id);
    const first = await register(`http://127.0.0.1:${p1}`);
    expect(first.status).toBe(201);
    const second = await register(`http://127.0.0.1:${p2}`);
    expect(second.status).toBe(409);
    const message = ((await second.json()) as { error: { message: string } }).error.message;
    expect(message).toContain("worker id clash");
    expect(message).toContain(`http://127.0.0.1:${p1}`);
    expect(message).toContain(`http://127.0.0.1:${p2}`);
    expect(message).toContain("--advertise-url");
    expect((await workers()).map((w) => w.url)).toEqual([`http://127.0.0.1:${p1}`]);
    // Clean up for the next test: the refused engine never joined; the first leaves.
    const id = (await workers())[0]!.id;
    expect((await fetch(`${routerUrl}/v1/workers/${id}`, { method: "DELETE" })).status).toBe(200);
    await stopAll([a, b]);
  });

  test("each engine advertising the URL the router registers: ids agree, events land, the second turn hits the cache", async () => {
    const ports = freePorts(2);
    const urls = ports.map((p) => `http://127.0.0.1:${p}`);
    const procs = await Promise.all(ports.map((p, i) => engine(p, urls[i]!)));
    for (let i = 0; i < 2; i++) {
      // Listening on 0.0.0.0, yet its id is the one the router derives from the URL it was given.
      expect(BigInt(String(procs[i]!.info.worker_id))).toBe(workerIdFromUrl(urls[i]!));
      const res = await register(urls[i]!);
      expect(res.status).toBe(201);
      expect(((await res.json()) as { warnings: string[] }).warnings).toEqual([]);
    }
    await until(
      async () => (await workers()).filter((w) => w.healthy).length === 2,
      "both engines healthy",
    );

    const ask = async (prompt: string) => {
      const r = await fetch(`${routerUrl}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "switchyard-sim", prompt, max_tokens: 2 }),
      });
      expect(r.status).toBe(200);
      return {
        worker: r.headers.get("x-mocker-worker-id"),
        usage: (
          (await r.json()) as { usage: { prompt_tokens_details?: { cached_tokens?: number } } }
        ).usage,
      };
    };
    const prompt = "a shared first turn long enough to fill several four-token blocks";
    const turn1 = await ask(prompt);
    const served = (await workers()).find((w) => w.id === turn1.worker)!;
    await until(
      async () => ((await workers()).find((w) => w.id === served.id)?.cached_blocks ?? 0) > 0,
      "the engine's pushed events in the router's index",
    );
    const turn2 = await ask(`${prompt} and a second turn`);
    expect(turn2.worker).toBe(turn1.worker);
    expect(turn2.usage.prompt_tokens_details?.cached_tokens ?? 0).toBeGreaterThan(0);
  });
});
