/**
 * Bigint-safe JSON parsing (src/core/json.ts) against the regular-expression rewrite it
 * replaced (issue 12) and plain JSON.parse, on the inputs that froze the router:
 *
 *   bun bench/json/run.ts [--json FILE] [--budget-ms 300]
 *
 * Cases: a 100 KB admin body of KV events with u64 hashes (the common case), a 100 KB
 * body of unterminated strings, a 60k-digit integer, a 60k-digit number followed by ".5",
 * and a 1 MB event body. Each case reports the median of timed runs in µs; the old
 * rewrite gets one run per case (it takes seconds on the hostile ones).
 */
import { parseArgs } from "node:util";
import { writeFileSync } from "node:fs";
import { parseJsonBigintSafe } from "../../src/core/json.ts";
import { median } from "../replay/stats.ts";
import { textTable } from "../support/text-table.ts";

const { values } = parseArgs({
  options: { json: { type: "string" }, "budget-ms": { type: "string" } },
});
const budgetMs = Number(values["budget-ms"] ?? 300);

/** The parser before issue 12, kept here as the reference it is measured against. */
const OLD_PATTERN = /("(?:[^"\\]|\\.)*")|(-?\d{16,})(?![\d.eE])/g;
function oldParse(text: string): unknown {
  const quoted = text.replace(
    OLD_PATTERN,
    (_m, str: string | undefined, num: string | undefined) =>
      str !== undefined ? str : `"${num}"`,
  );
  return JSON.parse(quoted);
}

function eventsBody(bytes: number): string {
  const parts: string[] = [];
  let size = 2;
  let h = 0x9e3779b97f4a7c15n;
  for (let id = 0; size < bytes; id++) {
    const blocks: string[] = [];
    for (let b = 0; b < 8; b++) {
      h = (h * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
      blocks.push(`{"block_hash":${h},"tokens_hash":${h ^ 0x5555n}}`);
    }
    const e = `{"worker_id":7,"event":{"event_id":${id},"dp_rank":0,"data":{"stored":{"parent_hash":null,"blocks":[${blocks.join(",")}]}}}}`;
    parts.push(e);
    size += e.length + 1;
  }
  return `[${parts.join(",")}]`;
}

const cases: [string, string][] = [
  ["100 KB events body (u64 hashes)", eventsBody(100_000)],
  ["100 KB of unterminated strings", '{"h":12345678901234567890,"a":' + '"\\"'.repeat(33_000)],
  ["100 KB number then .5", `{"n":${"7".repeat(100_000)}.5}`],
  ["60k-digit integer", `{"n":${"7".repeat(60_000)}}`],
  ["60k-digit number then .5", `{"n":${"7".repeat(60_000)}.5}`],
  ["1 MB events body", eventsBody(1_000_000)],
];

function timeOnce(fn: () => unknown): number {
  const t0 = performance.now();
  try {
    fn();
  } catch {
    // invalid inputs throw: the time to find that out is what counts
  }
  return (performance.now() - t0) * 1000;
}

function timeMedian(fn: () => unknown): number {
  const runs: number[] = [];
  const end = performance.now() + budgetMs;
  while (performance.now() < end || runs.length < 5) runs.push(timeOnce(fn));
  return median(runs);
}

const rows: Record<string, unknown>[] = [];
for (const [name, text] of cases) {
  const now = timeMedian(() => parseJsonBigintSafe(text));
  const plain = timeMedian(() => JSON.parse(text));
  const before = timeOnce(() => oldParse(text));
  rows.push({
    case: name,
    bytes: text.length,
    before_us: Math.round(before),
    after_median_us: Math.round(now),
    json_parse_median_us: Math.round(plain),
  });
}
console.log(
  textTable(
    ["case", "bytes", "before µs (1 run)", "after µs (median)", "JSON.parse µs (median)"],
    rows.map((r) => Object.values(r).map(String)),
  ),
);
if (values.json) writeFileSync(values.json, JSON.stringify(rows, null, 2));
