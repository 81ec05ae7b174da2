/**
 * Huge text prompts against a real router without a tokenizer (text routed approximately, one
 * token per byte) and two real simulated engines, while /livez is polled. Before, every 15 MB
 * prompt was tokenized, hashed, matched and booked on the event loop (the issue's probe: one
 * client sending five in a row kept the loop blocked 10.9 s of 11.8 s; three at once took RSS
 * from 348 to 830 MB). Now a prompt past --max-prompt-chars is refused (413 naming the field)
 * before any of that work, and one at the limit is routed on its first MAX_ROUTED_BLOCKS blocks.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { startEngines, startRouter, urlOf } from "../integration/multi-router-cluster.ts";
import { stopAll, type Proc } from "../support/processes.ts";
import { bookedLoad } from "./faults.ts";

const procs: Proc[] = [];
afterAll(() => stopAll(procs));

/**
 * Polls GET /livez every 5 ms from a process of its own while `work` runs (the test process is
 * busy sending 15 MB bodies, so its own timers would measure itself); resolves the latencies (ms).
 */
async function livezDuring(url: string, work: () => Promise<void>): Promise<number[]> {
  const script = `const ms = []; let run = true; process.on("SIGTERM", () => (run = false));
    while (run) { const t0 = performance.now(); await (await fetch(${JSON.stringify(`${url}/livez`)})).arrayBuffer(); ms.push(performance.now() - t0); await Bun.sleep(5); }
    console.log(JSON.stringify(ms));`;
  const poller = Bun.spawn({
    cmd: [process.execPath, "-e", script],
    stdout: "pipe",
    stderr: "inherit",
  });
  try {
    await Bun.sleep(200); // the poller's first request is out
    await work();
  } finally {
    poller.kill("SIGTERM");
  }
  const out = await new Response(poller.stdout).text();
  await poller.exited;
  return JSON.parse(out) as number[];
}

/** A completion body built before the measurement starts. */
function body(prompt: string): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ prompt, max_tokens: 1 }));
}

async function post(url: string, bytes: Uint8Array): Promise<Response> {
  return fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: bytes,
  });
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

async function rssMb(pid: number): Promise<number> {
  return Number(/VmRSS:\s+(\d+)/.exec(await Bun.file(`/proc/${pid}/status`).text())![1]) / 1024;
}

/** Text of `n` characters that shares no block with other calls' (a distinct tag first). */
function text(tag: string, n: number): string {
  const unit = `${tag} the quick brown fox jumps over the lazy dog `;
  return unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
}

describe("huge text prompts, one client", () => {
  test("five 15 MB prompts in a row: each a 413 naming prompt and the flag; /livez p99 stays low; RSS does not follow", async () => {
    // Engines that prefill fast: a 1 Mi-token prompt (one token per byte) is routine for them.
    const engines = await startEngines(
      2,
      [],
      ["--decode-ms-per-step", "1", "--prefill-us-per-token", "0.01"],
    );
    procs.push(...engines);
    const router = await startRouter(engines, 0, ["--log-level", "error"]);
    procs.push(router);
    const url = urlOf(router);
    const before = await rssMb(router.pid);
    let peak = before;
    const statuses: number[] = [];
    const bodies: string[] = [];
    const huge = Array.from({ length: 5 }, (_, i) => body(text(`p${i}`, 15_000_000)));
    const livez = await livezDuring(url, async () => {
      for (let i = 0; i < 5; i++) {
        const r = await post(url, huge[i]!);
        statuses.push(r.status);
        bodies.push(await r.text());
        peak = Math.max(peak, await rssMb(router.pid));
      }
    });
    const p99 = quantile(livez, 0.99);
    console.log(
      `chaos five 15 MB prompts: statuses ${statuses.join(",")}; /livez p50 ${quantile(livez, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${Math.max(...livez).toFixed(0)} ms over ${livez.length}; RSS ${Math.round(before)} -> ${Math.round(peak)} MB`,
    );
    expect(statuses).toEqual([413, 413, 413, 413, 413]);
    const err = JSON.parse(bodies[0]!) as {
      error: { message: string; param: string; code: string };
    };
    expect(err.error.param).toBe("prompt");
    expect(err.error.message).toContain("--max-prompt-chars");
    expect(p99).toBeLessThan(250); // before: p99 439 ms, the longest wait 4.0 s (the loop blocked 2-2.8 s per prompt)
    expect(Math.max(...livez)).toBeLessThan(1_000);
    expect(peak - before).toBeLessThan(400);

    // At the limit it is served, and the loop stays responsive.
    const limit = Array.from({ length: 3 }, (_, i) => body(text(`q${i}`, 1 << 20)));
    const atLimit = await livezDuring(url, async () => {
      for (let i = 0; i < 3; i++) {
        const r = await post(url, limit[i]!);
        expect(r.status).toBe(200);
        await r.arrayBuffer();
      }
    });
    console.log(
      `chaos three 1 Mi-character prompts: /livez p99 ${quantile(atLimit, 0.99).toFixed(1)} ms, max ${Math.max(...atLimit).toFixed(0)} ms`,
    );
    expect(quantile(atLimit, 0.99)).toBeLessThan(250);
    expect(await bookedLoad(url)).toBe(0);
  }, 60_000);
});
