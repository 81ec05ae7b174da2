/**
 * `bun bench/proxy/profile-summary.ts FILE.cpuprofile [--top 40]`: where a Bun CPU profile's
 * samples fall, by COUNT of samples (not by the time between them: on a shared machine a process
 * that waited for a core gets its wait charged to whatever sample follows, which made Bun's own
 * markdown summary blame start-up code for seconds). Self samples per function, inclusive samples
 * per function, and self samples per source file; idle samples ("(idle)", "(program)") apart.
 */
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
}

export function summarize(path: string, top = 40): string {
  const p = JSON.parse(readFileSync(path, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (n: Node) => {
    const file = n.callFrame.url.replace(/^.*\/(src|bench|node_modules)\//, "$1/") || "[native]";
    return `${n.callFrame.functionName || "(anonymous)"} ${file}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ""}`;
  };
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const files = new Map<string, number>();
  let idle = 0;
  for (const id of p.samples) {
    const n = byId.get(id)!;
    const fn = n.callFrame.functionName;
    if (fn === "(idle)" || fn === "(program)" || fn === "(root)") {
      idle++;
      continue;
    }
    self.set(name(n), (self.get(name(n)) ?? 0) + 1);
    const file = n.callFrame.url.replace(/^.*\/(src|bench|node_modules)\//, "$1/") || "[native]";
    files.set(file, (files.get(file) ?? 0) + 1);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = name(byId.get(cur)!);
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + 1);
    }
  }
  const busy = p.samples.length - idle;
  const pct = (x: number) => `${((100 * x) / busy).toFixed(1).padStart(5)}%`;
  const rows = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => `${pct(v)}  ${k}`);
  return [
    `${busy} busy samples of ${p.samples.length} (${idle} idle/program)`,
    "",
    "self, by function:",
    ...rows(self),
    "",
    "inclusive, by function:",
    ...rows(incl).filter((l) => !l.includes("(root)")),
    "",
    "self, by file:",
    ...rows(files),
  ].join("\n");
}

if (import.meta.main) {
  const [file] = process.argv.slice(2);
  if (!file) throw new Error("usage: bun bench/proxy/profile-summary.ts FILE.cpuprofile [--top N]");
  const i = process.argv.indexOf("--top");
  console.log(summarize(file, i > 0 ? Number(process.argv[i + 1]) : 40));
}
