/**
 * What the cache check costs the router: one zero-time simulated engine, two routers in front of it
 * (the default, and --cache-check=false), the same streamed or whole completions with a token-id
 * prompt (routed exactly, so every answer is checked) sent to each in turn, rounds interleaved;
 * the routers' user + system CPU from /proc per request, and the paired difference per round
 * (on a shared machine the load drifts more between rounds than this cost).
 *
 * `--base DIR`: a third router, check on, from another checkout (DIR/src/main.ts, e.g. a worktree of
 * main), in the same rounds: a change's before and after measured side by side.
 *
 * bun bench/cache-truth/check-cpu.ts [--rounds 5] [--requests 2000] [--concurrency 16] [--stream true|false] [--same true] [--base DIR]
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startCommand, startMain, stopAll, type Proc } from "../../test/support/processes.ts";

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1]! : d;
};
const ROUNDS = Number(arg("--rounds", "5"));
const REQUESTS = Number(arg("--requests", "2000"));
const CONCURRENCY = Number(arg("--concurrency", "16"));
const STREAM = arg("--stream", "true") !== "false";
/** --same true: both routers with the check off (an A/A run: how far two identical routers differ here). */
const SAME = arg("--same", "false") === "true";
const BASE = arg("--base", "");

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const text = "The router hashes every block of this prompt. ".repeat(22).slice(0, 1024);
const body = JSON.stringify({
  prompt: Array.from(text, (c) => c.charCodeAt(0)),
  max_tokens: 16,
  stream: STREAM,
});

async function load(url: string, n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        next++;
        const r = await fetch(`${url}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        await r.text();
        if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
      }
    }),
  );
}

const procs: Proc[] = [];
try {
  const engine = await startMain([
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
    "--kv-blocks",
    "65536",
  ]);
  procs.push(engine);
  const common = [
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--worker",
    String(engine.info.url),
    "--log-level",
    "warn",
  ];
  const on = await startMain(SAME ? [...common, "--cache-check=false"] : common);
  const off = await startMain([...common, "--cache-check=false"]);
  procs.push(on, off);
  const routers = [
    { name: "check on", proc: on, us: [] as number[] },
    { name: "check off", proc: off, us: [] as number[] },
  ];
  if (BASE !== "") {
    const base = await startCommand(
      [process.execPath, join(BASE, "src", "main.ts"), ...common],
      "base router",
    );
    procs.push(base);
    routers.push({ name: `check on (${BASE})`, proc: base, us: [] });
  }
  for (const r of routers) await load(String(r.proc.info.url), 300); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    const order = [
      ...routers.slice(round % routers.length),
      ...routers.slice(0, round % routers.length),
    ];
    for (const r of order) {
      const c0 = cpuSeconds(r.proc.pid);
      await load(String(r.proc.info.url), REQUESTS);
      r.us.push(((cpuSeconds(r.proc.pid) - c0) / REQUESTS) * 1e6);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const r of routers)
    console.log(
      `${r.name}: ${r.us.map((x) => x.toFixed(0)).join(" ")} µs/request (median ${median(r.us).toFixed(0)})`,
    );
  const base = median(routers[1]!.us);
  for (const r of routers.filter((x) => x !== routers[1])) {
    const diffs = r.us.map((x, i) => x - routers[1]!.us[i]!);
    console.log(
      `${r.name} - off, paired per round: ${diffs.map((x) => x.toFixed(1)).join(" ")} µs (median ${median(diffs).toFixed(1)} µs, ${((100 * median(diffs)) / base).toFixed(1)}% of off's median)`,
    );
  }
  console.log(
    `${STREAM ? "streamed" : "whole"} completions, 1024 token ids, 16 out, ${CONCURRENCY} at a time, ${ROUNDS} rounds x ${REQUESTS}`,
  );
} finally {
  await stopAll(procs);
}
