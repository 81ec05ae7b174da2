/**
 * The router as a real process (`bun src/main.ts serve`) in front of four simulated engines
 * (`bun src/main.ts mocker`), all on loopback with ports chosen at run time. The engines
 * push KV events to the router; the router restores each engine's index from /kv/query at
 * registration. Every process is stopped by PID in afterAll.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { freePort, startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { compareBlocks, engineBlocks, routerBlocks } from "./multi-router-cluster.ts";

// Real processes: starting them and polling their state takes longer than the 5 s default.
setDefaultTimeout(30_000);

const TOKEN = "integration-admin-token";
/** Engines push events with their own credential, never the admin token. */
const EVENTS_TOKEN = "integration-events-token";
const MAX_BODY = 65_536;
const BS = 16;

let engines: Proc[] = [];
let router: Proc | undefined;
let routerUrl = "";
const engineUrl = new Map<string, string>(); // worker id -> url

beforeAll(async () => {
  const port = freePort();
  routerUrl = `http://127.0.0.1:${port}`;
  engines = await Promise.all(
    [1, 2, 3, 4].map((seed) =>
      startMain([
        "mocker",
        "--port",
        "0",
        "--router-url",
        routerUrl,
        "--admin-token",
        TOKEN,
        "--events-token",
        EVENTS_TOKEN,
        "--event-batch-ms",
        "2",
        "--block-size",
        String(BS),
        "--seed",
        String(seed),
        "--decode-ms-per-step",
        "8",
      ]),
    ),
  );
  for (const e of engines) engineUrl.set(String(e.info.worker_id), String(e.info.url));
  router = await startMain([
    "serve",
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--admin-token",
    TOKEN,
    "--events-token",
    EVENTS_TOKEN,
    "--block-size",
    String(BS),
    // Health checks are slow here on purpose: the engine-kill test must see fencing, not a check.
    "--health-interval",
    "30",
    "--max-body-bytes",
    String(MAX_BODY),
    ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
  ]);
});

afterAll(async () => {
  await stopAll([router, ...engines]);
});

const admin = { authorization: `Bearer ${TOKEN}` };

function complete(
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
  path = "/v1/completions",
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${routerUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
    signal,
  });
}

interface WorkerView {
  id: string;
  healthy: boolean;
  active_prefill_tokens: number;
  active_decode_blocks: number;
  cached_blocks: number;
}

async function workers(): Promise<WorkerView[]> {
  const r = await fetch(`${routerUrl}/v1/workers`, { headers: admin });
  return ((await r.json()) as { workers: WorkerView[] }).workers;
}

async function allIdle(): Promise<boolean> {
  return (await workers()).every(
    (w) => w.active_prefill_tokens === 0 && w.active_decode_blocks === 0,
  );
}

/** A prompt of `blocks` full blocks that shares nothing with prompts of other tags. */
function prompt(tag: string, blocks: number): string {
  let s = "";
  for (let i = 0; s.length < blocks * BS; i++) s += `${tag}-${i} `;
  return s.slice(0, blocks * BS);
}

function routing(r: Response): { worker: string; dpRank: number; overlap: number } {
  return {
    worker: r.headers.get("x-switchyard-worker") ?? "",
    dpRank: Number(r.headers.get("x-switchyard-dp-rank")),
    overlap: Number(r.headers.get("x-switchyard-overlap-blocks")),
  };
}

async function cachedOn(worker: string): Promise<number> {
  return (await workers()).find((w) => w.id === worker)?.cached_blocks ?? 0;
}

/**
 * Send a completion with a prompt no worker has seen, and wait until the router's index
 * holds `blocks` more blocks for the worker that served it. Returns that worker.
 */
async function completeAndIndex(body: Record<string, unknown>, blocks: number): Promise<string> {
  const before = new Map((await workers()).map((w) => [w.id, w.cached_blocks]));
  const r = await complete(body);
  expect(r.status).toBe(200);
  await r.text();
  const w = routing(r).worker;
  await until(
    async () => (await cachedOn(w)) >= before.get(w)! + blocks,
    `${blocks} new blocks of worker ${w} in the router's index`,
  );
  return w;
}

describe("routing", () => {
  test("a prompt and a later prompt sharing its prefix go to the same worker, with overlap", async () => {
    const base = prompt("alpha", 20);
    const first = { worker: await completeAndIndex({ prompt: base, max_tokens: 2 }, 20) };
    expect(engineUrl.has(first.worker)).toBe(true);

    const r2 = await complete({ prompt: `${base} and a different ending`, max_tokens: 2 });
    expect(r2.status).toBe(200);
    await r2.text();
    const second = routing(r2);
    expect(second.dpRank).toBe(0);
    expect(second.worker).toBe(first.worker);
    expect(second.overlap).toBeGreaterThanOrEqual(20);
  });

  test("a session sticks to its worker; a different prompt under that load goes elsewhere", async () => {
    const session = { "x-session-id": "busy-session" };
    const busy: Response[] = [];
    for (let i = 0; i < 3; i++) {
      // Different prompts, one session: only the binding keeps them together.
      busy.push(
        await complete({ prompt: prompt(`busy${i}`, 8), max_tokens: 400, stream: true }, session),
      );
    }
    const readers = busy.map((r) => r.body!.getReader());
    await Promise.all(readers.map((r) => r.read())); // all three are streaming now
    const loaded = routing(busy[0]!).worker;
    for (const r of busy) expect(routing(r).worker).toBe(loaded);

    for (let i = 0; i < 5; i++) {
      const r = await complete({ prompt: prompt(`fresh${i}`, 8), max_tokens: 1 });
      expect(r.status).toBe(200);
      await r.text();
      expect(routing(r).worker).not.toBe(loaded);
    }

    // The clients leave mid-stream: their bookings are freed.
    await Promise.all(readers.map((r) => r.cancel()));
    await until(allIdle, "active load to return to 0 after the clients disconnected");
  });

  test("a client that leaves before the first byte leaks no load", async () => {
    const ac = new AbortController();
    // ~24k uncached tokens: about a second of simulated prefill before the engine answers.
    const pending = complete(
      { prompt: prompt("leaver", 1500), max_tokens: 5, stream: true },
      {},
      "/v1/completions",
      ac.signal,
    );
    await until(async () => !(await allIdle()), "the request to be booked");
    ac.abort();
    await pending.catch(() => {});
    await until(allIdle, "active load to return to 0 after the client left early");
  });

  test("the Dynamo session header is honoured too", async () => {
    const h = { "x-dynamo-session-id": "dyn-session" };
    const a = await complete({ prompt: prompt("dyn-a", 2), max_tokens: 1 }, h);
    const b = await complete({ prompt: prompt("dyn-b", 2), max_tokens: 1 }, h, "/v1/completions");
    await Promise.all([a.text(), b.text()]);
    expect(routing(b).worker).toBe(routing(a).worker);
  });

  test("chat completions are routed and answered with routing headers", async () => {
    const r = await complete(
      { messages: [{ role: "user", content: prompt("chat", 4) }], max_tokens: 3 },
      {},
      "/v1/chat/completions",
    );
    expect(r.status).toBe(200);
    const body = (await r.json()) as { object: string };
    expect(body.object).toBe("chat.completion");
    expect(engineUrl.has(routing(r).worker)).toBe(true);
  });

  test("a completions prompt given as token ids is hashed as given", async () => {
    const tokens = Array.from({ length: 4 * BS }, (_, i) => 1000 + i);
    const w = await completeAndIndex({ prompt: tokens, max_tokens: 1 }, 4);
    // The count above may include late blocks of earlier tests: wait for these very blocks.
    await until(async () => {
      const r = (await (
        await fetch(`${routerUrl}/v1/route`, {
          method: "POST",
          headers: admin,
          body: JSON.stringify({ tokens }),
        })
      ).json()) as { request_id: string; overlap_blocks: number };
      await fetch(`${routerUrl}/v1/route/${r.request_id}/free`, { method: "POST", headers: admin });
      return r.overlap_blocks === 4;
    }, "the prompt's 4 blocks in the router's index");
    const b = await complete({ prompt: [...tokens, 7, 8, 9], max_tokens: 1 });
    await b.text();
    expect(routing(b)).toMatchObject({ worker: w, overlap: 4 });
  });
});

describe("streaming", () => {
  test("tokens arrive one by one, not buffered, and the stream ends with [DONE]", async () => {
    const r = await complete({ prompt: prompt("stream", 3), max_tokens: 12, stream: true });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/event-stream");
    const reader = r.body!.getReader();
    const times: number[] = [];
    let text = "";
    const dec = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      times.push(performance.now());
      text += dec.decode(value, { stream: true });
    }
    // 12 decode steps of 8 ms each: several separate reads spread over time.
    expect(times.length).toBeGreaterThanOrEqual(4);
    expect(times[times.length - 1]! - times[0]!).toBeGreaterThan(30);
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(text.match(/^data: \{/gm)?.length).toBeGreaterThanOrEqual(12);
    await until(allIdle, "active load to return to 0 after the stream");
  });
});

describe("index", () => {
  test("/debug/kv/dump holds exactly what the engines hold", async () => {
    let detail = "";
    await until(
      async () => {
        const [e, r] = await Promise.all([
          engineBlocks(
            engines.map((p) => String(p.info.url)),
            admin,
          ),
          routerBlocks(routerUrl, admin),
        ]);
        const c = compareBlocks(e, r);
        detail = c.detail;
        return e.size > 0 && c.same;
      },
      () => `the router's dump to match the engines' (${detail})`,
    );
  });
});

describe("route protocol for frontends that forward themselves", () => {
  test("route books load; prefill-done and free release it", async () => {
    const tokens = Array.from({ length: 3 * BS }, (_, i) => 50_000 + i);
    const r = await fetch(`${routerUrl}/v1/route`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ tokens, request_id: "ext-1" }),
    });
    expect(r.status).toBe(200);
    const d = (await r.json()) as {
      request_id: string;
      worker_id: string;
      dp_rank: number;
      overlap_blocks: number;
    };
    expect(d).toMatchObject({ request_id: "ext-1", dp_rank: 0, overlap_blocks: 0 });
    expect(engineUrl.has(d.worker_id)).toBe(true);
    const mine = async () => (await workers()).find((w) => w.id === d.worker_id)!;
    expect((await mine()).active_prefill_tokens).toBe(3 * BS);

    const again = await fetch(`${routerUrl}/v1/route`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ tokens, request_id: "ext-1" }),
    });
    expect(again.status).toBe(409);
    for (const bad of ["a\u0000b", "x".repeat(257)]) {
      const refused = await fetch(`${routerUrl}/v1/route`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ tokens, request_id: bad }),
      });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(await refused.json())).toContain("request_id");
    }

    const p = await fetch(`${routerUrl}/v1/route/ext-1/prefill-done`, {
      method: "POST",
      headers: admin,
    });
    expect(await p.json()).toEqual({ success: true });
    expect((await mine()).active_prefill_tokens).toBe(0);
    expect((await mine()).active_decode_blocks).toBeGreaterThan(0);
    const f = await fetch(`${routerUrl}/v1/route/ext-1/free`, { method: "POST", headers: admin });
    expect(await f.json()).toEqual({ success: true });
    const f2 = await fetch(`${routerUrl}/v1/route/ext-1/free`, { method: "POST", headers: admin });
    expect(await f2.json()).toEqual({ success: false });
    expect(await allIdle()).toBe(true);
  });

  test("events of an unregistered worker are counted and dropped", async () => {
    const batch = [
      {
        worker_id: 12345,
        event: {
          event_id: 0,
          dp_rank: 0,
          data: { stored: { parent_hash: null, blocks: [{ block_hash: 1, tokens_hash: 2 }] } },
        },
      },
    ];
    const r = await fetch(`${routerUrl}/v1/kv/events`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify(batch),
    });
    expect(await r.json()).toEqual({ accepted: 0, dropped: 1 });
    const metrics = await (await fetch(`${routerUrl}/metrics`)).text();
    expect(metrics).toMatch(/switchyard_kv_events_dropped_total\{reason="unknown_worker"\} [1-9]/);
  });
});

describe("bad requests", () => {
  async function expectError(r: Response, status: number, needle: string): Promise<void> {
    expect(r.status).toBe(status);
    const body = (await r.json()) as { error: { message: string; type: string; code: string } };
    expect(body.error.message).toContain(needle);
    expect(typeof body.error.type).toBe("string");
    expect(typeof body.error.code).toBe("string");
  }
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${routerUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });

  test("invalid JSON, missing or mistyped fields get 400 naming the field", async () => {
    await expectError(await post("/v1/completions", "{not json"), 400, "not valid JSON");
    await expectError(await post("/v1/completions", "{}"), 400, "prompt");
    await expectError(await post("/v1/completions", '{"prompt": 5}'), 400, "prompt");
    await expectError(await post("/v1/completions", '{"prompt": [1, -2]}'), 400, "prompt[1]");
    await expectError(
      await post("/v1/completions", '{"prompt": "x", "stream": "yes"}'),
      400,
      "stream",
    );
    await expectError(
      await post("/v1/chat/completions", '{"messages": [{"content": "hi"}]}'),
      400,
      "messages[0].role",
    );
    await expectError(await post("/v1/completions", "[1,2]"), 400, "JSON object");
  });

  test("a body over --max-body-bytes gets 413", async () => {
    await expectError(
      await post("/v1/completions", JSON.stringify({ prompt: "x".repeat(MAX_BODY) })),
      413,
      "limit",
    );
  });

  test("admin endpoints without the token get 401, with a wrong one too", async () => {
    await expectError(await fetch(`${routerUrl}/v1/workers`), 401, "Bearer");
    await expectError(await post("/v1/workers", '{"url":"http://127.0.0.1:1"}'), 401, "Bearer");
    await expectError(await fetch(`${routerUrl}/v1/workers`, { method: "DELETE" }), 401, "Bearer");
    await expectError(await post("/v1/kv/events", "[]"), 401, "Bearer");
    await expectError(await post("/v1/route", '{"tokens":[1]}'), 401, "Bearer");
    await expectError(
      await fetch(`${routerUrl}/debug/kv/dump`, { headers: { authorization: "Bearer nope" } }),
      401,
      "not the admin token",
    );
  });

  test("admin bodies are validated with the field named", async () => {
    await expectError(await post("/v1/workers", '{"url": 5}', admin), 400, "url");
    await expectError(
      await post("/v1/workers", '{"url": "http://127.0.0.1:1", "block_size": 8}', admin),
      400,
      "block_size",
    );
    await expectError(
      await post("/v1/kv/events", '[{"worker_id": "x", "event": {}}]', admin),
      400,
      "worker_id",
    );
    await expectError(await post("/v1/route", '{"tokens": []}', admin), 400, "tokens");
    await expectError(
      await fetch(`${routerUrl}/v1/workers/abc`, { method: "DELETE", headers: admin }),
      400,
      "worker id",
    );
    await expectError(
      await fetch(`${routerUrl}/v1/workers/99`, { method: "DELETE", headers: admin }),
      404,
      "not registered",
    );
  });

  test("an unknown path gets a 404 in OpenAI's shape", async () => {
    await expectError(await fetch(`${routerUrl}/v2/nothing`), 404, "no route");
  });
});

describe("workers", () => {
  test("GET /v1/models answers the engines' models", async () => {
    const r = await fetch(`${routerUrl}/v1/models`);
    const body = (await r.json()) as { data: { id: string }[] };
    expect(body.data.map((m) => m.id)).toContain("switchyard-sim");
  });

  test("register and remove a worker at run time; its blocks leave the index", async () => {
    const extra = await startMain([
      "mocker",
      "--port",
      "0",
      "--router-url",
      routerUrl,
      "--admin-token",
      TOKEN,
      "--events-token",
      EVENTS_TOKEN,
      "--event-batch-ms",
      "2",
    ]);
    try {
      const r = await fetch(`${routerUrl}/v1/workers`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ url: extra.info.url }),
      });
      expect(r.status).toBe(201);
      const reg = (await r.json()) as { id: string; created: boolean };
      expect(reg.id).toBe(String(extra.info.worker_id)); // workerIdFromUrl, as the engine derives it
      const again = await fetch(`${routerUrl}/v1/workers`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ url: extra.info.url }),
      });
      expect(again.status).toBe(200);

      // Fill it directly (not through the router): the events reach the router's index.
      const direct = await fetch(`${extra.info.url}/v1/completions`, {
        method: "POST",
        body: JSON.stringify({ prompt: prompt("extra", 5), max_tokens: 1 }),
      });
      await direct.text();
      await until(
        async () => (await cachedOn(reg.id)) >= 5,
        "the new worker's blocks in the index",
      );

      const del = await fetch(`${routerUrl}/v1/workers/${reg.id}`, {
        method: "DELETE",
        headers: admin,
      });
      expect(del.status).toBe(200);
      expect((await workers()).some((w) => w.id === reg.id)).toBe(false);
      const dump = await (await fetch(`${routerUrl}/debug/kv/dump`, { headers: admin })).text();
      expect(dump).not.toContain(`"worker_id":${reg.id}`);
    } finally {
      await extra.stop();
    }
  });
});

describe("an engine dies", () => {
  test("its stream breaks (migration turned off for it); new requests fail over to another worker; load returns to 0", async () => {
    const base = prompt("doomed", 12);
    const victim = await completeAndIndex({ prompt: base, max_tokens: 1 }, 12);

    // The client turned migration off (test/integration/stream-migration*.test.ts cover the
    // default, where the stream goes on on another engine).
    const streaming = await complete(
      { prompt: `${base} long answer`, max_tokens: 2000, stream: true },
      { "x-switchyard-migrate": "off" },
    );
    expect(routing(streaming).worker).toBe(victim);
    const reader = streaming.body!.getReader();
    await reader.read();

    engines.find((e) => String(e.info.worker_id) === victim)!.proc.kill("SIGKILL");

    // The stream that already started is broken, not silently completed.
    let sawDone = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (new TextDecoder().decode(value).includes("[DONE]")) sawDone = true;
      }
    } catch {
      // an error here is the expected outcome
    }
    expect(sawDone).toBe(false);

    // Same prefix: the router prefers the dead worker, fails before the first byte, retries.
    const r = await complete({ prompt: `${base} another question`, max_tokens: 2 });
    expect(r.status).toBe(200);
    await r.text();
    expect(routing(r).worker).not.toBe(victim);
    expect(engineUrl.has(routing(r).worker)).toBe(true);

    const metrics = await (await fetch(`${routerUrl}/metrics`)).text();
    // The series exists from registration at 0 (src/observe/zero-series.ts): the failure made it 1 or more.
    expect(metrics).toMatch(
      new RegExp(`switchyard_upstream_failures_total\\{worker="${victim}"\\} [1-9]`),
    );
    expect((await workers()).find((w) => w.id === victim)?.healthy).toBe(false);

    // Fenced: later requests do not even try it.
    for (let i = 0; i < 3; i++) {
      const x = await complete({ prompt: `${base} q${i}`, max_tokens: 1 });
      expect(x.status).toBe(200);
      await x.text();
      expect(routing(x).worker).not.toBe(victim);
    }
    await until(allIdle, "active load to return to 0 after the engine died");
  });
});
