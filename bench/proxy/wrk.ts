/**
 * One load run with wrk (POST bodies through a Lua script; the script's done() prints the
 * summary as one JSON line, so no text table is parsed).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const WRK = "/usr/bin/wrk";

export interface WrkResult {
  readonly requests: number;
  readonly seconds: number;
  readonly rps: number;
  /** Socket errors (connect, read, write, timeout). */
  readonly errors: number;
  readonly non2xx: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
}

export interface WrkOptions {
  readonly url: string;
  readonly body: string;
  readonly connections: number;
  readonly threads: number;
  readonly seconds: number;
}

function luaScript(body: string): string {
  if (body.includes("]==]")) throw new Error("body cannot be embedded in the Lua script");
  return `
wrk.method = "POST"
wrk.body = [==[${body}]==]
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('\\nWRK_JSON {"requests":%d,"duration_us":%d,"errors":%d,"non2xx":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99)))
end
`;
}

export async function runWrk(o: WrkOptions): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-wrk-"));
  try {
    const script = join(dir, "post.lua");
    writeFileSync(script, luaScript(o.body));
    const proc = Bun.spawn({
      cmd: [
        WRK,
        "-t",
        String(o.threads),
        "-c",
        String(o.connections),
        "-d",
        `${o.seconds}s`,
        "--timeout",
        "10s",
        "-s",
        script,
        o.url,
      ],
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
    ]);
    await proc.exited;
    const line = out.split("\n").find((l) => l.startsWith("WRK_JSON "));
    if (!line) throw new Error(`wrk printed no summary (exit ${proc.exitCode}):\n${out}\n${err}`);
    const j = JSON.parse(line.slice("WRK_JSON ".length)) as Record<string, number>;
    const seconds = j.duration_us! / 1e6;
    return {
      requests: j.requests!,
      seconds,
      rps: j.requests! / seconds,
      errors: j.errors!,
      non2xx: j.non2xx!,
      p50Ms: j.p50_us! / 1000,
      p90Ms: j.p90_us! / 1000,
      p99Ms: j.p99_us! / 1000,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
