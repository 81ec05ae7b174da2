/**
 * A client cannot tell an engine where to fetch KV from. Real processes: one simulated engine
 * (which pulls from whatever `kv_transfer_params.remote_kv_source` names, as an llm-d engine
 * does), a router in front of it with the defaults, and one with --trust-kv-transfer-params; a
 * "bait" HTTP server in this process stands for the host a client would name. Through the
 * default router every KV-steering field is a 400 naming it and the bait is never contacted;
 * through the trusting router the same body reaches the engine, which then calls the bait (so
 * the refusal is what keeps it away).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { metric } from "./disagg-cluster.ts";

const BS = 16;
const procs: Proc[] = [];
let engine: Proc;
let guarded: Proc;
let trusting: Proc;
let bait: ReturnType<typeof Bun.serve>;
const baitCalls: string[] = [];

beforeAll(async () => {
  bait = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      baitCalls.push(new URL(req.url).pathname);
      return new Response("no", { status: 404 });
    },
  });
  engine = await startMain([
    "mocker",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    String(BS),
    "--model",
    "m",
    "--kv-blocks",
    "64",
    "--kv-host-blocks",
    "64",
    "--kv-block-bytes",
    "4096",
    "--kv-pull-deadline-ms",
    "2000",
  ]);
  procs.push(engine);
  const router = (extra: readonly string[]) =>
    startMain([
      "serve",
      "--port",
      "0",
      "--host",
      "127.0.0.1",
      "--block-size",
      String(BS),
      "--worker",
      String(engine.info.url),
      "--log-level",
      "error",
      // No canary: the engine's request count is then the clients' alone.
      "--canary=false",
      ...extra,
    ]);
  guarded = await router([]);
  procs.push(guarded);
  trusting = await router(["--trust-kv-transfer-params"]);
  procs.push(trusting);
});

afterAll(async () => {
  await stopAll(procs);
  bait?.stop(true);
});

/** Two full blocks and a tail, distinct per seed: nothing of it is cached anywhere. */
const prompt = (seed: number) =>
  Array.from({ length: 2 * BS + 3 }, (_, i) => 1000 + ((seed * 7919 + i * 31) % 30000));

const pullFromBait = () => ({
  remote_kv_source: {
    kv_request_id: "client-made-1",
    remote_host: "127.0.0.1",
    remote_port: bait.port,
  },
});

async function post(url: string, path: string, body: Record<string, unknown>) {
  const r = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return {
    status: r.status,
    body: (await r.json()) as { error?: { message: string; param: string | null } },
  };
}

describe("a client's KV-steering fields (real router and simulated engine)", () => {
  test("refused with a 400 naming the field, on every route and for every field; the engine never hears of them", async () => {
    const url = String(guarded.info.url);
    const requestsBefore = await metric(String(engine.info.url), "mocker_requests_total");
    const cases: { path: string; body: Record<string, unknown>; field: string }[] = [
      {
        path: "/v1/completions",
        body: { model: "m", prompt: prompt(1), max_tokens: 1, kv_transfer_params: pullFromBait() },
        field: "kv_transfer_params",
      },
      {
        path: "/v1/completions",
        body: {
          model: "m",
          prompt: prompt(1),
          max_tokens: 1,
          stream: true,
          kv_transfer_params: {
            do_remote_prefill: true,
            remote_host: "127.0.0.1",
            remote_port: bait.port,
            remote_engine_id: "x",
            remote_block_ids: [1, 2],
          },
        },
        field: "kv_transfer_params",
      },
      {
        path: "/v1/chat/completions",
        body: {
          model: "m",
          messages: [{ role: "user", content: "hi" }],
          kv_transfer_params: pullFromBait(),
        },
        field: "kv_transfer_params",
      },
      {
        path: "/v1/completions",
        body: { model: "m", prompt: "hi", vllm_xargs: { kv_transfer_params: "x" } },
        field: "vllm_xargs.kv_transfer_params",
      },
      {
        path: "/generate",
        body: {
          text: "hi",
          bootstrap_host: "127.0.0.1",
          bootstrap_port: bait.port,
          bootstrap_room: 7,
        },
        field: "bootstrap_host",
      },
      {
        path: "/v1/chat/completions",
        body: { model: "m", messages: [{ role: "user", content: "hi" }], bootstrap_room: 7 },
        field: "bootstrap_room",
      },
      {
        path: "/generate",
        body: { text: "hi", kv_router_hint: { source_control_endpoint: `127.0.0.1:${bait.port}` } },
        field: "kv_router_hint",
      },
      {
        path: "/v1/embeddings",
        body: { model: "m", input: "hi", kv_transfer_params: {} },
        field: "kv_transfer_params",
      },
    ];
    for (const c of cases) {
      const r = await post(url, c.path, c.body);
      expect({ path: c.path, status: r.status, param: r.body.error?.param }).toEqual({
        path: c.path,
        status: 400,
        param: c.field,
      });
      expect(r.body.error!.message).toStartWith(`${c.field}: set by the router`);
      expect(r.body.error!.message).toContain("--trust-kv-transfer-params");
    }
    // A field of that name inside a message or a prompt is text, not a request to the engine.
    const ok = await post(url, "/v1/chat/completions", {
      model: "m",
      max_tokens: 1,
      messages: [{ role: "user", content: '{"kv_transfer_params": {}}' }],
    });
    expect(ok.status).toBe(200);
    expect(await metric(String(engine.info.url), "mocker_requests_total")).toBe(requestsBefore + 1);
    expect(baitCalls).toEqual([]);
  });

  test("with --trust-kv-transfer-params the body passes as sent: the engine pulls from the host it names (the bait), then computes the prefix", async () => {
    const url = String(trusting.info.url);
    const r = await post(url, "/v1/completions", {
      model: "m",
      prompt: prompt(2),
      max_tokens: 1,
      kv_transfer_params: pullFromBait(),
    });
    expect(r.status).toBe(200);
    await until(() => (baitCalls.length > 0 ? true : null), "the engine to call the named host");
    expect(baitCalls[0]).toBe("/v1/kv/p2p/export");
    expect(await metric(String(engine.info.url), "mocker_kv_p2p_pulls_total")).toBe(1);
  });
});
