/** The time-based kv's bench pieces: the causal pooled reference, the pooled reference with the cell's cache, and the targets' judge. */
import { describe, expect, test } from "bun:test";
import { pooledCausal, pooledCellCache, ttftFloor } from "../../../bench/replay/ttft-floor.ts";
import { judgeTtftCell, ttftTallyTable } from "../../../bench/replay/ttft-targets.ts";
import { suiteWorkloads } from "../../../bench/replay/suite.ts";
import type { TraceRequest } from "../../../bench/replay/trace.ts";

const req = (
  index: number,
  timestamp: number,
  hashIds: number[],
  inputLength: number,
): TraceRequest => ({ index, timestamp, inputLength, outputLength: 4, hashIds });
const o = { engines: 2, speedup: 1, arrivalScale: 1, prefillUsPerToken: 200, prefillOverheadMs: 1 };

describe("the causal pooled reference (ttft-floor.ts)", () => {
  test("a sibling cannot reuse blocks still being computed: it waits for them or computes them again, whichever is sooner", () => {
    // Two 3-block prompts sharing two blocks, at the same instant, two lanes.
    const trace = [req(0, 0, [1, 2, 3], 1536), req(1, 0, [1, 2, 4], 1536)];
    // pooled lets the second reuse blocks 1 and 2 at once: 1 + 0.2 × 512 ms.
    expect(+ttftFloor(trace, o).pooled.p99.toFixed(1)).toBe(308.2);
    expect(pooledCausal(trace, o).map((x) => +x.toFixed(1))).toEqual([308.2, 308.2]);
    // One lane: waiting for the first, then only block 4, beats computing all three again.
    expect(pooledCausal(trace, { ...o, engines: 1 }).map((x) => +x.toFixed(1))).toEqual([
      308.2, 411.6,
    ]);
    // Later, once the first is done, the shared blocks are ready for anyone.
    expect(
      pooledCausal([req(0, 0, [1, 2, 3], 1536), req(1, 400, [1, 2, 4], 1536)], o).map(
        (x) => +x.toFixed(1),
      ),
    ).toEqual([308.2, 103.4]);
  });
});

describe("the pooled reference with the cell's cache (ttft-floor.ts)", () => {
  // Three 2-block prompts a second apart (no queue): the third repeats the first.
  const trace = [req(0, 0, [1, 2], 1024), req(1, 1000, [3, 4], 1024), req(2, 2000, [1, 2], 1024)];

  test("a cache smaller than the working set evicts what pooled keeps forever", () => {
    // Two engines × one block: the second prompt evicts the first, which the third computes again.
    expect(pooledCellCache(trace, { ...o, kvBlocks: 1 }).map((x) => +x.toFixed(1))).toEqual([
      205.8, 205.8, 205.8,
    ]);
    // Two engines × two blocks hold both prompts: the third is a hit, as in pooled.
    expect(pooledCellCache(trace, { ...o, kvBlocks: 2 }).map((x) => +x.toFixed(1))).toEqual([
      205.8, 205.8, 1,
    ]);
    expect(+ttftFloor(trace, o).pooled.p90.toFixed(1)).toBe(205.8);
    expect(ttftFloor(trace, o).pooled.p99).toBeLessThan(
      ttftFloor(trace, { ...o, kvBlocks: 1 }).pooledCellCache!.p99 + 1e-9,
    );
  });

  test("given only with the cell's capacity; the queue is pooled's", () => {
    expect(ttftFloor(trace, o).pooledCellCache).toBeUndefined();
    // One lane, all three at once, ample cache: the queue alone (205.8, then +205.8, then +1).
    const burst = trace.map((r) => ({ ...r, timestamp: 0 }));
    expect(
      pooledCellCache(burst, { ...o, engines: 1, kvBlocks: 4 }).map((x) => +x.toFixed(1)),
    ).toEqual([205.8, 411.6, 412.6]);
  });
});

describe("the time-based kv's targets (ttft-targets.ts)", () => {
  const n = 60;
  const w = suiteWorkloads(n).find((x) => x.name === "gen-rag, half")!;
  const res = (p90: number, p99: number, extra: Record<string, unknown> = {}) =>
    ({ ttft_ms: { p50: p90, p90, p99 }, hit_rate: 0.3, errors: 0, ...extra }) as never;
  const cell = (policies: Record<string, unknown>, routers = 1, arrival_scale = 1) =>
    ({
      workload: w.name,
      routers,
      restarts: 0,
      arrival_scale,
      report: {
        requests: n,
        engines: 8,
        speedup: 10,
        kv_blocks_per_engine: 8,
        block_size: 512,
        offline: { oracle: { hit_rate: 0.3 } },
        policies,
      },
    }) as never;

  test("p90 and p99 against every peer, pooled, predictor error; each miss named; kv-blocks beside", () => {
    const v = judgeTtftCell(
      cell({
        kv: res(90, 140, { ttft_prediction_error: { p50: 0.1, p90: 0.35 } }),
        "kv-blocks": res(100, 120),
        dynamo: res(95, 130),
        sglang: res(120, 200),
      }),
    );
    expect(v.applies).toEqual(expect.arrayContaining(["p90", "p99", "pred err"]));
    expect(v.missed).toEqual(expect.arrayContaining(["p99", "pred err"]));
    expect(v.missed).not.toContain("p90");
    expect(v.reference?.name).toBe("pooled");
    // Beside it, not judged: pooled with the cell's 8 engines × 8 blocks, never below pooled.
    expect(v.reference?.cellCacheP90).toBeGreaterThanOrEqual(v.reference!.p90);
    expect(v.kvBlocks?.ttft_ms.p90).toBe(100);
  });

  test("gen-agentic is judged against the causal pooled reference, and has no cell's-cache form (pooled's reuse of blocks in flight)", () => {
    const a = suiteWorkloads(n).find((x) => x.name === "gen-agentic, half")!;
    const v = judgeTtftCell({
      ...(cell({ kv: res(90, 100), sglang: res(95, 130) }) as object),
      workload: a.name,
    } as never);
    expect(v.reference?.name).toBe("pooled causal");
    expect(v.reference?.cellCacheP90).toBeUndefined();
  });

  test("p90, p99 and pooled are judged at load ×1 with 1 or 4 routers only; the tally counts met over judged", () => {
    const two = judgeTtftCell(cell({ kv: res(90, 100), dynamo: res(95, 130) }, 2));
    expect(two.applies).not.toContain("p90");
    const t = ttftTallyTable([
      cell({ kv: res(90, 100), dynamo: res(95, 130) }),
      cell({ kv: res(100, 100), dynamo: res(95, 130) }, 4),
    ]);
    expect(t).toMatch(/p90\s+1 \/ 2/);
    expect(t).toMatch(/p99\s+2 \/ 2/);
  });
});
