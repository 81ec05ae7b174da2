import { describe, expect, test } from "bun:test";
import type { PolicyResult } from "../../../bench/replay/report.ts";
import { mergeSuiteRuns } from "../../../bench/replay/suite-merge.ts";
import type { SuiteCell } from "../../../bench/replay/suite.ts";

const row = (p90: number) => ({ ttft_ms: { p50: p90 / 2, p90, p99: p90 * 2 } }) as PolicyResult;
const cell = (
  workload: string,
  routers: number,
  policies: Record<string, PolicyResult>,
): SuiteCell => ({
  workload,
  routers,
  restarts: 0,
  arrival_scale: 1,
  report: {
    trace: workload,
    requests: 10,
    engines: 8,
    kv_blocks_per_engine: 4,
    block_size: 512,
    speedup: 10,
    unique_blocks: 40,
    ideal_hit_rate: 0.5,
    offline: {},
    policies,
  },
});

describe("suite-merge: one policy rerun, the peers' rows kept", () => {
  const base = [
    cell("gen-chat", 1, { kv: row(100), sglang: row(200) }),
    cell("gen-chat", 4, { kv: row(110), sglang: row(300) }),
  ];

  test("the update's rows replace the base's of the same cell and name; the rest stay, and the cell names what was rerun", () => {
    const merged = mergeSuiteRuns(base, [cell("gen-chat", 4, { kv: row(90) })]);
    expect(merged[0]).toEqual(base[0]!);
    expect(merged[1]!.report.policies["kv"]!.ttft_ms.p90).toBe(90);
    expect(merged[1]!.report.policies["sglang"]!.ttft_ms.p90).toBe(300);
    expect(merged[1]!.report.rerun_policies).toEqual(["kv"]);
    // The base is not changed in place.
    expect(base[1]!.report.policies["kv"]!.ttft_ms.p90).toBe(110);
  });

  test("a cell the base does not have (other routers, another workload) is refused, named", () => {
    expect(() => mergeSuiteRuns(base, [cell("gen-rag", 1, { kv: row(90) })])).toThrow(
      "gen-rag | 1 router(s)",
    );
    expect(() => mergeSuiteRuns(base, [cell("gen-chat", 2, { kv: row(90) })])).toThrow(
      "gen-chat | 2 router(s)",
    );
  });
});
