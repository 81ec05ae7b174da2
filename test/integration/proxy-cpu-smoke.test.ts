/**
 * CI's proxy smoke: a real router in front of one simulated engine (zero simulated time), a
 * few thousand streamed completions through it, and one printed line with the router's CPU
 * per request (from /proc), so a regression on the hot path shows in CI's output. It asserts
 * that every request was proxied and that the figure was measured, never a timing: CI
 * machines differ, and bench:proxy (bench/proxy/README.md) is where the figure is judged beside nginx.
 * Both processes are stopped by PID.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { startMain, stopAll, type Proc } from "../support/processes.ts";

setDefaultTimeout(120_000);

const REQUESTS = 3000;
const CONCURRENCY = 16;
let engine: Proc | undefined;
let router: Proc | undefined;

beforeAll(async () => {
  engine = await startMain([
    "mocker",
    "--port",
    "0",
    "--prefill-us-per-token",
    "0",
    "--prefill-overhead-ms",
    "0",
    "--decode-ms-per-step",
    "0",
    "--max-concurrency",
    "1024",
  ]);
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--worker",
    String(engine.info.url),
    "--log-level",
    "warn",
  ]);
});

afterAll(async () => {
  await stopAll([router, engine]);
});

/** CPU seconds (user + system) of a process, from /proc/PID/stat (clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

describe("proxy smoke", () => {
  test(`${REQUESTS} streamed completions through the router: all proxied, CPU per request printed`, async () => {
    const url = `${String(router!.info.url)}/v1/completions`;
    // The bench's request: a 1024-character prompt (byte tokens without a tokenizer), 16 tokens out.
    const body = JSON.stringify({
      model: "switchyard-sim",
      prompt: "The router hashes every block of this prompt. ".repeat(22).slice(0, 1024),
      max_tokens: 16,
      stream: true,
    });
    const once = async (): Promise<boolean> => {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      const text = await res.text();
      return (
        res.status === 200 &&
        res.headers.get("x-switchyard-worker") !== null &&
        text.includes("[DONE]")
      );
    };
    for (let i = 0; i < 200; i++) await once(); // warm-up: the JIT, the connection pool
    const c0 = cpuSeconds(router!.pid);
    const t0 = performance.now();
    let ok = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < REQUESTS) {
          next++;
          if (await once()) ok++;
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const cpuUs = ((cpuSeconds(router!.pid) - c0) / REQUESTS) * 1e6;
    console.log(
      `[bench smoke] proxy: router CPU ${cpuUs.toFixed(0)} µs per request (${REQUESTS} streamed completions, ${CONCURRENCY} at a time, ${(REQUESTS / seconds).toFixed(0)} req/s on this machine; judged beside nginx in bench:proxy, not here)`,
    );
    expect(ok).toBe(REQUESTS);
    expect(Number.isFinite(cpuUs) && cpuUs > 0).toBe(true);
  });
});
