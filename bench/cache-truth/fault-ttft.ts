/**
 * TTFT during a fault: four simulated engines, one of them publishing its KV events under another
 * hash seed (`--fault-hash-seed`: the router's index never matches what it caches), and the same
 * short trace (prefix groups: a shared 2048-token prefix + a 128-token suffix of its own, 16 tokens
 * out, token-id prompts so they route exactly) replayed closed-loop against fresh engines and a
 * fresh router for each configuration:
 *   kv, no fault | kv + cache check, fault | approx, fault | kv without the check, fault.
 * Per configuration: TTFT p50/p90 over all requests, p90 of the requests the healthy engines
 * served, and each engine's share. The check's target: with the fault, TTFT p90 no worse than
 * approximate routing's, and the healthy engines' p90 as without the fault.
 *
 * On a shared machine the load drifts more between configurations than they differ: `--rounds R`
 * runs them all R times, the order turned each round, and reports each figure's median over the
 * rounds (and each round's p90).
 *
 * bun bench/cache-truth/fault-ttft.ts [--rounds 3] [--requests 300] [--concurrency 12] [--groups 16] [--seed 1]
 */
import { freePort, startMain, stopAll, type Proc } from "../../test/support/processes.ts";

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1]! : d;
};
const ROUNDS = Number(arg("--rounds", "3"));
const REQUESTS = Number(arg("--requests", "300"));
const CONCURRENCY = Number(arg("--concurrency", "12"));
const GROUPS = Number(arg("--groups", "16"));
const SEED = Number(arg("--seed", "1"));
const BS = 16;
const PREFIX = 2048;
const SUFFIX = 128;

/** A small fixed-seed PRNG (mulberry32): the same trace for every configuration. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function trace(): number[][] {
  const r = rng(SEED);
  const prefixes = Array.from({ length: GROUPS }, (_, g) =>
    Array.from({ length: PREFIX }, (_, i) => 1000 + ((g * 7919 + i * 31) % 30000)),
  );
  return Array.from({ length: REQUESTS }, (_, k) => {
    const g = Math.floor(r() * GROUPS);
    return [
      ...prefixes[g]!,
      ...Array.from({ length: SUFFIX }, (_, i) => 40000 + ((k * 131 + i) % 20000)),
    ];
  });
}

interface Config {
  readonly name: string;
  readonly fault: boolean;
  readonly router: readonly string[];
}

const CONFIGS: Config[] = [
  { name: "kv, no fault", fault: false, router: [] },
  { name: "kv + check, fault", fault: true, router: [] },
  { name: "approx, fault", fault: true, router: ["--policy", "approx"] },
  { name: "kv, check off, fault", fault: true, router: ["--cache-check=false"] },
];

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

interface Figures {
  readonly p50: number;
  readonly p90: number;
  readonly healthyP90: number;
  /** Requests per engine. */
  readonly served: number[];
}

async function runConfig(c: Config, prompts: number[][]): Promise<Figures> {
  const procs: Proc[] = [];
  try {
    const port = freePort();
    const url = `http://127.0.0.1:${port}`;
    const engines = await Promise.all(
      [0, 1, 2, 3].map((i) =>
        startMain([
          "mocker",
          "--port",
          "0",
          "--router-url",
          url,
          "--event-batch-ms",
          "2",
          "--block-size",
          String(BS),
          "--seed",
          String(i + 1),
          ...(c.fault && i === 0 ? ["--fault-hash-seed", "99"] : []),
        ]),
      ),
    );
    procs.push(...engines);
    const router = await startMain([
      "serve",
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      "--block-size",
      String(BS),
      "--log-level",
      "warn",
      ...c.router,
      ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
    ]);
    procs.push(router);
    // Registered (and, with the check, canaried) before the trace starts.
    for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
      const { workers } = (await (await fetch(`${url}/v1/workers`)).json()) as {
        workers: { healthy: boolean; cache_truth?: { canary: unknown }[] }[];
      };
      if (
        workers.length === 4 &&
        workers.every(
          (w) =>
            w.healthy &&
            (c.router.length > 0 || (w.cache_truth ?? []).some((r) => r.canary !== null)),
        )
      )
        break;
      await Bun.sleep(50);
    }
    const workerOf = new Map<string, number>();
    const { workers } = (await (await fetch(`${url}/v1/workers`)).json()) as {
      workers: { id: string; url: string }[];
    };
    for (const w of workers)
      workerOf.set(
        w.id,
        engines.findIndex((e) => String(e.info.url) === w.url),
      );
    const ttft: { ms: number; engine: number }[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < prompts.length) {
          const prompt = prompts[next++]!;
          const t0 = performance.now();
          const res = await fetch(`${url}/v1/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ prompt, max_tokens: 16, stream: true }),
          });
          const reader = res.body!.getReader();
          let first: number | undefined;
          for (;;) {
            const r = await reader.read();
            if (r.done) break;
            first ??= performance.now() - t0;
          }
          if (res.status !== 200 || first === undefined) throw new Error(`HTTP ${res.status}`);
          ttft.push({
            ms: first,
            engine: workerOf.get(res.headers.get("x-switchyard-worker") ?? "") ?? -1,
          });
        }
      }),
    );
    const all = ttft.map((t) => t.ms);
    const healthy = ttft.filter((t) => t.engine !== 0).map((t) => t.ms);
    return {
      p50: pct(all, 50),
      p90: pct(all, 90),
      healthyP90: pct(healthy, 90),
      served: [0, 1, 2, 3].map((e) => ttft.filter((t) => t.engine === e).length),
    };
  } finally {
    await stopAll(procs);
  }
}

const prompts = trace();
const results = CONFIGS.map(() => [] as Figures[]);
for (let round = 0; round < ROUNDS; round++) {
  const order = CONFIGS.map((_, i) => i);
  if (round % 2 === 1) order.reverse();
  for (const i of order) results[i]!.push(await runConfig(CONFIGS[i]!, prompts));
}
const med = (xs: number[]) => pct(xs, 50);
console.log(
  `${REQUESTS} requests, ${GROUPS} prefix groups (${PREFIX} + ${SUFFIX} tokens, 16 out), ${CONCURRENCY} at a time, engine 0 faulty (--fault-hash-seed 99) where it says fault; medians of ${ROUNDS} rounds`,
);
console.log(
  "| configuration | TTFT p50 ms | TTFT p90 ms (each round) | p90 on engines 1-3 | share per engine 0 1 2 3 |\n|---|---:|---:|---:|---|",
);
CONFIGS.forEach((c, i) => {
  const r = results[i]!;
  const total = r.reduce((n, f) => n + f.served.reduce((a, b) => a + b, 0), 0);
  const share = [0, 1, 2, 3]
    .map((e) => `${Math.round((100 * r.reduce((n, f) => n + f.served[e]!, 0)) / total)}%`)
    .join(" ");
  console.log(
    `| ${c.name} | ${med(r.map((f) => f.p50)).toFixed(0)} | ${med(r.map((f) => f.p90)).toFixed(0)} (${r.map((f) => f.p90.toFixed(0)).join(", ")}) | ${med(r.map((f) => f.healthyP90)).toFixed(0)} | ${share} |`,
  );
});
