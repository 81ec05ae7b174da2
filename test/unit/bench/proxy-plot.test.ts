import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { proxySvg, type ProxyReport } from "../../../bench/proxy/plot.ts";
import { bars, dots, groupsOf, targetLabels, targetLines } from "./svg-read.ts";

/** bench:proxy's JSON, cut to what the plot reads: direct has no proxy CPU, as the bench writes it. */
const report = (): ProxyReport => ({
  date: "2026-11-26T19:56:00.000Z",
  options: {
    runs: 2,
    seconds: 5,
    connections: 64,
    maxTokens: 16,
    promptTokens: 4096,
    decodeMs: 2,
    stream: false,
    routerArgs: [],
  },
  summary: [
    { target: "direct", rps: 1100 },
    { target: "router", rps: 800, proxyCpuUs: 150 },
    { target: "nginx", rps: 1000, proxyCpuUs: 50 },
    { target: "floor", rps: 950, proxyCpuUs: 60 },
  ],
  runs: {
    direct: [{ rps: 1000 }, { rps: 1200 }],
    router: [
      { rps: 790, proxyCpuUs: 140 },
      { rps: 810, proxyCpuUs: 160 },
    ],
    nginx: [
      { rps: 990, proxyCpuUs: 49 },
      { rps: 1010, proxyCpuUs: 51 },
    ],
    floor: [
      { rps: 940, proxyCpuUs: 59 },
      { rps: 960, proxyCpuUs: 61 },
    ],
    baseline: [],
  },
});

const PLOT = join(import.meta.dir, "../../../bench/proxy/plot.ts");

describe("bench:proxy plot", () => {
  test("a req/s bar for every target that ran, a CPU bar for every proxy, a dot per run", () => {
    const svg = proxySvg(report());
    expect(groupsOf(svg)).toEqual(["direct", "router", "nginx", "floor"]);
    // Two panels: direct has req/s but no proxy CPU, so it has one bar; the proxies two each.
    expect(bars(svg).filter((b) => b.series === "direct").length).toBe(1);
    for (const t of ["router", "nginx", "floor"])
      expect(bars(svg).filter((b) => b.series === t).length).toBe(2);
    expect(dots(svg).length).toBe(2 + 3 * 2 * 2);
    expect(svg).not.toContain("NaN");
  });

  test("the issue's targets as lines at 0.9 × nginx's req/s and 2 × its CPU, labelled with the router's verdict", () => {
    const svg = proxySvg(report());
    expect(targetLines(svg).length).toBe(2);
    expect(targetLabels(svg)).toEqual([
      "router ≥ 0.9 × nginx (900/s): 0.80, missed",
      "router ≤ 2 × nginx (100 µs): 3.00, missed",
    ]);
  });

  test("the title says the mode: whole or streamed, decode pacing, prompt size", () => {
    const svg = proxySvg(report());
    expect(svg).toContain("whole answers, decode 2 ms/token, 4096-token prompt, 16 tokens out");
    expect(svg).toContain("median of 2 × 5 s");
    const streamed = proxySvg({
      ...report(),
      options: { ...report().options, stream: true, decodeMs: 0 },
    });
    expect(streamed).toContain("streamed, decode 0 ms (tokens at once)");
  });

  test("without nginx there is no target line; a figure written as null (NaN) is skipped", () => {
    const r = report();
    const svg = proxySvg({
      ...r,
      summary: [
        { target: "direct", rps: 1100 },
        { target: "router", rps: null, proxyCpuUs: 150 },
      ],
      runs: { direct: r.runs!.direct!, router: [{ rps: null, proxyCpuUs: 150 }] },
    });
    expect(targetLines(svg).length).toBe(0);
    expect(bars(svg).map((b) => `${b.group}:${b.series}`)).toEqual([
      "direct:direct",
      "router:router",
    ]);
    expect(svg).not.toContain("NaN");
  });

  test("nginx without a router: the line is drawn, its label has no verdict", () => {
    const svg = proxySvg({
      ...report(),
      summary: report().summary.filter((s) => s.target !== "router"),
    });
    expect(targetLabels(svg)).toEqual([
      "router ≥ 0.9 × nginx (900/s)",
      "router ≤ 2 × nginx (100 µs)",
    ]);
  });

  test("a baseline is named by its ref", () => {
    const r = report();
    const svg = proxySvg({
      ...r,
      options: { ...r.options, baselineRef: "main~3" },
      summary: [...r.summary, { target: "baseline", rps: 700, proxyCpuUs: 170 }],
    });
    expect(groupsOf(svg)).toContain("baseline\nmain~3");
    expect(svg).toContain("baseline = router at main~3");
  });

  test("a file that is not bench:proxy's JSON is refused, naming what is missing", () => {
    expect(() => proxySvg({} as ProxyReport)).toThrow(/no summary or options/);
  });

  test("plot.ts re-plots a saved JSON from the command line", () => {
    const dir = mkdtempSync(join(tmpdir(), "proxy-plot-"));
    try {
      writeFileSync(join(dir, "run.json"), JSON.stringify(report()));
      const p = Bun.spawnSync(
        [process.execPath, PLOT, join(dir, "run.json"), join(dir, "run.svg")],
        { stderr: "pipe" },
      );
      expect(p.exitCode).toBe(0);
      expect(bars(readFileSync(join(dir, "run.svg"), "utf8")).length).toBe(7);
      const usage = Bun.spawnSync([process.execPath, PLOT], { stderr: "pipe" });
      expect(usage.exitCode).toBe(2);
      expect(usage.stderr.toString()).toContain("usage: bun bench/proxy/plot.ts RUN.json OUT.svg");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
