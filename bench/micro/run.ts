/**
 * `bun run bench:micro`: every micro-benchmark of the routing core in one run —
 * hashing (portable, native), the index, the scheduler, and the whole find-best-match path.
 * Prints each part's table as it goes and one summary; `--json FILE` writes everything.
 * Each part is also runnable alone: `bun bench/micro/<part>.ts`.
 */
import { parseArgs } from "node:util";
import { writeFileSync } from "node:fs";
import { runFindBestMatchBench } from "./find-best-match.ts";
import { runHashBench } from "./hash.ts";
import { runNativeHashBench } from "./hash-native.ts";
import { runIndexBench } from "./index.ts";
import { runSchedulerBench } from "./scheduler.ts";

const { values } = parseArgs({ options: { json: { type: "string" }, only: { type: "string" } } });
const parts: [string, () => Promise<Record<string, unknown>>][] = [
  ["hash", runHashBench],
  ["hash-native", runNativeHashBench],
  ["index", runIndexBench],
  ["scheduler", runSchedulerBench],
  ["find-best-match", runFindBestMatchBench],
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
if (values.json) writeFileSync(values.json, JSON.stringify(results, null, 2));

function loadAverage(): number[] | null {
  try {
    return require("node:fs").readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).map(Number);
  } catch {
    return null;
  }
}
