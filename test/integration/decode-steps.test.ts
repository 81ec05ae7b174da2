/**
 * The router learns each engine's decode step from the gaps between the output tokens it streams
 * (books/step-times.ts, fed by the request lease's end). Real processes: two simulated engines,
 * one whose decode steps take four times as long, and a router in front of both.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(60_000);

const FAST_MS = 4;
const SLOW_MS = 4 * FAST_MS;
let fast: Proc | undefined;
let slow: Proc | undefined;
let router: Proc | undefined;

interface Speed {
  dp_rank: number;
  decode_step_ms: number;
  decode_weight: number;
}
interface WorkerView {
  url: string;
  prefill_speed: Speed[];
}

beforeAll(async () => {
  [fast, slow] = await Promise.all(
    [FAST_MS, SLOW_MS].map((ms, i) =>
      startMain([
        "mocker",
        "--port",
        "0",
        "--decode-ms-per-step",
        String(ms),
        "--decode-batch-factor",
        "0",
        "--seed",
        String(i + 1),
      ]),
    ),
  );
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--worker",
    String(fast!.info.url),
    "--worker",
    String(slow!.info.url),
    "--policy",
    "round-robin",
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

describe("decode steps learned from the streamed answers", () => {
  test("before any streamed answer every step reads 0", async () => {
    for (const w of await workers()) expect(w.prefill_speed[0]!.decode_step_ms).toBe(0);
  });

  test("after streamed answers through the router, the slow engine's step reads at least twice the fast one's", async () => {
    // Round-robin: each engine gets every other request, one at a time (a batch of one).
    for (let i = 0; i < 16; i++) {
      const res = await fetch(`${router!.info.url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          prompt: `decode steps ${i} `.padEnd(200, "xyz"),
          max_tokens: 12,
          stream: true,
        }),
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    const ws = await until(async () => {
      const v = await workers();
      return v.every((w) => w.prefill_speed[0]!.decode_step_ms > 0) ? v : undefined;
    }, "both engines' decode steps");
    const f = ws.find((w) => w.url === fast!.info.url)!.prefill_speed[0]!;
    const s = ws.find((w) => w.url === slow!.info.url)!.prefill_speed[0]!;
    // Timers fire late on a busy machine, so only the order and a lower bound on the ratio are checked.
    expect(s.decode_step_ms).toBeGreaterThanOrEqual(2 * f.decode_step_ms);
    expect(s.decode_step_ms).toBeGreaterThanOrEqual(0.8 * SLOW_MS);
  });
});
