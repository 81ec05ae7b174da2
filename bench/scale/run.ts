/**
 * `bun run bench:scale` — how the routing core's cost grows with the fleet and the index:
 * for workers × index entries (default 8, 64, 256, 1024 × 10 k, 1 M, 10 M), one process per
 * cell (cell.ts: route p50/p99 at 8k and 128k tokens, event apply rate, memory per entry,
 * registration of one worker and of 1,000 and memory after removing them); then, with
 * `--routers`, routers 1 → 8 sharing Redis in front of 64 simulated engines (routers.ts: each
 * router's CPU for events and for load sync per second). Prints tables with the targets,
 * writes JSON and an SVG of the curves.
 *
 *   bun run bench:scale [--workers 8,64,256,1024] [--entries 10000,1000000,10000000]
 *                       [--register 1000] [--routers 1,2,4,8] [--json FILE] [--svg FILE]
 *   bun bench/scale/run.ts --plot FILE.json --svg FILE.svg [--before OLD.json]   (plots a saved run;
 *                                     with --before, an earlier run's route p50s dashed beside it)
 *
 * Targets (issue 24): route 8k p99 ≤ 25 µs native and ≤ 100 µs portable at 64 workers × 1 M
 * entries, ≤ 100 µs native at 1,024 × 10 M; 128k ≤ 250 µs native; event apply ≥ 5 M blocks/s
 * on one core at every size; ≤ 100 B per (block, worker) entry at every size; memory back
 * within 10 % of its start after the workers leave; registering 1,000 workers ≤ 1 s, linear.
 */
import { parseArgs } from "node:util";
import { readFileSync, writeFileSync } from "node:fs";
import { chartsSvg, type Panel } from "./plot.ts";

const { values } = parseArgs({
  options: {
    workers: { type: "string", default: "8,64,256,1024" },
    entries: { type: "string", default: "10000,1000000,10000000" },
    register: { type: "string", default: "1000" },
    routers: { type: "string" },
    json: { type: "string" },
    svg: { type: "string" },
    plot: { type: "string" },
    before: { type: "string" },
  },
});

export interface Cell {
  workers: number;
  entries: number;
  nodes: number;
  native_hasher: boolean;
  build_s: number;
  apply: {
    build_blocks_per_s: number;
    at_size: {
      events_blocks_per_s: number;
      typed_blocks_per_s: number;
      removed_blocks_per_s: number;
    };
  };
  memory: { bytes_per_entry: number; index_typed_arrays_per_entry: number; heap_mb: number };
  route_us: Record<string, { p50: number; p99: number; cpu_p50?: number; cpu_p99?: number }>;
  registration: {
    one_ms: number;
    many: number;
    many_ms: number;
    per_100_ms: number[];
    remove_ms: number;
    memory_mb: { before: number; registered: number; removed: number };
    memory_after_removal_ratio: number;
  };
}
export interface RoutersRow {
  routers: number;
  engines: number;
  per_router_cpu_ms_per_s: { idle: number; events: number; load_sync: number; requests: number };
  events_per_s: number;
  requests_per_s: number;
}
interface Results {
  load_average: number[];
  cells: Cell[];
  routers?: RoutersRow[];
}

async function runCell(
  workers: number,
  entries: number,
): Promise<Cell | { workers: number; entries: number; error: string }> {
  const p = Bun.spawn(
    [
      process.execPath,
      `${import.meta.dir}/cell.ts`,
      "--workers",
      String(workers),
      "--entries",
      String(entries),
      "--register",
      values.register!,
    ],
    {
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const [out, err, code] = await Promise.all([
    new Response(p.stdout).text(),
    new Response(p.stderr).text(),
    p.exited,
  ]);
  if (code !== 0)
    return {
      workers,
      entries,
      error: `exit ${code}: ${err.trim().split("\n").slice(-3).join(" | ")}`,
    };
  return JSON.parse(out.trim().split("\n").at(-1)!) as Cell;
}

function loadAverage(): number[] {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).map(Number);
  } catch {
    return [];
  }
}

const k = (n: number) => (n >= 1e6 ? `${n / 1e6} M` : n >= 1e3 ? `${n / 1e3} k` : String(n));

function report(r: Results): void {
  console.log(`load average at the start: ${r.load_average.join(" ")}`);
  const many = r.cells[0]?.registration.many ?? 1000;
  console.log(
    `\n| workers | entries | route 8k native p50/p99 µs: CPU (wall) | 8k portable | 128k native | 128k portable | apply M blocks/s (build / events / typed) | B per entry (heap / index arrays) | register 1 / ${many} ms (per 100: min-max) | memory after removal |`,
  );
  console.log("|---:|---:|---|---|---|---|---|---|---|---|");
  for (const c of r.cells) {
    if ("error" in c) {
      console.log(
        `| ${c.workers} | ${k(c.entries)} | failed: ${(c as unknown as { error: string }).error} |`,
      );
      continue;
    }
    const rt = (key: string) => {
      const x = c.route_us[key];
      if (!x) return "—";
      return x.cpu_p99 !== undefined
        ? `${x.cpu_p50} / ${x.cpu_p99} (wall ${x.p50} / ${x.p99})`
        : `${x.p50} / ${x.p99}`;
    };
    const a = c.apply;
    const s = c.registration.per_100_ms;
    // Fewer than 100 registered (--register N < 100): no slice, so no min-max to print.
    const spread = s.length > 0 ? ` (${Math.min(...s)}-${Math.max(...s)})` : "";
    console.log(
      `| ${c.workers} | ${k(c.entries)} | ${rt("8k_native")} | ${rt("8k_portable")} | ${rt("128k_native")} | ${rt("128k_portable")} | ` +
        `${(a.build_blocks_per_s / 1e6).toFixed(2)} / ${(a.at_size.events_blocks_per_s / 1e6).toFixed(2)} / ${(a.at_size.typed_blocks_per_s / 1e6).toFixed(2)} | ` +
        `${c.memory.bytes_per_entry} / ${c.memory.index_typed_arrays_per_entry} | ${c.registration.one_ms} / ${c.registration.many_ms}${spread} | ` +
        `${c.registration.memory_mb.before} → ${c.registration.memory_mb.registered} → ${c.registration.memory_mb.removed} MB (×${c.registration.memory_after_removal_ratio}) |`,
    );
  }
  if (r.routers) {
    console.log(
      "\n| routers | engines | requests/s (all) | events/s into each router | CPU ms/s per router: idle | events | load sync | requests |",
    );
    console.log("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (const x of r.routers) {
      const c = x.per_router_cpu_ms_per_s;
      console.log(
        `| ${x.routers} | ${x.engines} | ${x.requests_per_s} | ${x.events_per_s} | ${c.idle} | ${c.events} | ${c.load_sync} | ${c.requests} |`,
      );
    }
  }
}

/** The size a cell was asked for (the index stops a little past it): the nearest power of ten. */
const sizeOf = (c: { entries: number }) => 10 ** Math.round(Math.log10(c.entries));

export function scaleSvg(r: Results, before?: Results): string {
  const cells = r.cells.filter((c) => !("error" in c));
  const byEntries = [...new Set(cells.map(sizeOf))].sort((a, b) => a - b);
  const line = (name: string, f: (c: Cell) => number | undefined, dashed = false) =>
    byEntries.map((e) => ({
      name: `${k(e)} entries${name}`,
      dashed,
      points: cells
        .filter((c) => sizeOf(c) === e)
        .map((c) => [c.workers, f(c) ?? NaN] as const)
        .sort((a, b) => a[0] - b[0]),
    }));
  const panels: Panel[] = [
    {
      title: "route 8k tokens, native: CPU p99",
      xLabel: "workers",
      yLabel: "µs",
      xLog: true,
      yLog: true,
      series: line("", (c) => c.route_us["8k_native"]?.cpu_p99 ?? c.route_us["8k_native"]?.p99),
      targets: [
        { y: 25, label: "25 µs (64 × 1 M)" },
        { y: 100, label: "100 µs (1,024 × 10 M)" },
      ],
    },
    {
      title: "route 8k tokens, portable: CPU p99",
      xLabel: "workers",
      yLabel: "µs",
      xLog: true,
      yLog: true,
      series: line("", (c) => c.route_us["8k_portable"]?.cpu_p99 ?? c.route_us["8k_portable"]?.p99),
      targets: [{ y: 100, label: "100 µs (64 × 1 M)" }],
    },
    {
      title: "route 128k tokens, native: CPU p99",
      xLabel: "workers",
      yLabel: "µs",
      xLog: true,
      yLog: true,
      series: line("", (c) => c.route_us["128k_native"]?.cpu_p99 ?? c.route_us["128k_native"]?.p99),
      targets: [{ y: 250, label: "250 µs" }],
    },
    {
      title: "route 8k native: CPU p50 (solid), wall p99 (dashed)",
      xLabel: "workers",
      yLabel: "µs",
      xLog: true,
      yLog: true,
      series: [
        ...line(
          " CPU p50",
          (c) => c.route_us["8k_native"]?.cpu_p50 ?? c.route_us["8k_native"]?.p50,
        ),
        ...line(" wall p99", (c) => c.route_us["8k_native"]?.p99, true),
      ],
    },
    {
      title: "event apply (Stored, typed arrays)",
      xLabel: "workers",
      yLabel: "blocks/s",
      xLog: true,
      yLog: true,
      series: line("", (c) => c.apply.at_size.typed_blocks_per_s),
      targets: [{ y: 5e6, label: "5 M/s" }],
    },
    {
      title: "event apply (Stored, event objects)",
      xLabel: "workers",
      yLabel: "blocks/s",
      xLog: true,
      yLog: true,
      series: line("", (c) => c.apply.at_size.events_blocks_per_s),
      targets: [{ y: 5e6, label: "5 M/s" }],
    },
    {
      title: "memory per (block, worker) entry",
      xLabel: "workers",
      yLabel: "bytes (heap + typed arrays)",
      xLog: true,
      yLog: true,
      series: line("", (c) => c.memory.bytes_per_entry),
      targets: [{ y: 100, label: "100 B" }],
    },
    {
      title: `registering ${cells[0]?.registration.many ?? 1000} more workers`,
      xLabel: "workers already registered",
      yLabel: "ms",
      xLog: true,
      yLog: true,
      series: line("", (c) => c.registration.many_ms),
      targets: [{ y: 1000, label: "1 s" }],
    },
    {
      title: "memory after they leave ÷ before",
      xLabel: "workers already registered",
      yLabel: "ratio",
      xLog: true,
      yLog: true,
      series: line("", (c) => c.registration.memory_after_removal_ratio),
      targets: [{ y: 1.1, label: "1.1" }],
    },
  ];
  if (before !== undefined) {
    const old = before.cells.filter((c) => !("error" in c));
    for (const [key, label] of [
      ["8k_native", "8k native"],
      ["128k_native", "128k native"],
    ] as const) {
      panels.push({
        title: `route ${label} p50 (wall): before (dashed) and now`,
        xLabel: "workers",
        yLabel: "µs",
        xLog: true,
        yLog: true,
        series: byEntries.flatMap((e, color) => [
          {
            name: `${k(e)} now`,
            color,
            points: cells
              .filter((c) => sizeOf(c) === e)
              .map((c) => [c.workers, c.route_us[key]?.p50 ?? NaN] as const),
          },
          {
            name: `${k(e)} before`,
            color,
            dashed: true,
            points: old
              .filter((c) => sizeOf(c) === e)
              .map((c) => [c.workers, c.route_us[key]?.p50 ?? NaN] as const),
          },
        ]),
      });
    }
  }
  // Linearity: cumulative registration time per 100 workers, one line per cell of the largest index.
  const big = cells.filter((c) => sizeOf(c) === byEntries.at(-1));
  panels.push({
    title: `registration, ${k(byEntries.at(-1) ?? 0)} entries: cumulative`,
    xLabel: "workers registered (after the first)",
    yLabel: "ms",
    series: big.map((c) => ({
      name: `${c.workers} already`,
      points: c.registration.per_100_ms.map(
        (_, i, a) => [(i + 1) * 100, a.slice(0, i + 1).reduce((x, y) => x + y, 0)] as const,
      ),
    })),
  });
  if (r.routers && r.routers.length > 0) {
    const pts = (f: (x: RoutersRow) => number) => r.routers!.map((x) => [x.routers, f(x)] as const);
    panels.push({
      title: "routers sharing Redis, 64 engines: CPU per router",
      xLabel: "routers",
      yLabel: "ms of CPU per second",
      xLog: true,
      series: [
        { name: "events", points: pts((x) => x.per_router_cpu_ms_per_s.events) },
        { name: "load sync", points: pts((x) => x.per_router_cpu_ms_per_s.load_sync) },
        { name: "requests", points: pts((x) => x.per_router_cpu_ms_per_s.requests) },
        { name: "idle", points: pts((x) => x.per_router_cpu_ms_per_s.idle), dashed: true },
      ],
    });
  }
  return chartsSvg(`bench:scale (load average ${r.load_average.join(" ")})`, panels, 3);
}

if (import.meta.main) {
  let results: Results;
  if (values.plot) {
    results = JSON.parse(readFileSync(values.plot, "utf8")) as Results;
  } else {
    results = { load_average: loadAverage(), cells: [] };
    for (const e of values.entries!.split(",").map(Number)) {
      for (const w of values.workers!.split(",").map(Number)) {
        process.stderr.write(`cell ${w} workers × ${k(e)} entries… `);
        const c = await runCell(w, e);
        results.cells.push(c as Cell);
        process.stderr.write(`${"error" in c ? c.error : "done"}\n`);
      }
    }
    if (values.routers) {
      const { runRouters } = await import("./routers.ts");
      results.routers = await runRouters(values.routers.split(",").map(Number));
    }
  }
  report(results);
  if (values.json && !values.plot) writeFileSync(values.json, JSON.stringify(results, null, 2));
  const before = values.before
    ? (JSON.parse(readFileSync(values.before, "utf8")) as Results)
    : undefined;
  if (values.svg) writeFileSync(values.svg, scaleSvg(results, before));
}
