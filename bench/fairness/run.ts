/**
 * Fair admission between tenants past saturation: a quiet tenant at a steady rate
 * beside a noisy one sending ten times its rate, through one router in front of 4 simulated
 * engines, with the admission queue in arrival order (FIFO, today's behaviour) and with fair
 * admission (virtual token counters); and the quiet tenant alone (solo) for reference.
 * The `abusive` run puts an abuser beside the quiet tenant instead of the noisy one: a tenant
 * with prompt and output limits (one quiet request's worth per second) sending at the noisy
 * rate, in turn, every request shape that once passed a prompt limit with a fraction of its
 * prefill charged (a batch's `prompt[1]`, embeddings `input[1]`, chat `tools`, `documents`, a
 * message `name`, an image part, responses `instructions`, rerank `documents`, score `text_2`,
 * each 120,000 characters) or outran its output booking (`max_tokens: 200000`, and no
 * `max_tokens` at all). It is refused (429) or held to its limits; the quiet tenant's TTFT
 * should match its solo run.
 * Reports each tenant's TTFT p50/p90/p99 (measured by the client: queue waits count) and
 * goodput (completed requests per second whose TTFT met the SLO), and the quiet tenant's
 * TTFT p90 against its solo run. Target: quiet p90 ≤ 1.5 × solo, total goodput ≥ FIFO's.
 *
 * The router meters prefill on its own books (--busy-threshold 0.5 --worker-capacity PROMPT:
 * a rank with a prefill pending is busy), so a request dispatched starts its prefill at once
 * and the waiting happens in the router's queue, where the order is decided. Prompts are
 * unique text (no cache hits), one token per byte on the engine, so the run is prefill-bound.
 *
 *   bun bench/fairness/run.ts [--seconds 30] [--quiet-rps 1.5] [--noisy-factor 10] [--prompt 8000]
 *        [--max-tokens 16] [--ttft-slo-ms 1000] [--warmup 3] [--seed 1] [--runs solo,fifo,fair,abusive] [--json FILE]
 *
 * A bench, never a timed test: figures depend on the machine (bench/README.md).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256Hex } from "../../src/protect/key-set.ts";
import { startMain, stopAll, until, type Proc } from "../../test/support/processes.ts";
import { mulberry32, type Rng } from "../../test/support/prng.ts";
import { percentile } from "../replay/stats.ts";
import { textTable } from "../support/text-table.ts";

const ENGINES = 4;
const TENANTS = ["quiet", "noisy", "abuser"] as const;
type TenantName = (typeof TENANTS)[number];
type RunName = "solo" | "fifo" | "fair" | "abusive";
/** The abuser's side payload: far past its prompt limit, in a field other than the routed prompt. */
const ABUSE_CHARS = 120_000;

interface Options {
  seconds: number;
  quietRps: number;
  noisyFactor: number;
  prompt: number;
  maxTokens: number;
  sloMs: number;
  warmup: number;
  seed: number;
  runs: RunName[];
  json?: string;
}

function parseArgs(argv: readonly string[]): Options {
  const o: Options = {
    seconds: 30,
    quietRps: 1.5,
    noisyFactor: 10,
    prompt: 8000,
    maxTokens: 16,
    sloMs: 1000,
    warmup: 3,
    seed: 1,
    runs: ["solo", "fifo", "fair"],
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i]!, argv[i + 1]];
    if (value === undefined) throw new Error(`${flag}: needs a value`);
    switch (flag) {
      case "--seconds":
        o.seconds = Number(value);
        break;
      case "--quiet-rps":
        o.quietRps = Number(value);
        break;
      case "--noisy-factor":
        o.noisyFactor = Number(value);
        break;
      case "--prompt":
        o.prompt = Number(value);
        break;
      case "--max-tokens":
        o.maxTokens = Number(value);
        break;
      case "--ttft-slo-ms":
        o.sloMs = Number(value);
        break;
      case "--warmup":
        o.warmup = Number(value);
        break;
      case "--seed":
        o.seed = Number(value);
        break;
      case "--runs":
        o.runs = value.split(",") as RunName[];
        break;
      case "--json":
        o.json = value;
        break;
      default:
        throw new Error(`unknown flag ${flag}`);
    }
  }
  return o;
}

interface Sample {
  readonly tenant: TenantName;
  /** Seconds after the run began. */
  readonly at: number;
  readonly status: number;
  /** Client-side time to the first token event (ms); NaN when none came. */
  readonly ttftMs: number;
  readonly completed: boolean;
  /** Seconds after the run began when the answer ended. */
  readonly doneAt: number;
  /** Why it failed (status or error), when it did. */
  readonly failure?: string;
}

/** A unique prompt of `n` bytes: letters from the run's generator. */
function uniquePrompt(n: number, rng: Rng): string {
  const a = new Uint8Array(n);
  for (let i = 0; i < n; i++) a[i] = 97 + Math.floor(rng() * 26);
  return new TextDecoder().decode(a);
}

/** One streamed completion; TTFT at the first SSE data event. */
async function request(
  url: string,
  key: string,
  prompt: string,
  maxTokens: number,
): Promise<{ status: number; ttftMs: number; completed: boolean; failure?: string }> {
  const t0 = performance.now();
  let ttftMs = NaN;
  try {
    const res = await fetch(`${url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ prompt, max_tokens: maxTokens, stream: true }),
    });
    if (res.status !== 200 || res.body === null) {
      const text = await res.text();
      return {
        status: res.status,
        ttftMs,
        completed: false,
        failure: `HTTP ${res.status} ${text.slice(0, 120)}`,
      };
    }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let seen = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (Number.isNaN(ttftMs)) {
        seen += dec.decode(value, { stream: true });
        if (seen.includes("data:")) ttftMs = performance.now() - t0;
      }
    }
    return {
      status: 200,
      ttftMs,
      completed: !Number.isNaN(ttftMs),
      failure: Number.isNaN(ttftMs) ? "no token" : undefined,
    };
  } catch (e) {
    return {
      status: -1,
      ttftMs,
      completed: false,
      failure: String((e as Error).message ?? e).slice(0, 120),
    };
  }
}

/** The abuser's request shapes, one per path that once slipped past a limit; `i` picks one in turn. */
function abusiveBody(i: number, prompt: string): { path: string; body: Record<string, unknown> } {
  const big = "x".repeat(ABUSE_CHARS);
  const chat = (extra: Record<string, unknown>, content: unknown = prompt) => ({
    messages: [{ role: "user", content, ...extra }],
    max_tokens: 1,
  });
  const shapes: { path: string; body: Record<string, unknown> }[] = [
    { path: "/v1/completions", body: { prompt: [prompt, big], max_tokens: 1 } },
    { path: "/v1/embeddings", body: { input: [prompt, big] } },
    {
      path: "/v1/chat/completions",
      body: {
        ...chat({}),
        tools: [{ type: "function", function: { name: "f", description: big, parameters: {} } }],
      },
    },
    { path: "/v1/chat/completions", body: { ...chat({}), documents: [{ text: big }] } },
    { path: "/v1/chat/completions", body: chat({ name: big }) },
    {
      path: "/v1/chat/completions",
      body: chat({}, [
        { type: "text", text: prompt },
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      ]),
    },
    { path: "/v1/responses", body: { input: prompt, instructions: big, max_output_tokens: 1 } },
    { path: "/v1/rerank", body: { query: prompt, documents: [big] } },
    { path: "/score", body: { text_1: prompt, text_2: [big] } },
    { path: "/v1/completions", body: { prompt, max_tokens: 200_000, stream: true } },
    { path: "/v1/completions", body: { prompt, stream: true } },
  ];
  return shapes[i % shapes.length]!;
}

/** One abusive request, read to its end; TTFT is not measured (its service is not the point). */
async function abusiveRequest(
  url: string,
  key: string,
  i: number,
  prompt: string,
  giveUpMs: number,
): Promise<{ status: number; ttftMs: number; completed: boolean; failure?: string }> {
  const { path, body } = abusiveBody(i, prompt);
  try {
    // A router that lets an answer outrun its booking streams for minutes: the abuser hangs up.
    const signal = AbortSignal.timeout(giveUpMs);
    const res = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
      signal,
    });
    const text = await res.text();
    return {
      status: res.status,
      ttftMs: NaN,
      completed: res.status === 200,
      failure:
        res.status === 200
          ? undefined
          : `${path} HTTP ${res.status}${res.status === 429 ? "" : ` ${text.slice(0, 80)}`}`,
    };
  } catch (e) {
    return {
      status: -1,
      ttftMs: NaN,
      completed: false,
      failure: String((e as Error).message ?? e).slice(0, 120),
    };
  }
}

/** Open-loop Poisson arrivals for each tenant for `seconds`; resolves when every request is answered. */
async function drive(
  url: string,
  keys: Record<TenantName, string>,
  rates: Partial<Record<TenantName, number>>,
  o: Options,
  run: number,
): Promise<Sample[]> {
  const samples: Sample[] = [];
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  await Promise.all(
    Object.entries(rates).map(async ([tenant, rps], ti) => {
      // The same arrival times in every run (the runs differ only by the router), but new
      // prompts: the engines are reused, and a prompt sent in an earlier run would be a cache hit.
      const arrivals = mulberry32(o.seed * 1000 + ti);
      const text = mulberry32(o.seed * 1000 + 100 * (run + 1) + ti);
      let t = 0;
      let n = 0;
      for (;;) {
        t += -Math.log(1 - arrivals()) / rps!;
        if (t >= o.seconds) break;
        const wait = start + t * 1000 - performance.now();
        if (wait > 0) await Bun.sleep(wait);
        const at = (performance.now() - start) / 1000;
        const prompt = uniquePrompt(o.prompt, text);
        const sent =
          tenant === "abuser"
            ? abusiveRequest(url, keys.abuser, n++, prompt, (o.seconds - at + 5) * 1000)
            : request(url, keys[tenant as TenantName], prompt, o.maxTokens);
        inflight.push(
          sent.then(
            (r) =>
              void samples.push({
                tenant: tenant as TenantName,
                at,
                doneAt: (performance.now() - start) / 1000,
                ...r,
              }),
          ),
        );
      }
    }),
  );
  await Promise.all(inflight);
  return samples;
}

interface TenantRow {
  /** Answers completed per second between the warm-up and the end of arrivals: what the engines delivered while saturated. */
  readonly served: number;
  readonly sent: number;
  readonly completed: number;
  readonly errors: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly goodput: number;
}

function summarize(
  samples: readonly Sample[],
  tenant: TenantName,
  o: Options,
): TenantRow | undefined {
  const s = samples.filter((x) => x.tenant === tenant && x.at >= o.warmup);
  if (s.length === 0) return undefined;
  const ttft = s
    .filter((x) => x.completed)
    .map((x) => x.ttftMs)
    .sort((a, b) => a - b);
  const good = s.filter((x) => x.completed && x.ttftMs <= o.sloMs).length;
  return {
    served:
      samples.filter(
        (x) => x.tenant === tenant && x.completed && x.doneAt >= o.warmup && x.doneAt < o.seconds,
      ).length /
      (o.seconds - o.warmup),
    sent: s.length,
    completed: ttft.length,
    errors: s.length - ttft.length,
    p50: percentile(ttft, 50),
    p90: percentile(ttft, 90),
    p99: percentile(ttft, 99),
    goodput: good / (o.seconds - o.warmup),
  };
}

async function runOnce(
  name: RunName,
  run: number,
  engines: readonly Proc[],
  keysPath: string,
  keys: Record<TenantName, string>,
  o: Options,
): Promise<Sample[]> {
  const router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--api-keys",
    keysPath,
    "--busy-threshold",
    "0.5",
    "--worker-capacity",
    String(o.prompt),
    "--max-queue",
    "100000",
    "--queue-timeout",
    "300",
    "--engine-metrics-interval",
    "0",
    `--fair-admission=${name === "fair"}`,
    ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
  ]);
  const url = String(router.info.url);
  try {
    await until(
      async () =>
        ((await (await fetch(`${url}/health`)).json()) as { healthy_workers: number })
          .healthy_workers === ENGINES,
      "engines healthy",
      20_000,
    );
    const rates: Partial<Record<TenantName, number>> =
      name === "solo"
        ? { quiet: o.quietRps }
        : name === "abusive"
          ? { quiet: o.quietRps, abuser: o.quietRps * o.noisyFactor }
          : { quiet: o.quietRps, noisy: o.quietRps * o.noisyFactor };
    return await drive(url, keys, rates, o, run);
  } finally {
    await stopAll([router]);
  }
}

const fmt = (x: number | undefined, digits = 0) =>
  x === undefined || Number.isNaN(x) ? "-" : x.toFixed(digits);

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const dir = mkdtempSync(join(tmpdir(), "switchyard-fairness-"));
  const keys: Record<TenantName, string> = {
    quiet: `sk-quiet-${crypto.randomUUID()}`,
    noisy: `sk-noisy-${crypto.randomUUID()}`,
    abuser: `sk-abuser-${crypto.randomUUID()}`,
  };
  const keysPath = join(dir, "keys.json");
  // The abuser's limits: one quiet request's worth per second.
  const abuserLimits = {
    prompt_tokens_per_minute: 60 * o.prompt,
    output_tokens_per_minute: 60 * o.maxTokens,
  };
  const entry = async (t: TenantName) => ({
    tenant: t,
    key_sha256: await sha256Hex(keys[t]),
    ...(t === "abuser" ? { limits: abuserLimits } : {}),
  });
  writeFileSync(keysPath, JSON.stringify({ keys: await Promise.all(TENANTS.map(entry)) }));
  const engines = await Promise.all(
    Array.from({ length: ENGINES }, (_, i) =>
      startMain([
        "mocker",
        "--port",
        "0",
        "--block-size",
        "16",
        "--max-concurrency",
        "64",
        "--seed",
        String(i + 1),
      ]),
    ),
  );
  const results: Record<string, Partial<Record<TenantName, TenantRow>>> = {};
  try {
    for (const [i, name] of o.runs.entries()) {
      const samples = await runOnce(name, i, engines, keysPath, keys, o);
      // A run asked for twice keeps both (run-to-run spread on a shared machine).
      const label =
        o.runs.indexOf(name) === i
          ? name
          : `${name}#${o.runs.slice(0, i + 1).filter((r) => r === name).length}`;
      results[label] = Object.fromEntries(
        TENANTS.map((t) => [t, summarize(samples, t, o)]).filter(([, r]) => r !== undefined),
      );
      const failures = new Map<string, number>();
      for (const x of samples)
        if (x.failure !== undefined) failures.set(x.failure, (failures.get(x.failure) ?? 0) + 1);
      console.error(
        `${label}: ${samples.length} requests${failures.size > 0 ? `; failed: ${[...failures].map(([f, n]) => `${n} x ${f}`).join("; ")}` : ""}`,
      );
    }
  } finally {
    await stopAll(engines);
    rmSync(dir, { recursive: true, force: true });
  }
  const rows: string[][] = [];
  for (const [name, r] of Object.entries(results)) {
    for (const t of TENANTS) {
      const x = r[t];
      if (x)
        rows.push([
          `${name} ${t}`,
          String(x.sent),
          String(x.errors),
          fmt(x.served, 2),
          fmt(x.p50),
          fmt(x.p90),
          fmt(x.p99),
          fmt(x.goodput, 2),
        ]);
    }
    const total = (f: (x: TenantRow) => number) =>
      TENANTS.reduce((a, t) => a + (r[t] ? f(r[t]!) : 0), 0);
    rows.push([
      `${name} total`,
      "",
      "",
      fmt(
        total((x) => x.served),
        2,
      ),
      "",
      "",
      "",
      fmt(
        total((x) => x.goodput),
        2,
      ),
    ]);
  }
  console.log(
    `${ENGINES} engines, prompt ${o.prompt} tokens, max_tokens ${o.maxTokens}, quiet ${o.quietRps}/s, noisy ${o.quietRps * o.noisyFactor}/s, ${o.seconds} s (first ${o.warmup} s not counted), TTFT SLO ${o.sloMs} ms`,
  );
  console.log(
    textTable(
      ["run tenant", "sent", "failed", "served/s", "TTFT p50", "p90", "p99 ms", "goodput/s"],
      rows,
    ),
  );
  const solo = results.solo?.quiet?.p90;
  for (const name of Object.keys(results).filter((n) => n !== "solo" && !n.startsWith("solo#"))) {
    const q = results[name]?.quiet?.p90;
    if (solo !== undefined && q !== undefined)
      console.log(
        `${name}: quiet TTFT p90 ${fmt(q)} ms = ${(q / solo).toFixed(2)} x solo (${fmt(solo)} ms)`,
      );
  }
  if (o.json) writeFileSync(o.json, JSON.stringify({ options: o, results }, null, 2));
}

await main();
