/**
 * Issue 45's bench pieces: the fan-out shape, where the prompt tokens came from (engines'
 * counters), the tiers suite's cells and its table's medians.
 */
import { describe, expect, test } from "bun:test";
import { tierHits, type EngineCounters } from "../../../bench/replay/engine-counters.ts";
import { FAN_OUT_DEFAULTS, fanOut, isBranch } from "../../../bench/replay/gen/fan-out.ts";
import type { PolicyResult } from "../../../bench/replay/report.ts";
import { cells, type SuiteCell } from "../../../bench/replay/suite.ts";
import { tierRows } from "../../../bench/replay/tier-cells.ts";

describe("fan-out shape", () => {
  test("each task: a root on a 64-block context, then its branches sharing all of it", () => {
    const t = fanOut(1);
    const p = FAN_OUT_DEFAULTS;
    expect(t.length).toBe(p.tasks * (1 + p.branches));
    const roots = t.filter((r) => !isBranch(r));
    expect(roots.length).toBe(p.tasks);
    for (const root of roots) {
      const ctx = root.hashIds.slice(0, p.prefixBlocks);
      const branches = t.filter((r) => r.sessionId?.startsWith(`${root.sessionId}/branch-`));
      expect(branches.length).toBe(p.branches);
      for (const b of branches) {
        expect(b.hashIds.slice(0, p.prefixBlocks)).toEqual(ctx);
        expect(b.hashIds.length).toBe(p.prefixBlocks + p.branchBlocks);
        // They start after the root, within the spread.
        expect(b.timestamp - root.timestamp).toBeGreaterThanOrEqual(p.forkAfterMs);
        expect(b.timestamp - root.timestamp).toBeLessThanOrEqual(p.forkAfterMs + p.branchSpreadMs);
      }
    }
    // 32,768 tokens of context: 64 blocks of 512.
    expect(p.prefixBlocks * 512).toBe(32_768);
    expect(fanOut(1)).toEqual(t);
    expect(t.every((r, i) => i === 0 || r.timestamp >= t[i - 1]!.timestamp)).toBe(true);
  });
});

describe("tier hits from the engines' counters", () => {
  const c = (promptTokens: number, cachedTokens: number, cpu = 0, disk = 0, pulled = 0) =>
    ({
      requests: 0,
      promptTokens,
      cachedTokens,
      cpuLoadedBlocks: cpu,
      diskLoadedBlocks: disk,
      pulledBlocks: pulled,
    }) satisfies EngineCounters;

  test("GPU = cached minus tier loads; tiers and pulls in blocks of the engine's size", () => {
    const before = [c(1000, 100, 1, 0, 0), c(0, 0)];
    // Engine 1: 10,000 more prompt tokens, 4,000 more cached of which 2 blocks from host, 1 from disk.
    // Engine 2: 10,000 prompt tokens, 3 blocks pulled.
    const after = [c(11_000, 4100, 3, 1, 0), c(10_000, 0, 0, 0, 3)];
    const h = tierHits(before, after, 512);
    expect(h.cpu).toBeCloseTo(1024 / 20_000, 9);
    expect(h.disk).toBeCloseTo(512 / 20_000, 9);
    expect(h.gpu).toBeCloseTo((4000 - 1536) / 20_000, 9);
    expect(h.peer).toBeCloseTo(1536 / 20_000, 9);
  });

  test("no prompt tokens: nothing to share out", () => {
    expect(Number.isNaN(tierHits([c(5, 0)], [c(5, 0)], 512).gpu)).toBe(true);
  });
});

describe("the tiers suite", () => {
  test("every cell has a host tier and the peers' tier policies; the fan-out has 16 engines and measures branches", () => {
    const cs = cells("tiers", 50);
    expect(cs.length).toBe(5);
    for (const x of cs) {
      expect(x.workload.hostTierFactor).toBe(3);
      expect(x.policies).toEqual(expect.arrayContaining(["kv", "dynamo", "llm-d-p2p", "sglang"]));
    }
    const fan = cs.find((x) => x.workload.name.startsWith("fan-out"))!;
    expect(fan.workload.engines).toBe(16);
    expect(fan.policies).toContain("least-loaded");
    expect(fan.workload.measured?.(fan.workload.trace()[0]!)).toBe(false);
    // The quick suite is unchanged by them; the full one ends with them.
    expect(cells("quick", 50).some((x) => x.workload.hostTierFactor !== undefined)).toBe(false);
    expect(
      cells("full", 50)
        .slice(-5)
        .map((x) => x.workload.name),
    ).toEqual(cs.map((x) => x.workload.name));
  });

  test("the table takes each figure's median over runs", () => {
    const row = (p90: number, load: number): PolicyResult =>
      ({
        ttft_ms: { p50: 1, p90, p99: p90 * 2 },
        errors: 0,
        load_avg: load,
        tier_hits: { gpu: 0.5, cpu: 0.1, disk: 0, peer: 0 },
      }) as unknown as PolicyResult;
    const run = (p90: number, load: number): SuiteCell[] => [
      {
        workload: "w",
        routers: 1,
        restarts: 0,
        arrival_scale: 1,
        report: { policies: { kv: row(p90, load) } } as unknown as SuiteCell["report"],
      },
    ];
    const [r] = tierRows([run(100, 3), run(300, 5), run(200, 4)]);
    expect(r!.runs).toBe(3);
    expect(r!.p90).toBe(200);
    expect(r!.p99).toBe(400);
    expect(r!.load).toBe(4);
    expect(r!.cpu).toBeCloseTo(0.1, 9);
  });
});
