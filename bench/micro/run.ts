/**
 * `bun run bench:micro`: every micro-benchmark of the routing core in one run —
 * hashing (portable, native), the index, the scheduler, and the whole find-best-match path.
 * Prints each part's table as it goes and one summary; `--json FILE` writes everything, `--svg FILE`
 * draws the figures that have targets beside them (plot.ts; `bun bench/micro/plot.ts RUN.json
 * OUT.svg` re-draws a saved --json).
 * Each part is also runnable alone: `bun bench/micro/<part>.ts`.
 */
import { parseArgs } from "node:util";
import { writeFileSync } from "node:fs";
import { runFindBestMatchBench } from "./find-best-match.ts";
import { runHashBench } from "./hash.ts";
import { runNativeHashBench } from "./hash-native.ts";
import { runIndexBench } from "./index.ts";
import { runSchedulerBench } from "./scheduler.ts";
import { runU64TablesBench } from "./u64-tables.ts";
import { microSvg, type MicroReport } from "./plot.ts";

const { values } = parseArgs({
  options: { json: { type: "string" }, svg: { type: "string" }, only: { type: "string" } },
});
const parts: [string, () => Promise<Record<string, unknown>>][] = [
  ["hash", runHashBench],
  ["hash-native", runNativeHashBench],
  ["index", runIndexBench],
  ["scheduler", runSchedulerBench],
  ["find-best-match", runFindBestMatchBench],
  ["u64-tables", () => runU64TablesBench()],
];
const only = values.only?.split(",");
const results: Record<string, unknown> = { load_average: loadAverage() };
for (const [name, run] of parts) {
  if (only && !only.includes(name)) continue;
  process.stderr.write(`\n== ${name}\n`);
  try {
    results[name] = await run();
  } catch (e) {
    results[name] = { error: String(e) };
    console.error(`${name} failed: ${e}`);
  }
  console.log(`${name}: ${JSON.stringify(results[name])}`);
}
printSummary(results);
if (values.json) writeFileSync(values.json, JSON.stringify(results, null, 2));
if (values.svg) writeFileSync(values.svg, microSvg(results as MicroReport));

/** The figures the issues set targets for, one line each (details in the JSON). */
function printSummary(r: Record<string, any>): void {
  const rows: [string, string, string][] = [];
  const fmt = (x: unknown, d = 1) =>
    typeof x === "number" && Number.isFinite(x) ? x.toFixed(d) : "-";
  const fbm = r["find-best-match"]?.latency_us;
  for (const k of ["8k/native", "8k/portable", "128k/native", "128k/portable"]) {
    const t = fbm?.[k]?.total;
    // Issue 24's targets: 8k ≤ 25 µs native / ≤ 100 µs portable, 128k ≤ 250 µs native (p99).
    const target =
      k === "8k/native"
        ? "p99 ≤ 25 µs"
        : k === "8k/portable"
          ? "p99 ≤ 100 µs"
          : k === "128k/native"
            ? "p99 ≤ 250 µs"
            : "";
    if (t)
      rows.push([
        `hash+match+schedule ${k}, 64 workers, ${r["find-best-match"].indexed_entries} entries`,
        `p50 ${fmt(t.p50)} µs, p99 ${fmt(t.p99)} µs`,
        target,
      ]);
  }
  const idx = r.index;
  if (idx?.apply)
    rows.push([
      "event apply, stored blocks/s (events of 16, 64 workers)",
      `${fmt(idx.apply.blocksPerSec / 1e6, 2)} M/s`,
      "≥ 5 M/s",
    ]);
  if (idx?.memory)
    rows.push([
      "bytes per (block, worker) entry at 1M",
      `${fmt(idx.memory.bytesPerEntryHeap)} B (heap + typed arrays)`,
      "≤ 100 B",
    ]);
  for (const c of (r["hash-native"]?.cases ?? []) as {
    name: string;
    medianUs: number;
    tokensPerSec: number;
  }[]) {
    rows.push([
      `hash ${c.name}`,
      `${fmt(c.medianUs, 2)} µs (${fmt(c.tokensPerSec / 1e6, 0)} Mtok/s)`,
      "",
    ]);
  }
  const w = [0, 1, 2].map((i) => Math.max(...rows.map((x) => x[i].length)));
  console.log("\nsummary");
  for (const x of rows) console.log(`${x[0].padEnd(w[0]!)}  ${x[1].padEnd(w[1]!)}  ${x[2]}`);
}

function loadAverage(): number[] | null {
  try {
    return require("node:fs")
      .readFileSync("/proc/loadavg", "utf8")
      .split(" ")
      .slice(0, 3)
      .map(Number);
  } catch {
    return null;
  }
}
