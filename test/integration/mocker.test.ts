/**
 * The simulated engine as a real process (test/support/run-mocker.ts) on loopback, pushing
 * its KV events to a small collector that stands in for the router; plus one in-process
 * engine for the admin-token checks.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as v from "valibot";
import { join } from "node:path";
import { RouterEventBatchSchema, type RouterEvent } from "../../src/core/events.ts";
import { computeBlockHashes } from "../../src/core/block-hash.ts";
import { parseJsonBigintSafe } from "../../src/core/json.ts";
import { workerIdFromUrl } from "../../src/core/worker-id.ts";
import { engineBlockHashes } from "../../src/mocker/engine-hash.ts";
import { rankLoad } from "../../src/mocker/engine.ts";
import { type MockerHandle, startMocker } from "../../src/mocker/server.ts";
import { parseWorkerKvQueryResponse } from "../../src/protocol/kv-query-wire.ts";
import type { WorkerKvQueryResponse } from "../../src/protocol/kv-query.ts";
import { tokenizeText } from "../../src/tokens/tokenize.ts";
import { until } from "../support/processes.ts";

const ROOT = join(import.meta.dir, "..", "..");
const BS = 4;
const KV_BLOCKS = 24;

// ---------------------------------------------------------------- collector ("router")

const batches: RouterEvent[][] = [];
const collector = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: async (req) => {
    if (req.method !== "POST" || new URL(req.url).pathname !== "/v1/kv/events")
      return new Response("no", { status: 404 });
    batches.push(v.parse(RouterEventBatchSchema, parseJsonBigintSafe(await req.text())));
    return new Response(null, { status: 204 });
  },
});
const pushed = () => batches.flat();

// ---------------------------------------------------------------- the engine process

let proc: ReturnType<typeof Bun.spawn> | undefined;
let url = "";
let workerId = 0n;

beforeAll(async () => {
  proc = Bun.spawn({
    cmd: [
      process.execPath,
      join(ROOT, "test/support/run-mocker.ts"),
      "--port",
      "0",
      "--block-size",
      String(BS),
      "--kv-blocks",
      String(KV_BLOCKS),
      "--dp-ranks",
      "2",
      "--router-url",
      `http://127.0.0.1:${collector.port}`,
      "--event-batch-ms",
      "2",
      "--decode-ms-per-step",
      "15",
      "--max-loras",
      "1",
      "--seed",
      "3",
    ],
    cwd: ROOT,
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`mocker exited before printing its URL (exit ${proc.exitCode})`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const info = JSON.parse(text.slice(0, text.indexOf("\n"))) as {
    url: string;
    port: number;
    worker_id: string;
  };
  url = info.url;
  workerId = BigInt(info.worker_id);
});

afterAll(async () => {
  if (proc !== undefined) {
    proc.kill();
    await proc.exited;
  }
  collector.stop(true);
});

function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

async function complete(
  prompt: string | number[],
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  const res = await post("/v1/completions", { prompt, max_tokens: 2, ...extra }, headers);
  const body = (await res.json()) as { choices: { text: string }[]; usage: Usage };
  return { res, body };
}

async function query(params: string): Promise<WorkerKvQueryResponse> {
  return parseWorkerKvQueryResponse(await (await fetch(`${url}/kv/query?${params}`)).text());
}

const PROMPT_A = "The quick brown fox jumps over the lazy dog"; // 43 bytes: 10 full blocks of 4

// ---------------------------------------------------------------- tests

describe("mocker process", () => {
  test("prints its URL and derives its worker id from it, like a router would", async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(workerId).toBe(workerIdFromUrl(url));
    const info = await (await fetch(`${url}/v1/engine/info`)).json();
    expect(info).toEqual({
      worker_id: workerId.toString(),
      dp_ranks: 2,
      block_size: BS,
      kv_blocks: KV_BLOCKS,
      loras: [],
      max_loras: 1,
      model: "switchyard-sim",
      models: ["switchyard-sim"],
      tokenizer: "bytes",
      max_concurrency: 64,
      // who this process is (restart detection) and its P/D role (an ordinary engine: both)
      instance_id: expect.any(String),
      started_at: expect.any(Number),
      role: "both",
    });
    expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: "ok" });
  });

  test("a non-streaming completion returns text and usage; a repeat is served from the cache", async () => {
    const first = await complete(PROMPT_A, {}, { "x-switchyard-dp-rank": "0" });
    expect(first.res.status).toBe(200);
    expect(first.res.headers.get("x-mocker-cached-tokens")).toBe("0");
    expect(first.body.choices[0]!.text.length).toBe(2);
    expect(first.body.usage).toMatchObject({
      prompt_tokens: 43,
      completion_tokens: 2,
      prompt_tokens_details: { cached_tokens: 0 },
    });

    const again = await complete(PROMPT_A, {}, { "x-switchyard-dp-rank": "0" });
    expect(again.res.headers.get("x-mocker-cached-tokens")).toBe("40");
    expect(again.body.usage.prompt_tokens_details.cached_tokens).toBe(40);
    expect(again.body.choices[0]!.text).toBe(first.body.choices[0]!.text); // deterministic text

    // The other dp rank has its own cache.
    const other = await complete(PROMPT_A, {}, { "x-switchyard-dp-rank": "1" });
    expect(other.body.usage.prompt_tokens_details.cached_tokens).toBe(0);
    expect(other.res.headers.get("x-mocker-dp-rank")).toBe("1");
  });

  test("token-id prompts are used as is", async () => {
    const ids = [...tokenizeText(PROMPT_A)];
    const r = await complete(ids, {}, { "x-switchyard-dp-rank": "0" });
    expect(r.body.usage.prompt_tokens_details.cached_tokens).toBe(40);
  });

  test("streaming sends one SSE chunk per token as it is generated, then usage (asked for) and [DONE]", async () => {
    const res = await post(
      "/v1/completions",
      {
        prompt: "stream me please",
        max_tokens: 8,
        stream: true,
        stream_options: { include_usage: true },
      },
      { "x-switchyard-dp-rank": "0" },
    );
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("x-mocker-cached-tokens")).toBe("0");
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let all = "";
    let reads = 0;
    let doneSeenAtFirstToken: boolean | undefined;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const s = dec.decode(value, { stream: true });
      if (s.includes('"text"') && doneSeenAtFirstToken === undefined)
        doneSeenAtFirstToken = s.includes("[DONE]");
      reads++;
      all += s;
    }
    // The first token reached us while generation was still going on.
    expect(doneSeenAtFirstToken).toBe(false);
    expect(reads).toBeGreaterThanOrEqual(3);
    const events = all.split("\n\n").filter((e) => e !== "");
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice("data: ".length)));
    const tokens = chunks.filter((c) => c.choices.length === 1);
    expect(tokens.length).toBe(8);
    for (const c of tokens) expect(c.choices[0].text.length).toBe(1);
    expect(tokens.at(-1).choices[0].finish_reason).toBe("length");
    expect(chunks.at(-1).usage).toMatchObject({
      prompt_tokens: 16,
      completion_tokens: 8,
      prompt_tokens_details: { cached_tokens: 0 },
    });
  });

  test("chat streaming uses delta.content after a role chunk", async () => {
    const res = await post("/v1/chat/completions", {
      messages: [{ role: "user", content: "hi there" }],
      max_tokens: 3,
      stream: true,
    });
    const events = (await res.text()).split("\n\n").filter((e) => e !== "" && e !== "data: [DONE]");
    const chunks = events.map((e) => JSON.parse(e.slice(6)));
    expect(chunks[0].choices[0].delta.role).toBe("assistant");
    expect(chunks.filter((c) => c.choices[0]?.delta?.content?.length === 1).length).toBe(3);
  });

  test("pushed event batches parse as RouterEvent batches, with ids dense from 0 per dp rank", async () => {
    for (const rank of [0, 1]) {
      const q = await query(`dp_rank=${rank}&start_id=0`);
      if (q.kind !== "events" || q.lastEventId === null)
        throw new Error(`expected buffered events, got ${q.kind}`);
      const last = q.lastEventId;
      await until(
        () => pushed().some((e) => e.event.dpRank === rank && e.event.eventId === last),
        `events of rank ${rank} up to ${last}`,
      );
      const ids = pushed()
        .filter((e) => e.event.dpRank === rank)
        .map((e) => e.event.eventId);
      expect(ids).toEqual(Array.from({ length: Number(last) + 1 }, (_, i) => BigInt(i)));
      expect(pushed().every((e) => e.workerId === workerId)).toBe(true);
      // The replay answer is exactly what was pushed.
      expect(q.events).toEqual(pushed().filter((e) => e.event.dpRank === rank));
    }
  });

  test("stored blocks carry the engine hash and the router's tokens_hash of the prompt", async () => {
    const tokens = tokenizeText(PROMPT_A);
    const local = computeBlockHashes(tokens, BS);
    const engine = engineBlockHashes(local);
    const stored = pushed()
      .filter((e) => e.event.dpRank === 0)
      .flatMap((e) => (e.event.data.type === "stored" ? e.event.data.blocks : []));
    for (let i = 0; i < local.length; i++) {
      expect(stored).toContainEqual({ blockHash: engine[i]!, tokensHash: local[i]! });
    }
  });

  test("under eviction pressure the tree dump equals the block set the pushed events describe", async () => {
    // 24 blocks per rank; these prompts need far more, so the LRU evicts.
    for (let i = 0; i < 12; i++)
      await complete(
        `prompt number ${i} with some padding text`,
        { max_tokens: 1 },
        { "x-switchyard-dp-rank": "0" },
      );
    const q = await query("dp_rank=0");
    if (q.kind !== "tree_dump") throw new Error(`expected a tree dump, got ${q.kind}`);
    await until(
      () => pushed().some((e) => e.event.dpRank === 0 && e.event.eventId === q.lastEventId),
      "all rank-0 events pushed",
    );
    // Replay the pushed events the way an indexer would.
    const held = new Set<bigint>();
    for (const e of pushed().filter((e) => e.event.dpRank === 0)) {
      const d = e.event.data;
      if (d.type === "stored") {
        if (d.parentHash !== null) expect(held.has(d.parentHash)).toBe(true);
        for (const b of d.blocks) held.add(b.blockHash);
      } else if (d.type === "removed") {
        for (const h of d.blockHashes) expect(held.delete(h)).toBe(true);
      } else held.clear();
    }
    expect(held.size).toBe(KV_BLOCKS);
    const dumped = new Set<bigint>();
    for (const e of q.events) {
      const d = e.event.data;
      if (d.type !== "stored") throw new Error("a dump holds only Stored events");
      if (d.parentHash !== null) expect(dumped.has(d.parentHash)).toBe(true); // parents first
      for (const b of d.blocks) dumped.add(b.blockHash);
    }
    expect(q.events.map((e) => e.event.eventId)).toEqual(q.events.map((_, i) => BigInt(i)));
    expect([...dumped].sort()).toEqual([...held].sort());
  });

  test("query answers follow spec §3.8", async () => {
    expect(await query("dp_rank=1&start_id=5&end_id=2")).toEqual({
      kind: "invalid_range",
      startId: 5n,
      endId: 2n,
    });
    const tooNew = await query("dp_rank=1&start_id=1000000");
    expect(tooNew.kind).toBe("too_new");
    const bad = await fetch(`${url}/kv/query?dp_rank=7`);
    expect(bad.status).toBe(400);
  });

  test("LoRA adapters: salted hashes, slot limit, unknown models are 404", async () => {
    expect(
      (await post("/v1/load_lora_adapter", { lora_name: "ad-1", lora_path: "/x" })).status,
    ).toBe(200);
    const full = await post("/v1/load_lora_adapter", { lora_name: "ad-2", lora_path: "/y" });
    expect(full.status).toBe(400);
    expect(((await full.json()) as { error: { message: string } }).error.message).toContain(
      "--max-loras",
    );

    const before = pushed().length;
    const r = await complete(PROMPT_A, { model: "ad-1" }, { "x-switchyard-dp-rank": "0" });
    expect(r.res.status).toBe(200);
    expect(r.body.usage.prompt_tokens_details.cached_tokens).toBe(0); // base blocks never match
    const lora = computeBlockHashes(tokenizeText(PROMPT_A), BS, { loraName: "ad-1" });
    await until(
      () =>
        pushed()
          .slice(before)
          .some((e) => e.event.data.type === "stored"),
      "the LoRA request's Stored event",
    );
    const stored = pushed()
      .slice(before)
      .flatMap((e) => (e.event.data.type === "stored" ? e.event.data.blocks : []));
    expect(stored.map((b) => b.tokensHash)).toEqual([...lora]);

    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(["switchyard-sim", "ad-1"]);
    expect((await post("/v1/unload_lora_adapter", { lora_name: "ad-1" })).status).toBe(200);
    expect((await post("/v1/unload_lora_adapter", { lora_name: "ad-1" })).status).toBe(404);
    expect((await complete(PROMPT_A, { model: "ad-1" })).res.status).toBe(404);
  });

  test("sessions count every open and close", async () => {
    expect(
      await (await post("/v1/sessions/open", { session_id: "s-1", timeout: 60 })).json(),
    ).toEqual({ status: "ok" });
    expect(await (await post("/v1/sessions/close", { session_id: "s-1" })).json()).toEqual({
      status: "ok",
    });
    const list = (await (await fetch(`${url}/v1/sessions`)).json()) as {
      sessions: { session_id: string; closed_count: number; open: boolean }[];
    };
    expect(list.sessions).toContainEqual(
      expect.objectContaining({ session_id: "s-1", closed_count: 1, open: false, timeout: 60 }),
    );
  });

  test("bad input is a 400 with an OpenAI error body", async () => {
    for (const body of [{ prompt: ["a", 5] }, { prompt: "x", max_tokens: -1 }, {}]) {
      const res = await post("/v1/completions", body);
      expect(res.status).toBe(400);
      const err = (await res.json()) as { error: { message: string; type: string } };
      expect(typeof err.error.message).toBe("string");
      expect(err.error.type).toBe("invalid_request_error");
    }
    const notJson = await fetch(`${url}/v1/completions`, { method: "POST", body: "{nope" });
    expect(notJson.status).toBe(400);
    expect(
      (await post("/v1/completions", { prompt: "x" }, { "x-switchyard-dp-rank": "2" })).status,
    ).toBe(400);
    expect((await fetch(`${url}/nowhere`)).status).toBe(404);
  });

  test("metrics expose requests, cached and prompt tokens, queue depth, running and cache usage", async () => {
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const name of [
      "mocker_requests_total",
      "mocker_cached_tokens_total",
      "mocker_prompt_tokens_total",
      "mocker_queue_depth",
      "mocker_running",
      "mocker_kv_cache_usage",
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(Number(/^mocker_cached_tokens_total (\d+)$/m.exec(text)![1])).toBeGreaterThanOrEqual(80);
    expect(text).toContain('mocker_kv_blocks_used{dp_rank="0"} 24');
  });

  test("clear emits Cleared; a restart empties the cache and starts ids at 0 again", async () => {
    expect((await post("/kv/clear?dp_rank=1", {})).status).toBe(200);
    await until(
      () => pushed().some((e) => e.event.dpRank === 1 && e.event.data.type === "cleared"),
      "a Cleared event",
    );
    const afterClear = await query("dp_rank=1");
    expect(afterClear.kind === "tree_dump" && afterClear.events.length).toBe(0);

    expect((await post("/admin/restart-events", {})).status).toBe(200);
    const before = pushed().length;
    await complete("fresh start after restart", {}, { "x-switchyard-dp-rank": "0" });
    await until(() => pushed().length > before, "an event after the restart");
    expect(pushed()[before]!.event.eventId).toBe(0n);
    const q = await query("dp_rank=0&start_id=0");
    expect(q.kind === "events" && q.events.length).toBe(1);
  });
});

describe("mocker in-process", () => {
  let m: MockerHandle | undefined;
  afterAll(async () => {
    await m?.stop();
  });

  test("admin routes require the admin token when one is set; event pushes carry the events token, never the admin token", async () => {
    const seen: (string | null)[] = [];
    const router = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req) => {
        seen.push(req.headers.get("authorization"));
        return new Response(null, { status: 204 });
      },
    });
    try {
      m = await startMocker({
        log: () => {},
        port: 0,
        adminToken: "tok",
        eventsToken: "events-tok",
        routerUrl: `http://127.0.0.1:${router.port}`,
        workerId: 99n,
        blockSize: 4,
        speedup: 50,
      });
      expect(m.workerId).toBe(99n);
      expect((await fetch(`${m.url}/kv/clear`, { method: "POST" })).status).toBe(401);
      expect(
        (
          await fetch(`${m.url}/admin/restart-events`, {
            method: "POST",
            headers: { authorization: "Bearer no" },
          })
        ).status,
      ).toBe(401);
      expect(
        (
          await fetch(`${m.url}/kv/clear`, {
            method: "POST",
            headers: { authorization: "Bearer tok" },
          })
        ).status,
      ).toBe(200);
      await m.flushEvents();
      expect(seen).toEqual(["Bearer events-tok"]);
    } finally {
      router.stop(true);
    }
  });

  test("a client that disconnects mid-stream frees its running slot", async () => {
    const engine = m!.engine;
    const ctl = new AbortController();
    const res = await fetch(`${m!.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ prompt: "long one", max_tokens: 100000, stream: true }),
      signal: ctl.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    expect(rankLoad(engine.ranks[0]!).running).toBe(1);
    ctl.abort();
    await until(() => rankLoad(engine.ranks[0]!).running === 0, "the slot to be released");
    expect(engine.counters.aborted).toBe(1);
  });
});

describe("mocker with several routers", () => {
  test("every router receives the same KV events; a hung router delays only its own queue", async () => {
    const got: RouterEvent[][] = [[], [], []];
    let release!: () => void;
    const hung = new Promise<void>((r) => (release = r));
    const collectors = got.map((events, i) =>
      Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: async (req) => {
          const batch = v.parse(RouterEventBatchSchema, parseJsonBigintSafe(await req.text()));
          if (i === 2) await hung; // the third "router" holds every POST until released
          events.push(...batch);
          return new Response(null, { status: 204 });
        },
      }),
    );
    const urls = collectors.map((c) => `http://127.0.0.1:${c.port}`);
    let e: MockerHandle | undefined;
    try {
      // Two as a comma list, one through the old single-URL option.
      e = await startMocker({
        log: () => {},
        port: 0,
        routerUrl: urls[0],
        routerUrls: [`${urls[1]},${urls[2]}`],
        blockSize: 4,
        speedup: 50,
        eventBatchMs: 1,
      });
      for (const p of [
        "alpha beta gamma delta epsilon",
        "alpha beta gamma delta zeta eta",
        "theta iota kappa lambda",
      ]) {
        const r = await fetch(`${e.url}/v1/completions`, {
          method: "POST",
          body: JSON.stringify({ prompt: p, max_tokens: 1 }),
        });
        expect(r.status).toBe(200);
        await r.text();
      }
      const emitted = () => Number(e!.engine.ranks[0]!.kv.log.nextEventId);
      expect(emitted()).toBeGreaterThanOrEqual(3);
      // The two live routers get everything while the third still hangs on its first POST.
      await until(
        () => got[0]!.length === emitted() && got[1]!.length === emitted(),
        "both live routers to receive every event",
      );
      expect(got[2]!.length).toBe(0);
      expect(got[1]).toEqual(got[0]!);
      expect(got[0]!.map((x) => x.event.eventId)).toEqual(
        Array.from({ length: emitted() }, (_, i) => BigInt(i)),
      );
      release();
      await e.flushEvents();
      expect(got[2]).toEqual(got[0]!);
      const metrics = await (await fetch(`${e.url}/metrics`)).text();
      for (const u of urls)
        expect(metrics).toMatch(
          new RegExp(`^mocker_event_batches_sent_total\\{router="${u}"\\} [1-9]`, "m"),
        );
    } finally {
      release();
      await e?.stop();
      for (const c of collectors) c.stop(true);
    }
  });
});
