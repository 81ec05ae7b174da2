/**
 * The engines' own prefill speed (issue 25): the router scrapes each engine's vLLM prefill
 * histograms (the simulated engine exports `vllm:request_prefill_time_seconds` and
 * `vllm:request_prefill_kv_computed_tokens` as vLLM V1 does) and its TTFT predictor starts from
 * them before it has seen a first token of its own. Real processes: two simulated engines, one
 * three times slower to prefill, that have served traffic the router never saw (it was not in
 * front of them), and one router that has just started.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(60_000);

const FAST_US = 40;
const SLOW_US = 3 * FAST_US;
let fast: Proc | undefined;
let slow: Proc | undefined;
let router: Proc | undefined;

interface Speed {
  dp_rank: number;
  ms_per_token: number;
  latency_ms: number;
  factor: number;
  source: string;
}
interface WorkerView {
  id: string;
  url: string;
  prefill_speed: Speed[];
}

const body = (prompt: string) => JSON.stringify({ prompt, max_tokens: 1 });
/** A prompt of `n` bytes (the simulated engine's tokens) no other request shares. */
const unique = (tag: string, n: number) => `${tag} `.padEnd(n, "abcdefghij");

beforeAll(async () => {
  [fast, slow] = await Promise.all(
    [FAST_US, SLOW_US].map((us, i) =>
      startMain([
        "mocker",
        "--port",
        "0",
        "--prefill-us-per-token",
        String(us),
        "--prefill-overhead-ms",
        "0",
        "--seed",
        String(i + 1),
      ]),
    ),
  );
  // Traffic before the router: two 4,000-token prompts each, enough for a reading (MIN_PREFILL_TOKENS).
  for (const [name, e] of [
    ["fast", fast!],
    ["slow", slow!],
  ] as const) {
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${e.info.url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: body(unique(`${name}-${i}`, 4000)),
      });
      expect(res.status).toBe(200);
      await res.text();
    }
  }
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--worker",
    String(slow!.info.url),
    "--worker",
    String(fast!.info.url),
    "--engine-metrics-interval",
    "0.1",
  ]);
});

afterAll(async () => {
  await stopAll([router, fast, slow]);
});

async function workers(): Promise<WorkerView[]> {
  return (
    (await (await fetch(`${router!.info.url}/v1/workers`)).json()) as { workers: WorkerView[] }
  ).workers;
}

describe("the engines' own prefill speed", () => {
  test("before any first token, the predictor runs at the engines' reported speed and knows the slow one is about 3 x slower", async () => {
    const ws = await until(async () => {
      const v = await workers();
      return v.length === 2 && v.every((w) => w.prefill_speed[0]?.source === "engine")
        ? v
        : undefined;
    }, "both engines' reported speed");
    const f = ws.find((w) => w.url === fast!.info.url)!.prefill_speed[0]!;
    const s = ws.find((w) => w.url === slow!.info.url)!.prefill_speed[0]!;
    // 40 µs a token on the fast engine: timers fire up to a millisecond early, and late on a busy machine.
    expect(f.ms_per_token).toBeGreaterThan(0.9 * (FAST_US / 1000));
    expect(f.ms_per_token).toBeLessThan(2 * (FAST_US / 1000));
    expect(f).toMatchObject({ factor: 1, latency_ms: 0 });
    expect(s.factor).toBeGreaterThan(2);
    expect(s.factor).toBeLessThanOrEqual(4);
    expect(s.ms_per_token).toBeCloseTo(f.ms_per_token * s.factor, 9);
  });

  test("the kv policy sends fresh prompts to the fast engine while both are idle", async () => {
    const fastId = (await workers()).find((w) => w.url === fast!.info.url)!.id;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${router!.info.url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: body(unique(`routed-${i}`, 2000)),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-switchyard-worker")).toBe(fastId);
      await res.text();
    }
  });
});
