/**
 * `bun bench/replay/suite-merge.ts BASE.json UPDATE.json OUT.json`: a suite run (BASE) with some
 * policies' rows taken from another run of the same cells (UPDATE, e.g. `--suite-policies kv`).
 * Each of UPDATE's cells must be one of BASE's (same workload, routers, restarts and load); its
 * policies replace BASE's rows of the same name, and every other row stays as BASE measured it.
 *
 * Why: a change that moves only our policy's decisions (a tie-break in its picker) leaves the
 * peers' rows where they were, and rerunning them costs nine tenths of a suite run (55 min for
 * the 14 target cells here). The merged file says so: each replaced row's cell lists it under
 * `report.rerun_policies`, so a table built from it can say which rows are from when.
 */
import { readFileSync } from "node:fs";
import { writeSuiteJson, type SuiteCell } from "./suite.ts";

const cellId = (c: SuiteCell) =>
  `${c.workload} | ${c.routers} router(s) | ${c.restarts} restart(s) | arrival ×${c.arrival_scale}`;

export function mergeSuiteRuns(
  base: readonly SuiteCell[],
  update: readonly SuiteCell[],
): SuiteCell[] {
  const byId = new Map(update.map((c) => [cellId(c), c] as const));
  const known = new Set(base.map(cellId));
  const stray = [...byId.keys()].filter((id) => !known.has(id));
  if (stray.length > 0)
    throw new Error(`the update has cells the base does not: ${stray.join("; ")}`);
  return base.map((c) => {
    const u = byId.get(cellId(c));
    if (u === undefined) return c;
    const names = Object.keys(u.report.policies);
    const rerun = [...new Set([...(c.report.rerun_policies ?? []), ...names])];
    return {
      ...c,
      report: {
        ...c.report,
        policies: { ...c.report.policies, ...u.report.policies },
        rerun_policies: rerun,
      },
    };
  });
}

if (import.meta.main) {
  const [basePath, updatePath, outPath] = process.argv.slice(2);
  if (outPath === undefined)
    throw new Error("usage: bun bench/replay/suite-merge.ts BASE.json UPDATE.json OUT.json");
  const read = (p: string) => JSON.parse(readFileSync(p, "utf8")) as SuiteCell[];
  writeSuiteJson(outPath, mergeSuiteRuns(read(basePath!), read(updatePath!)));
}
