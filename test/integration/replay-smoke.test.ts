/**
 * CI's short replay: the first 300 requests of the synthetic Mooncake trace against a fresh
 * cluster of real processes (4 simulated engines + the router), under kv and round-robin.
 * It proves the bench runs end to end and that KV-aware routing finds more cached prefix
 * than round-robin on the same arrivals and capacity. The full tables are bench/replay/findings.md's.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

setDefaultTimeout(180_000);

const ROOT = join(import.meta.dir, "..", "..");
// The first 300 requests of Mooncake's synthetic_trace.jsonl, kept in the repo so CI's fresh clone has them.
const TRACE = join(ROOT, "bench", "replay", "fixtures", "synthetic-300.jsonl");
const dir = mkdtempSync(join(tmpdir(), "replay-smoke-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs bench/replay/run.ts with `args` to its end; throws with its output if it exits non-zero. */
async function runReplay(args: readonly string[]): Promise<{ out: string; err: string }> {
  const proc = Bun.spawn({
    cmd: [process.execPath, join(ROOT, "bench", "replay", "run.ts"), ...args],
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`run.ts ${args.join(" ")} exited ${code}\n${out}\n${err}`);
  return { out, err };
}

interface PolicyJson {
  hit_rate: number;
  requests: number;
  errors: number;
  ttft_ms: { p50: number };
  load_max_over_mean: number;
}

describe("bench:replay smoke", () => {
  test("300 synthetic-trace requests under kv and round-robin: all complete, kv hits more cache", async () => {
    const json = join(dir, "smoke.json");
    const { out } = await runReplay([
      "--trace",
      TRACE,
      "--requests",
      "300",
      "--speedup",
      "20",
      "--engines",
      "4",
      "--policies",
      "kv,round-robin",
      "--prefill-us-per-token",
      "50",
      "--quiet",
      "--json",
      json,
    ]);
    const r = JSON.parse(readFileSync(json, "utf8")) as {
      ideal_hit_rate: number;
      policies: Record<string, PolicyJson>;
    };
    const kv = r.policies["kv"]!;
    const rr = r.policies["round-robin"]!;
    for (const p of [kv, rr]) {
      expect(p.requests).toBe(300);
      expect(p.errors).toBe(0);
      expect(p.ttft_ms.p50).toBeGreaterThan(0);
    }
    expect(r.ideal_hit_rate).toBeGreaterThan(0);
    expect(kv.hit_rate).toBeGreaterThan(rr.hit_rate);
    expect(kv.hit_rate).toBeLessThanOrEqual(r.ideal_hit_rate + 1e-9);
    expect(out).toContain("round-robin");
  });

  test("--suite smoke: every peer policy and kv with 2 routers over Redis and an engine restart complete; work read from the engines", async () => {
    const json = join(dir, "suite.json");
    const { out } = await runReplay(["--suite", "smoke", "--quiet", "--json", json]);
    interface Cell {
      routers: number;
      restarts: number;
      report: {
        requests: number;
        policies: Record<
          string,
          PolicyJson & {
            work_max_over_mean: number;
            utilisation: number;
            router_cpu_us_per_request: number;
            idle_engines: number;
          }
        >;
      };
    }
    const cells = JSON.parse(readFileSync(json, "utf8")) as Cell[];
    expect(cells.map((c) => [c.routers, c.restarts])).toEqual([
      [1, 0],
      [2, 1],
    ]);
    expect(Object.keys(cells[0]!.report.policies)).toEqual([
      "kv",
      "dynamo",
      "sglang",
      "llm-d",
      "prodstack-prefix",
      "prodstack-session",
    ]);
    for (const c of cells) {
      for (const [name, p] of Object.entries(c.report.policies)) {
        expect({ name, requests: p.requests, errors: p.errors }).toEqual({
          name,
          requests: c.report.requests,
          errors: 0,
        });
        // Work is the engines' own count: the busiest engine computed at least the mean.
        expect(p.work_max_over_mean).toBeGreaterThanOrEqual(1);
        expect(p.utilisation).toBeGreaterThan(0);
        expect(p.router_cpu_us_per_request).toBeGreaterThan(0);
      }
    }
    expect(cells[0]!.report.policies["kv"]!.hit_rate).toBeGreaterThan(0);
    expect(out).toContain("targets missed");
  });

  test("--suite passes --router-arg and --engine-arg on: JSON access lines from the router, the engines' request log", async () => {
    const engineLog = join(dir, "engines.jsonl");
    const { out, err } = await runReplay([
      "--suite",
      "smoke",
      "--suite-cells",
      "1",
      "--suite-policies",
      "kv",
      "--quiet",
      "--verbose",
      "--router-arg=--log-format",
      "--router-arg=json",
      "--engine-arg=--request-log",
      `--engine-arg=${engineLog}`,
      "--json",
      join(dir, "suite-args.json"),
    ]);
    const requests = (
      JSON.parse(readFileSync(join(dir, "suite-args.json"), "utf8")) as {
        report: { requests: number };
      }[]
    )[0]!.report.requests;
    // The router's access lines (--verbose hands its stderr on; --quiet keeps the progress bar off those lines), in the format the flag asked for.
    const access = `${out}\n${err}`
      .split("\n")
      .filter((l) => l.startsWith("{") && l.includes('"predicted_ttft_ms"'));
    for (const l of access) expect(typeof (JSON.parse(l) as { msg: unknown }).msg).toBe("string");
    expect(access.length).toBeGreaterThanOrEqual(requests);
    // Every engine appended to the one log the flag named: one line per request at its first token.
    const prefills = readFileSync(engineLog, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { worker: string });
    expect(prefills.length).toBeGreaterThanOrEqual(requests);
    expect(new Set(prefills.map((p) => p.worker)).size).toBeGreaterThan(1);
  });
});
