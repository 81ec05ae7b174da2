/**
 * Disaggregated prefill/decode with vLLM's protocol, real processes: a router (--disagg vllm)
 * in front of two prefill and two decode simulated engines that move real KV bytes through
 * the native library's shared-memory pools. Every test ends with no booking and no segment
 * left and no corrupted block.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { mulberry32, randInt } from "../support/prng.ts";
import {
  admin,
  BS,
  bookingsReleased,
  type WorkerView,
  complete,
  engineArgs,
  metric,
  metricLabelled,
  segmentsOf,
  startCluster,
  sumOver,
  tokens,
  workers,
  type Cluster,
} from "./disagg-cluster.ts";

setDefaultTimeout(60_000);

const FAULT_ENGINE = join(import.meta.dir, "..", "support", "fault-engine.ts");

const MIN_PREFILL = 128;
let c: Cluster;

beforeAll(async () => {
  c = await startCluster("vllm", { prefill: 2, decode: 2, minPrefillTokens: MIN_PREFILL });
});
afterAll(async () => {
  await c?.stop();
});

/** The decode engine's KV events reached the router: it holds at least `blocks` blocks in the index. */
async function cachedOn(workerId: string, blocks: number): Promise<void> {
  await until(async () => {
    const w = (await workers(c)).find((x) => x.id === workerId) as
      | { cached_blocks?: number }
      | undefined;
    return (w?.cached_blocks ?? 0) >= blocks;
  }, `${blocks} blocks of worker ${workerId} in the router's index`);
}

async function clean(): Promise<void> {
  await bookingsReleased(c);
  await until(
    () => segmentsOf([...c.prefill, ...c.decode]).length === 0,
    () => `segments removed: ${segmentsOf([...c.prefill, ...c.decode])}`,
  );
  expect(await sumOver(c.decode, "mocker_kv_transfer_mismatched_blocks_total")).toBe(0);
}

describe("--disagg vllm", () => {
  test("a long prompt is prefilled on a prefill engine and its blocks move to the decode engine, checked", async () => {
    const prompt = tokens(40, 1);
    const res = await complete(c, { prompt, max_tokens: 4 });
    const body = (await res.json()) as {
      usage: Record<string, number>;
      choices: { text: string }[];
    };
    expect(res.status).toBe(200);
    const prefillId = res.headers.get("x-switchyard-prefill-worker");
    expect(c.prefill.map((p) => String(p.info.worker_id))).toContain(prefillId!);
    expect(c.decode.map((p) => String(p.info.worker_id))).toContain(
      res.headers.get("x-switchyard-worker")!,
    );
    expect(body.usage.kv_transfer_blocks).toBe(40);
    expect(body.usage.kv_transfer_bytes).toBe(40 * 8192);
    expect(body.choices[0]!.text.length).toBe(4);
    expect(
      await metricLabelled(c.routerUrl, "switchyard_disagg_requests_total", 'path="disaggregated"'),
    ).toBeGreaterThanOrEqual(1);
    await clean();
  });

  test("a streamed answer comes from the decode engine, its usage counts the transferred blocks", async () => {
    const res = await complete(c, {
      prompt: tokens(20, 2),
      max_tokens: 3,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    const text = await res.text();
    expect(text).toContain("data: [DONE]");
    expect(text).toContain('"kv_transfer_blocks":20');
    await clean();
  });

  test("the TTFT predictor learns from the prefill engine's answer, never from the decode engine's first token", async () => {
    // One sample per request with a prediction: the error histogram's count.
    const samples = () => metric(c.routerUrl, "switchyard_ttft_prediction_error_ratio_count");
    const before = await samples();
    // Not streamed: the prefill answer (one token) is the only first token the router sees.
    // Seeds no other test uses: a prompt sharing another test's prefix would find it cached on a
    // decode engine and be prefilled there (conditional disaggregation) instead.
    const whole = await complete(c, { prompt: tokens(24, 200), max_tokens: 2 });
    expect(whole.status).toBe(200);
    expect(whole.headers.get("x-switchyard-prefill-worker")).not.toBeNull();
    await whole.text();
    expect(await samples()).toBe(before + 1);
    // Streamed: the decode engine's first chunk comes after the prefill and the transfer; still one sample.
    const streamed = await complete(c, { prompt: tokens(24, 201), max_tokens: 2, stream: true });
    expect(streamed.headers.get("x-switchyard-prefill-worker")).not.toBeNull();
    expect(await streamed.text()).toContain("data: [DONE]");
    expect(await samples()).toBe(before + 2);
    await clean();
  });

  test("a chat completion is split too (max_completion_tokens: 1 on the prefill side)", async () => {
    const content = "The router pairs a prefill worker with a decode worker. ".repeat(20); // ~1100 byte tokens
    const res = await fetch(`${c.routerUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content }], max_completion_tokens: 3 }),
    });
    const body = (await res.json()) as {
      usage: Record<string, number>;
      choices: { message: { content: string } }[];
    };
    expect(res.status).toBe(200);
    expect(res.headers.get("x-switchyard-prefill-worker")).not.toBeNull();
    expect(body.usage.kv_transfer_blocks).toBeGreaterThan(60);
    expect(body.choices[0]!.message.content.length).toBe(3);
    await clean();
  });

  test("conditional disaggregation: a short prompt, or one cached on the decode engine, is prefilled there", async () => {
    const before = await sumOver(c.prefill, "mocker_requests_total");
    const importsBefore = await sumOver(c.decode, "mocker_kv_transfer_imports_total");
    // A client's own P/D fields never reach an engine: only the router sets them (a 400 naming the field).
    const decodeBefore = await sumOver(c.decode, "mocker_requests_total");
    const refused = await complete(c, {
      prompt: tokens(4, 3),
      max_tokens: 2,
      kv_transfer_params: { do_remote_prefill: true, switchyard_shm: "sy-kv-1-1-1" },
      bootstrap_host: "10.255.255.1",
      bootstrap_room: 1,
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { param: string } }).error.param).toBe(
      "kv_transfer_params",
    );
    expect(await sumOver(c.decode, "mocker_requests_total")).toBe(decodeBefore);
    const short = await complete(c, {
      prompt: tokens(4, 3),
      max_tokens: 2, // 67 tokens < 128
    });
    expect(short.status).toBe(200);
    expect(short.headers.get("x-switchyard-prefill-worker")).toBeNull();
    await short.arrayBuffer();
    expect(await sumOver(c.decode, "mocker_kv_transfer_imports_total")).toBe(importsBefore);
    // A long prompt once (disaggregated), then the same prompt + a few tokens: the decode engine holds it.
    const long = tokens(30, 4, 0);
    const first = await complete(c, { prompt: long, max_tokens: 2 });
    expect(first.headers.get("x-switchyard-prefill-worker")).not.toBeNull();
    const decodeId = first.headers.get("x-switchyard-worker");
    await first.arrayBuffer();
    await cachedOn(decodeId!, 30);
    const again = await complete(c, { prompt: [...long, 1, 2, 3, 4, 5], max_tokens: 2 });
    await again.arrayBuffer();
    expect(again.headers.get("x-switchyard-prefill-worker")).toBeNull();
    expect(again.headers.get("x-switchyard-worker")).toBe(decodeId);
    expect(Number(again.headers.get("x-switchyard-overlap-blocks"))).toBe(30);
    expect(await sumOver(c.prefill, "mocker_requests_total")).toBe(before + 1);
    expect(
      await metricLabelled(
        c.routerUrl,
        "switchyard_disagg_requests_total",
        'path="local_short_prompt"',
      ),
    ).toBeGreaterThanOrEqual(2);
    await clean();
  });

  test("a client that leaves mid-stream releases both bookings", async () => {
    const ctl = new AbortController();
    const res = await fetch(`${c.routerUrl}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: tokens(16, 5), max_tokens: 200, stream: true }),
      signal: ctl.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    ctl.abort();
    await reader.cancel().catch(() => {});
    await clean();
  });
});

describe("under concurrency", () => {
  test("40 requests at once, long and short, streamed or not, a quarter abandoned by their clients: every answer whole or cut, nothing left", async () => {
    const SEED = 15;
    const rng = mulberry32(SEED);
    const jobs = Array.from({ length: 40 }, async (_, i) => {
      const blocks = randInt(rng, 3) === 0 ? 2 : 10 + randInt(rng, 30);
      const stream = randInt(rng, 2) === 0;
      const abandon = randInt(rng, 4) === 0;
      // An abandoned request is cut at a seeded moment: during its prefill, the hand-off or its decode.
      const abandonAfterMs = randInt(rng, 40);
      const ctl = new AbortController();
      const timer = abandon ? setTimeout(() => ctl.abort(), abandonAfterMs) : undefined;
      try {
        const res = await fetch(`${c.routerUrl}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          signal: ctl.signal,
          body: JSON.stringify({ prompt: tokens(blocks, 1000 + i), max_tokens: 20, stream }),
        });
        const text = await res.text();
        if (abandon) return "abandoned";
        expect(res.status, `seed ${SEED}, request ${i}`).toBe(200);
        if (stream) expect(text).toContain("data: [DONE]");
        return "ok";
      } catch (e) {
        if (abandon) return "abandoned";
        throw e;
      } finally {
        clearTimeout(timer);
      }
    });
    const outcomes = await Promise.all(jobs);
    expect(outcomes.filter((o) => o === "ok").length).toBeGreaterThan(20);
    // A request abandoned between its prefill answer and the decode's pull leaves its segment
    // to the prefill engine's lease (--kv-lease-ms 3000 here), as vLLM's NIXL abort timeout does.
    await clean();
  });
});

describe("roles at registration", () => {
  test("POST /v1/workers: an explicit role wins over the engine's own; without one the engine info's role counts", async () => {
    const a = await startMain(engineArgs("prefill", "vllm", c.routerUrl));
    const b = await startMain(engineArgs("prefill", "vllm", c.routerUrl));
    try {
      const reg = (body: Record<string, unknown>) =>
        fetch(`${c.routerUrl}/v1/workers`, {
          method: "POST",
          headers: { ...admin, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      expect((await reg({ url: a.info.url })).status).toBe(201);
      expect((await reg({ url: b.info.url, role: "decode" })).status).toBe(201);
      const bad = await reg({ url: "http://127.0.0.1:1", role: "sideways" });
      expect(bad.status).toBe(400);
      expect(await bad.text()).toContain("role");
      const ws = (await workers(c)) as (WorkerView & { role?: string })[];
      expect(ws.find((w) => w.id === String(a.info.worker_id))?.role).toBe("prefill");
      expect(ws.find((w) => w.id === String(b.info.worker_id))?.role).toBe("decode");
      for (const e of [a, b])
        await fetch(`${c.routerUrl}/v1/workers/${e.info.worker_id}`, {
          method: "DELETE",
          headers: admin,
        });
    } finally {
      await stopAll([a, b]);
    }
    await until(async () => (await workers(c)).length === 4, "the two extra workers removed");
  });
});

describe("--disagg vllm faults", () => {
  test("a prefill engine that fails before its answer is fenced and the next one prefills", async () => {
    const f = Bun.spawn({
      cmd: [process.execPath, FAULT_ENGINE, "--port", "0", "--mode", "error500"],
      stdout: "pipe",
      stderr: "ignore",
    });
    try {
      const line = await until(async () => {
        const reader = f.stdout.getReader();
        const { value } = await reader.read();
        reader.releaseLock();
        return value
          ? new TextDecoder()
              .decode(value)
              .split("\n")
              .find((l) => l.startsWith("{"))
          : undefined;
      }, "the fault engine's address");
      const faultUrl = String((JSON.parse(line) as { url: string }).url);
      const reg = await fetch(`${c.routerUrl}/v1/workers`, {
        method: "POST",
        headers: { ...admin, "content-type": "application/json" },
        body: JSON.stringify({ url: faultUrl, role: "prefill" }),
      });
      expect(reg.status).toBe(201);
      const faultId = ((await reg.json()) as { id: string }).id;
      const real = new Set(c.prefill.map((p) => String(p.info.worker_id)));
      await until(
        async () => (await workers(c)).find((w) => w.id === faultId)?.healthy,
        "the fault engine healthy",
      );
      // Fresh prompts (no overlap anywhere: equal costs, random ties among 3 prefill workers)
      // until the router picks the fault engine once; 40 tries miss it with p = (2/3)^40 < 1e-7.
      for (
        let i = 0;
        i < 40 &&
        (await metricLabelled(
          c.routerUrl,
          "switchyard_disagg_prefill_failures_total",
          `worker="${faultId}"`,
        )) === 0;
        i++
      ) {
        const res = await complete(c, { prompt: tokens(20, 100 + i), max_tokens: 2 });
        expect(res.status).toBe(200);
        expect(real.has(res.headers.get("x-switchyard-prefill-worker")!)).toBe(true);
        expect(
          ((await res.json()) as { usage: Record<string, number> }).usage.kv_transfer_blocks,
        ).toBe(20);
      }
      expect(
        await metricLabelled(
          c.routerUrl,
          "switchyard_disagg_prefill_failures_total",
          `worker="${faultId}"`,
        ),
      ).toBe(1);
      await fetch(`${c.routerUrl}/v1/workers/${faultId}`, { method: "DELETE", headers: admin });
      await clean();
    } finally {
      f.kill("SIGTERM");
      await f.exited;
    }
  });

  test("a prefill engine killed mid-transfer: its segment outlives it, the decode engine still gets every block", async () => {
    // Against the engines directly, so the kill falls exactly between the prefill answer and the pull.
    const routerUrl = c.routerUrl;
    const p = await startMain(engineArgs("prefill", "vllm", routerUrl, ["--worker-id", "777001"]));
    const d = c.decode[0]!;
    try {
      const prompt = tokens(25, 6);
      const pr = await fetch(`${p.info.url}/v1/completions`, {
        method: "POST",
        body: JSON.stringify({
          prompt,
          max_tokens: 1,
          stream: false,
          kv_transfer_params: {
            do_remote_decode: true,
            do_remote_prefill: false,
            remote_engine_id: null,
            remote_block_ids: null,
            remote_host: null,
            remote_port: null,
          },
        }),
      });
      const params = ((await pr.json()) as { kv_transfer_params: Record<string, unknown> })
        .kv_transfer_params;
      expect(params.remote_block_ids).toHaveLength(25);
      expect(segmentsOf([p])).toHaveLength(1);
      p.proc.kill("SIGKILL");
      await p.proc.exited;
      const mismatchesBefore = await metric(
        String(d.info.url),
        "mocker_kv_transfer_mismatched_blocks_total",
      );
      const dr = await fetch(`${d.info.url}/v1/completions`, {
        method: "POST",
        body: JSON.stringify({ prompt, max_tokens: 2, kv_transfer_params: params }),
      });
      const usage = ((await dr.json()) as { usage: Record<string, number> }).usage;
      expect(dr.status).toBe(200);
      expect(usage.kv_transfer_blocks).toBe(25);
      expect(await metric(String(d.info.url), "mocker_kv_transfer_mismatched_blocks_total")).toBe(
        mismatchesBefore,
      );
      expect(segmentsOf([p])).toHaveLength(0); // the decode engine removed it
    } finally {
      await stopAll([p]);
    }
  });

  test("a prefill engine killed before the decode came: its next incarnation removes the orphan segment", async () => {
    const p1 = await startMain(
      engineArgs("prefill", "vllm", c.routerUrl, [
        "--worker-id",
        "777002",
        "--kv-lease-ms",
        "600000",
      ]),
    );
    let p2: Proc | undefined;
    try {
      await fetch(`${p1.info.url}/v1/completions`, {
        method: "POST",
        body: JSON.stringify({
          prompt: tokens(8, 7),
          max_tokens: 1,
          kv_transfer_params: { do_remote_decode: true },
        }),
      }).then((r) => r.arrayBuffer());
      expect(segmentsOf([p1])).toHaveLength(1);
      p1.proc.kill("SIGKILL");
      await p1.proc.exited;
      expect(segmentsOf([p1])).toHaveLength(1); // nobody removed it yet
      p2 = await startMain(engineArgs("prefill", "vllm", c.routerUrl, ["--worker-id", "777002"]));
      expect(segmentsOf([p1])).toHaveLength(0);
    } finally {
      await stopAll([p1, p2]);
    }
  });

  test("a segment that vanished: the decode engine prefills itself and says so in its metrics", async () => {
    const p = c.prefill[0]!;
    const d = c.decode[1]!;
    const prompt = tokens(12, 8);
    const pr = await fetch(`${p.info.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({
        prompt,
        max_tokens: 1,
        kv_transfer_params: { do_remote_decode: true },
      }),
    });
    const params = ((await pr.json()) as { kv_transfer_params: Record<string, unknown> })
      .kv_transfer_params;
    const { unlinkSync } = await import("node:fs");
    unlinkSync(`/dev/shm/${String(params.switchyard_shm)}`);
    const failuresBefore = await metric(String(d.info.url), "mocker_kv_transfer_failures_total");
    const dr = await fetch(`${d.info.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ prompt, max_tokens: 2, kv_transfer_params: params }),
    });
    const body = (await dr.json()) as { usage: Record<string, number> };
    expect(dr.status).toBe(200);
    expect(body.usage.kv_transfer_blocks).toBeUndefined();
    expect(await metric(String(d.info.url), "mocker_kv_transfer_failures_total")).toBe(
      failuresBefore + 1,
    );
  });

  test("a decode engine killed after the prefill: the decode request is retried on the other decode engine, which pulls the blocks", async () => {
    // Warm one decode engine with a prompt so the router prefers it for that prefix, then kill it.
    const base = tokens(20, 9, 0);
    const warm = await complete(c, { prompt: base, max_tokens: 1 });
    await warm.arrayBuffer();
    const victimId = warm.headers.get("x-switchyard-worker")!;
    const victim = c.decode.find((d) => String(d.info.worker_id) === victimId)!;
    const survivor = c.decode.find((d) => d !== victim)!;
    await cachedOn(victimId, 20);
    victim.proc.kill("SIGKILL");
    await victim.proc.exited;
    const res = await complete(c, { prompt: [...base, ...tokens(20, 10)], max_tokens: 3 });
    const body = (await res.json()) as { usage: Record<string, number> };
    expect(res.status).toBe(200);
    expect(res.headers.get("x-switchyard-worker")).toBe(String(survivor.info.worker_id));
    expect(res.headers.get("x-switchyard-prefill-worker")).not.toBeNull();
    expect(body.usage.kv_transfer_blocks).toBeGreaterThan(0);
    await clean();
  });

  test("no healthy prefill engine: the decode engine prefills locally, counted", async () => {
    for (const p of c.prefill) p.proc.kill("SIGKILL");
    await Promise.all(c.prefill.map((p) => p.proc.exited));
    // Both prefill workers by id: the decode engine the test before killed is unhealthy too, so
    // "two unhealthy" could hold with one prefill worker still marked healthy, which the router
    // then tries (and the request falls back as prefill_failed, not no_prefill_worker).
    const prefillIds = new Set(c.prefill.map((p) => String(p.info.worker_id)));
    await until(
      async () =>
        (await workers(c)).filter((w) => prefillIds.has(w.id) && !w.healthy).length ===
        prefillIds.size,
      "both prefill workers marked unhealthy",
    );
    const res = await complete(c, { prompt: tokens(30, 11), max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-switchyard-prefill-worker")).toBeNull();
    await res.arrayBuffer();
    expect(
      await metricLabelled(
        c.routerUrl,
        "switchyard_disagg_requests_total",
        'path="fallback_no_prefill_worker"',
      ),
    ).toBe(1);
    await bookingsReleased(c);
    expect(BS).toBe(16);
  });
});
