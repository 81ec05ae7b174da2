/**
 * Shared parts of the fault chaos tests: the fault engine as a real process
 * (test/support/fault-engine.ts), a load that records every request's outcome and wait, and
 * the router's view (workers, metrics). Every process is stopped by PID.
 */
import { join } from "node:path";
import { ROOT, type Proc } from "../support/processes.ts";
import { complete, metric, workers } from "../integration/multi-router-cluster.ts";

export { metric, workers };

/** Start a fault engine (`mode`: ok | error500 | cut | hang | stall | flood). */
export async function startFaultEngine(mode: string, extra: readonly string[] = []): Promise<Proc> {
  const proc = Bun.spawn({
    cmd: [
      process.execPath,
      join(ROOT, "test/support/fault-engine.ts"),
      "--port",
      "0",
      "--mode",
      mode,
      ...extra,
    ],
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  const dec = new TextDecoder();
  const reader = proc.stdout.getReader();
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done)
      throw new Error(`fault engine exited before printing its address (exit ${proc.exitCode})`);
    out += dec.decode(value);
  }
  reader.releaseLock();
  const info = JSON.parse(out.slice(0, out.indexOf("\n"))) as Record<string, unknown>;
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill("SIGKILL");
    await proc.exited;
  };
  return { proc, pid: proc.pid, info, output: () => out, stop };
}

export async function setFault(engineUrl: string, mode: string): Promise<void> {
  const r = await fetch(`${engineUrl}/fault`, { method: "POST", body: JSON.stringify({ mode }) });
  if (!r.ok) throw new Error(`POST /fault: HTTP ${r.status}`);
}

export interface EngineStats {
  requests: number;
  closed_by_peer: number;
  open: number;
  bytes_sent: number;
}

export async function engineStats(engineUrl: string): Promise<EngineStats> {
  return (await (await fetch(`${engineUrl}/stats`)).json()) as EngineStats;
}

/** How one streamed completion went, as a client sees it. */
export interface Outcome {
  readonly status: number;
  /** The stream ended with [DONE] and no error event. */
  readonly complete: boolean;
  /** Milliseconds from sending to the end of the answer (or the failure). */
  readonly ms: number;
  readonly worker: string;
  readonly text: string;
}

/** One streamed completion, read to its end; a broken stream is an incomplete outcome, not a throw. */
export async function streamed(
  routerUrl: string,
  prompt: string | number[],
  maxTokens = 4,
): Promise<Outcome> {
  const t0 = performance.now();
  let status = 0;
  let worker = "";
  let text = "";
  try {
    const r = await complete(routerUrl, { prompt, max_tokens: maxTokens, stream: true });
    status = r.status;
    worker = r.headers.get("x-switchyard-worker") ?? "";
    text = await r.text();
  } catch (e) {
    text += `\n[client error: ${(e as Error).message}]`;
  }
  const complete_ = status === 200 && text.includes("data: [DONE]") && !text.includes('"error"');
  return { status, complete: complete_, ms: performance.now() - t0, worker, text };
}

/** `total` streamed requests, `concurrency` at a time, prompts distinct per index. */
export async function load(
  routerUrl: string,
  total: number,
  concurrency: number,
  tag: string,
): Promise<Outcome[]> {
  const out: Outcome[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        // The index leads, so no two prompts share a first block (no cache pull to one worker).
        out.push(await streamed(routerUrl, `${i} ${tag}: tell me about routers`));
      }
    }),
  );
  return out;
}

/** Summary of a load for assertions and the report: failed / total, longest wait. */
export function summary(outcomes: readonly Outcome[]): {
  total: number;
  failed: number;
  longestMs: number;
} {
  return {
    total: outcomes.length,
    failed: outcomes.filter((o) => !o.complete).length,
    longestMs: Math.round(Math.max(0, ...outcomes.map((o) => o.ms))),
  };
}

/** Every worker's booked load, summed (0 = every booking was freed). */
export async function bookedLoad(routerUrl: string, adminToken?: string): Promise<number> {
  return (await workers(routerUrl, adminToken)).reduce(
    (s, w) => s + w.active_prefill_tokens + w.active_decode_blocks,
    0,
  );
}
