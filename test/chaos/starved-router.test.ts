/**
 * A router whose own event loop is held (a starved CPU, here a SIGSTOP of the router process)
 * while it waits for a connection must not blame the engine for the time it could not watch; and
 * fences, one request's word about an engine, are capped so they never take the whole fleet out
 * (--max-fenced-percent). Real processes: two simulated engines, each serving its own model, the
 * first behind a TCP gate (test/support/tcp_gate.py) that can stop taking connections so a
 * connect hangs in SYN_SENT; a router with a 1 s connect deadline and no periodic health checks,
 * so only fences change a worker's state.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { metric, metricLabelled } from "../integration/disagg-cluster.ts";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

const procs: Proc[] = [];
let router: Proc;
let direct: Proc;
let gate: Bun.Subprocess<"pipe", "pipe", "ignore">;
let gatePort = 0;
let gateLines: AsyncIterator<string>;
let routerUrl = "";

async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    buf += dec.decode(chunk, { stream: true });
    let i = buf.indexOf("\n");
    while (i >= 0) {
      yield buf.slice(0, i);
      buf = buf.slice(i + 1);
      i = buf.indexOf("\n");
    }
  }
}

const engine = (model: string) =>
  startMain(["mocker", "--port", "0", "--host", "127.0.0.1", "--model", model]);

beforeAll(async () => {
  const gated = await engine("ma");
  procs.push(gated);
  direct = await engine("mb");
  procs.push(direct);
  gate = Bun.spawn({
    cmd: [
      "python3",
      join(import.meta.dir, "..", "support", "tcp_gate.py"),
      String(new URL(String(gated.info.url)).port),
    ],
    stdin: "pipe",
    stdout: "pipe",
    stderr: "ignore",
  });
  gateLines = lines(gate.stdout)[Symbol.asyncIterator]();
  gatePort = Number((await gateLines.next()).value);
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--worker",
    `http://127.0.0.1:${gatePort}`,
    "--worker",
    String(direct.info.url),
    "--connect-timeout",
    "1",
    // Only fences change a worker's state in this test, and no request reaches an engine unasked.
    "--health-interval",
    "3600",
    "--canary=false",
    "--max-retries",
    "0",
  ]);
  procs.push(router);
  routerUrl = String(router.info.url);
  await until(
    async () => ((await workers()).every((w) => w.healthy) ? true : null),
    "both workers healthy",
  );
});

afterAll(async () => {
  if (router !== undefined) process.kill(router.pid, "SIGCONT");
  await stopAll(procs);
  gate?.kill("SIGKILL");
});

interface WorkerView {
  id: string;
  url: string;
  healthy: boolean;
  reason?: string;
}
async function workers(): Promise<WorkerView[]> {
  return ((await (await fetch(`${routerUrl}/v1/workers`)).json()) as { workers: WorkerView[] })
    .workers;
}
const gateWorker = async () =>
  (await workers()).find((w) => w.url === `http://127.0.0.1:${gatePort}`)!;

/** A connection from this machine to `port` waiting for its SYN's answer (/proc/net/tcp state 02). */
function synSentTo(port: number): boolean {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  return readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .some((l) => {
      const f = l.trim().split(/\s+/);
      return f[2]?.endsWith(hex) === true && f[3] === "02";
    });
}

const complete = (model: string) =>
  fetch(`${routerUrl}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, prompt: "hello there", max_tokens: 2 }),
  });

describe("a starved router does not fence its engines (real processes)", () => {
  test("the router held (SIGSTOP) past the stretch limit while a connect waits: the deadline runs out excused, the worker is not fenced", async () => {
    gate.stdin.write("freeze\n");
    gate.stdin.flush();
    expect((await gateLines.next()).value).toBe("frozen");
    const pending = complete("ma");
    await until(() => (synSentTo(gatePort) ? true : null), "the router's connect in SYN_SENT");
    // The fault: the router cannot run for 3.5 s (a 1 s deadline stretches to at most 3 s).
    process.kill(router.pid, "SIGSTOP");
    await Bun.sleep(3_500);
    process.kill(router.pid, "SIGCONT");
    const r = await pending;
    await r.text();
    expect(r.status).toBe(502); // no other worker serves "ma"
    const w = await gateWorker();
    expect(w.healthy).toBe(true);
    expect(
      await metricLabelled(
        routerUrl,
        "switchyard_upstream_deadlines_excused_total",
        'deadline="connect"',
      ),
    ).toBe(1);
    expect(await metric(routerUrl, "switchyard_upstream_deadline_misses_total")).toBe(0);
    expect(router.output()).toContain("not counted against the worker");
  });

  test("the same hang with the router running: a miss of the engine's, and it is fenced", async () => {
    const r = await complete("ma");
    await r.text();
    expect(r.status).toBe(502);
    const w = await gateWorker();
    expect(w.healthy).toBe(false);
    expect(w.reason).toBe("fenced: connect deadline of 1 s missed");
  });

  test("one of two fenced already: the other is never fenced too (--max-fenced-percent 50); its failures reach the client and its health checks decide", async () => {
    await direct.stop();
    for (let i = 0; i < 3; i++) {
      const r = await complete("mb");
      await r.text();
      expect(r.status).toBe(502); // connection refused
    }
    const d = (await workers()).find((w) => w.url === String(direct.info.url))!;
    expect(d.healthy).toBe(true);
    expect(await metric(routerUrl, "switchyard_worker_fences_refused_total")).toBe(3);
    expect(router.output()).toContain("1 of 2 workers are out of rotation already");
  });
});
