/**
 * The socket client's connect deadline and abort signal against real loopback peers: a
 * listener whose accept queue is full (Python, listen(0), never accepting: the kernel drops
 * further SYNs, so a connect hangs as it does to a frozen host), and a raw Bun.listen server
 * that reads a request and never answers.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { ClientGoneError, DeadlineMissedError } from "../../../../../src/edge/proxy/deadlines.ts";
import { EventLoopLag } from "../../../../../src/observe/process-metrics.ts";
import { SocketHttpClient } from "../../../../../src/runtime/bun/upstream/socket-client.ts";
import { until } from "../../../../support/processes.ts";

const stops: (() => void)[] = [];
afterAll(() => {
  for (const s of stops) s();
});

const INIT = {
  headers: { "content-type": "application/json" },
  body: new TextEncoder().encode("{}"),
};

/** A port whose accept queue is full: new connections hang in SYN_SENT. */
async function fullBacklogPort(): Promise<number> {
  const py = Bun.spawn({
    cmd: [
      "/usr/bin/python3",
      "-c",
      "import socket,time\ns=socket.socket();s.bind(('127.0.0.1',0));s.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(60)",
    ],
    stdout: "pipe",
    stderr: "ignore",
  });
  stops.push(() => py.kill("SIGKILL"));
  const first = await py.stdout.getReader().read();
  const port = Number(new TextDecoder().decode(first.value).trim());
  // One connection fills the queue (listen(0) keeps one); it stays open, never accepted.
  const filler = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
  stops.push(() => filler.terminate());
  return port;
}

/** A server that reads requests and never answers; counts connections the peer closed. */
function silentServer() {
  const state = { opened: 0, closed: 0 };
  const server = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open() {
        state.opened++;
      },
      data() {},
      close() {
        state.closed++;
      },
    },
  });
  stops.push(() => server.stop(true));
  return { url: `http://127.0.0.1:${server.port}`, state };
}

describe("SocketHttpClient deadlines", () => {
  test("a connect that hangs fails with the connect deadline", async () => {
    const port = await fullBacklogPort();
    const client = new SocketHttpClient({ connectTimeoutMs: 100 });
    const t0 = performance.now();
    const err = await client
      .request(`http://127.0.0.1:${port}`, "/v1/completions", INIT)
      .catch((e: unknown) => e);
    const waited = performance.now() - t0;
    expect(err).toBeInstanceOf(DeadlineMissedError);
    expect((err as DeadlineMissedError).kind).toBe("connect");
    expect(waited).toBeGreaterThanOrEqual(90);
    expect(waited).toBeLessThan(2_000);
  });

  test("an abort while waiting for the head rejects with its reason and closes the connection (the engine sees it)", async () => {
    const { url, state } = silentServer();
    const client = new SocketHttpClient();
    const ctl = new AbortController();
    const pending = client.request(url, "/v1/completions", { ...INIT, signal: ctl.signal });
    await until(() => state.opened === 1, "the request's connection");
    ctl.abort(new ClientGoneError());
    await expect(pending).rejects.toBeInstanceOf(ClientGoneError);
    await until(() => state.closed === 1, "the server to see the connection closed");
    expect(client.idleCount(url)).toBe(0);
  });

  test("an abort during the connect rejects at once", async () => {
    const port = await fullBacklogPort();
    const client = new SocketHttpClient();
    const ctl = new AbortController();
    const pending = client.request(`http://127.0.0.1:${port}`, "/", {
      ...INIT,
      signal: ctl.signal,
    });
    setTimeout(() => ctl.abort(new DeadlineMissedError("first_byte", 50)), 50);
    const err = await pending.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeadlineMissedError);
    expect((err as DeadlineMissedError).kind).toBe("first_byte");
  });
});

/** Holds this process's event loop for `ms`, as a starved CPU or a long task does. */
function holdLoop(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy: no callback runs meanwhile
  }
}

/** The router's lag meter, running (its first ticks taken). */
async function runningLag(): Promise<EventLoopLag> {
  const lag = new EventLoopLag(() => performance.now(), {
    every: (fn, ms) => setInterval(fn, ms),
    stop: (h) => clearInterval(h as ReturnType<typeof setInterval>),
  });
  lag.start();
  stops.push(() => lag.stop());
  await Bun.sleep(150);
  return lag;
}

describe("the connect deadline counts only time the router could watch", () => {
  test("the loop held for part of the wait: the deadline is stretched by the hold, then missed as the engine's", async () => {
    const port = await fullBacklogPort();
    const client = new SocketHttpClient({ connectTimeoutMs: 400, loopLag: await runningLag() });
    const t0 = performance.now();
    const pending = client
      .request(`http://127.0.0.1:${port}`, "/v1/completions", INIT)
      .catch((e: unknown) => e);
    await Bun.sleep(10); // the connect is under way, its deadline armed
    holdLoop(600);
    const err = await pending;
    const waited = performance.now() - t0;
    expect(err).toBeInstanceOf(DeadlineMissedError);
    expect((err as DeadlineMissedError).kind).toBe("connect");
    // Without the meter the deadline fires right after the hold (600 ms); with it the engine
    // gets 400 ms the router could watch: at least 200 ms after the hold.
    expect(waited).toBeGreaterThanOrEqual(800);
  });

  test("held past the stretch limit (3x the deadline): the wait ends excused, naming the hold, not the engine's miss", async () => {
    const port = await fullBacklogPort();
    const client = new SocketHttpClient({ connectTimeoutMs: 200, loopLag: await runningLag() });
    const pending = client
      .request(`http://127.0.0.1:${port}`, "/v1/completions", INIT)
      .catch((e: unknown) => e);
    await Bun.sleep(10);
    holdLoop(700);
    const err = (await pending) as DeadlineMissedError;
    expect(err).toBeInstanceOf(DeadlineMissedError);
    expect(err.kind).toBe("connect");
    expect(err.routerLagMs).toBeGreaterThanOrEqual(500);
    expect(err.message).toContain("not counted against the worker");
  });

  test("without a lag meter the same hold is a plain miss (what fenced engines on a starved router)", async () => {
    const port = await fullBacklogPort();
    const client = new SocketHttpClient({ connectTimeoutMs: 200 });
    const pending = client
      .request(`http://127.0.0.1:${port}`, "/v1/completions", INIT)
      .catch((e: unknown) => e);
    await Bun.sleep(10);
    holdLoop(700);
    const err = (await pending) as DeadlineMissedError;
    expect(err).toBeInstanceOf(DeadlineMissedError);
    expect(err.routerLagMs).toBeUndefined();
  });
});
