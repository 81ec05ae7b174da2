/**
 * The router's KV plan with real processes: a router and two simulated engines with host tiers,
 * each serving its own model name, so a request for the second's model can only go there while
 * the first engine holds its prefix. The router plans a pull from the first, names it to the
 * engine on llm-d's contract (kv_transfer_params.remote_kv_source), and the plan shows in the
 * access log and /debug/decisions. A pull that works moves the blocks; one that fails (the
 * puller's link too slow for its deadline) is computed by the engine and the request succeeds.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { metric } from "./disagg-cluster.ts";

const BS = 16;
let router: Proc;
const procs: Proc[] = [];
let routerUrl = "";

beforeAll(async () => {
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    String(BS),
    "--log-format",
    "json",
    "--health-interval",
    "30",
  ]);
  procs.push(router);
  routerUrl = String(router.info.url);
});

afterAll(async () => {
  await stopAll(procs);
});

async function engine(model: string, extra: readonly string[] = []): Promise<Proc> {
  const p = await startMain([
    "mocker",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    String(BS),
    "--model",
    model,
    "--router-url",
    routerUrl,
    "--event-batch-ms",
    "2",
    "--kv-blocks",
    "8",
    "--kv-host-blocks",
    "32",
    "--kv-block-bytes",
    "4096",
    "--seed",
    "3",
    ...extra,
  ]);
  procs.push(p);
  const r = await fetch(`${routerUrl}/v1/workers`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url: p.info.url }),
  });
  expect(r.status).toBe(201);
  return p;
}

/** `blocks` full blocks + 3 tokens, distinct per seed. */
const prompt = (blocks: number, seed: number) =>
  Array.from({ length: blocks * BS + 3 }, (_, i) => 1000 + ((seed * 7919 + i * 31) % 30000));

async function complete(url: string, body: Record<string, unknown>) {
  const r = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ max_tokens: 1, ...body }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

/** The events an engine has published on rank 0 (its /kv/query log). */
async function engineEventList(p: Proc): Promise<{ storage_tier?: string }[]> {
  const r = await fetch(`${p.info.url}/kv/query?dp_rank=0&start_id=0&end_id=100000`);
  return (
    ((await r.json()) as { events?: { events: { storage_tier?: string }[] } }).events?.events ?? []
  );
}

/** The router has applied at least as many events as these engines published. */
async function allEventsApplied(engines: readonly Proc[]): Promise<boolean> {
  let sent = 0;
  for (const e of engines) sent += (await engineEventList(e)).length;
  return (await metric(routerUrl, "switchyard_kv_events_applied_total")) >= sent;
}

/** Both engines spill to their host tier (so they report one) and the router has applied every event they sent. */
async function tiersReported(engines: readonly Proc[], seed: number): Promise<void> {
  for (const [i, e] of engines.entries()) {
    const m = String(
      ((await (await fetch(`${e.info.url}/v1/models`)).json()) as { data: { id: string }[] })
        .data[0]!.id,
    );
    // Two 8-block prompts through an 8-block GPU cache: the first is evicted to the host tier.
    for (const s of [seed + i * 2, seed + i * 2 + 1])
      expect((await complete(String(e.info.url), { model: m, prompt: prompt(8, s) })).status).toBe(
        200,
      );
  }
  await until(async () => {
    const cpu = await Promise.all(
      engines.map(async (e) =>
        (await engineEventList(e)).some((x) => x.storage_tier === "host_pinned"),
      ),
    );
    return cpu.every(Boolean) && (await allEventsApplied(engines)) ? true : null;
  }, "both engines' host-tier events applied by the router");
}

/** Streamed through the router (only a stream's first token is timed): its usage chunk. */
async function streamed(
  body: Record<string, unknown>,
  requestId: string,
): Promise<{ status: number; usage: Record<string, unknown> }> {
  const r = await fetch(`${routerUrl}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-request-id": requestId },
    body: JSON.stringify({
      max_tokens: 2,
      stream: true,
      stream_options: { include_usage: true },
      ...body,
    }),
  });
  const text = await r.text();
  const chunks = text
    .split("\n")
    .filter((l) => l.startsWith("data: {"))
    .map((l) => JSON.parse(l.slice(6)) as { usage?: Record<string, unknown> });
  return { status: r.status, usage: chunks.find((c) => c.usage)?.usage ?? {} };
}

interface AccessLine {
  request_id: string;
  status: number;
  kv_plan: string | null;
  ttft_ms: number | null;
}
const accessLines = (): AccessLine[] =>
  router
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{") && l.includes('"msg":"request"'))
    .map((l) => JSON.parse(l) as AccessLine);

describe("kv plan (a real router and simulated engines with host tiers)", () => {
  let source: Proc;
  let puller: Proc;
  let slow: Proc;

  beforeAll(async () => {
    source = await engine("ma");
    puller = await engine("mb");
    // Its link is modelled at 1 MB/s: 6 blocks of 128 KiB per token take ~12 s, past its 300 ms deadline.
    slow = await engine("mc", ["--kv-peer-gbps", "0.001", "--kv-pull-deadline-ms", "300"]);
    await tiersReported([source, puller, slow], 100);
  });

  test("a peer holds the prefix on GPU: the engine is told to pull it from there; the plan is logged with its observed TTFT", async () => {
    const x = prompt(6, 1);
    expect((await complete(String(source.info.url), { model: "ma", prompt: x })).status).toBe(200);
    await until(
      async () => ((await allEventsApplied([source, puller, slow])) ? true : null),
      "x indexed",
    );
    const r = await streamed({ model: "mb", prompt: x }, "it-plan-pull");
    expect(r.status).toBe(200);
    // The engine pulled the 6 blocks from its peer, byte-checked.
    expect(r.usage).toMatchObject({ kv_transfer_blocks: 6 });
    const sourceId = String(source.info.worker_id);
    const line = await until(
      () => accessLines().find((l) => l.request_id === "it-plan-pull"),
      "the access line",
    );
    expect(line.kv_plan).toMatch(
      new RegExp(
        `^6 blocks pulled from worker ${sourceId} rank 0, predicted \\d+ ms, observed \\d+ ms$`,
      ),
    );
    const decisions = (await (await fetch(`${routerUrl}/debug/decisions`)).json()) as {
      decisions: { request_id: string; kv_plan: string | null }[];
    };
    const d = decisions.decisions.find((x) =>
      x.kv_plan?.startsWith(`6 blocks pulled from worker ${sourceId}`),
    );
    expect(d).toBeDefined();
    expect(await metric(String(puller.info.url), "mocker_kv_p2p_pulled_blocks_total")).toBe(6);
  });

  test("the prefix on the engine's own CPU tier: loaded there, the plan logged", async () => {
    const x = prompt(6, 3);
    const url = String(puller.info.url);
    expect((await complete(url, { model: "mb", prompt: x })).status).toBe(200);
    expect((await complete(url, { model: "mb", prompt: prompt(8, 4) })).status).toBe(200); // evicts x to the host tier
    await until(
      async () => ((await metric(url, "mocker_kv_tier_offloaded_blocks_total")) >= 6 ? true : null),
      "x offloaded",
    );
    await until(
      async () => ((await allEventsApplied([source, puller, slow])) ? true : null),
      "x indexed on the CPU tier",
    );
    const loadedBefore = await metric(url, "mocker_kv_tier_loaded_blocks_total");
    const r = await streamed({ model: "mb", prompt: x }, "it-plan-load");
    expect(r.status).toBe(200);
    expect(r.usage.prompt_tokens_details).toEqual({ cached_tokens: 6 * BS });
    expect(await metric(url, "mocker_kv_tier_loaded_blocks_total")).toBe(loadedBefore + 6);
    const line = await until(
      () => accessLines().find((l) => l.request_id === "it-plan-load"),
      "the access line",
    );
    expect(line.kv_plan).toMatch(/^6 blocks loaded from cpu, predicted \d+ ms, observed \d+ ms$/);
  });

  test("a pull that fails (too slow for the engine's deadline): the engine computes the prefix, the request succeeds, the plan is logged", async () => {
    const x = prompt(6, 2);
    expect((await complete(String(source.info.url), { model: "ma", prompt: x })).status).toBe(200);
    await until(
      async () => ((await allEventsApplied([source, puller, slow])) ? true : null),
      "x indexed",
    );
    const r = await streamed({ model: "mc", prompt: x }, "it-plan-fail");
    expect(r.status).toBe(200);
    expect(r.usage.prompt_tokens).toBe(6 * BS + 3);
    expect(r.usage.kv_transfer_blocks).toBeUndefined();
    const line = await until(
      () => accessLines().find((l) => l.request_id === "it-plan-fail"),
      "the access line",
    );
    expect(line.status).toBe(200);
    expect(line.kv_plan).toMatch(
      /^6 blocks pulled from worker \d+ rank 0, predicted \d+ ms, observed \d+ ms$/,
    );
    expect(await metric(String(slow.info.url), "mocker_kv_p2p_pull_timeouts_total")).toBe(1);
  });
});
