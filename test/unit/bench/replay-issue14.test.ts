import { describe, expect, test } from "bun:test";
import { parsePolicyEntry, wantsSessionHeader } from "../../../bench/replay/cell.ts";
import { eventTargetsFor } from "../../../bench/replay/cluster.ts";
import { summarizeWork } from "../../../bench/replay/engine-counters.ts";
import { agentic, chat, generate, rag, SHAPES } from "../../../bench/replay/gen/shapes.ts";
import { simulateOffline } from "../../../bench/replay/oracle.ts";
import { simulate } from "../../../bench/replay/sim.ts";
import { KV_DEFAULTS } from "../../../bench/replay/sim-workloads.ts";
import {
  cells,
  judgeCell,
  parseCellList,
  parseCellRange,
  suiteWorkloads,
  tallyTable,
} from "../../../bench/replay/suite.ts";
import { floorPrefillMs, floorTable, ttftFloor } from "../../../bench/replay/ttft-floor.ts";
import { promptText, promptTokens, type TraceRequest } from "../../../bench/replay/trace.ts";
import { schedulerConfig } from "../../../src/router/choose/config.ts";

const isPrefix = (a: readonly number[], b: readonly number[]) =>
  a.length <= b.length && a.every((x, i) => b[i] === x);

describe("generated shapes", () => {
  test("same seed, same trace; another seed, another trace; arrivals sorted", () => {
    for (const s of SHAPES) {
      expect(generate(s, 3)).toEqual(generate(s, 3));
      expect(generate(s, 3)).not.toEqual(generate(s, 4));
      const t = generate(s, 3);
      for (let i = 1; i < t.length; i++)
        expect(t[i]!.timestamp).toBeGreaterThanOrEqual(t[i - 1]!.timestamp);
    }
  });

  test("chat: each turn's prompt extends the conversation's previous one; 12 system prompts shared", () => {
    const t = chat(1);
    const bySession = Map.groupBy(t, (r) => r.sessionId!);
    expect(bySession.size).toBe(320);
    for (const turns of bySession.values()) {
      expect(turns.length).toBeGreaterThanOrEqual(2);
      expect(turns.length).toBeLessThanOrEqual(7);
      for (let k = 1; k < turns.length; k++)
        expect(isPrefix(turns[k - 1]!.hashIds, turns[k]!.hashIds)).toBe(true);
    }
    expect(new Set(t.map((r) => r.hashIds.slice(0, 4).join())).size).toBe(12);
  });

  test("agentic: a step's parallel calls share the task context and arrive within 20 ms", () => {
    const t = agentic(1);
    const first = Map.groupBy(t, (r) => `${r.sessionId}:${r.hashIds.slice(0, -1).join()}`);
    const bursts = [...first.values()].filter((g) => g.length >= 2);
    expect(bursts.length).toBeGreaterThan(100);
    for (const g of bursts) expect(g.at(-1)!.timestamp - g[0]!.timestamp).toBeLessThanOrEqual(20);
    for (const r of t) expect(r.outputLength).toBe(30);
  });

  test("rag: documents are reused a few times each, behind one shared instruction block", () => {
    const t = rag(1);
    expect(new Set(t.map((r) => r.hashIds[0])).size).toBe(1);
    const docUses = Map.groupBy(t, (r) => r.hashIds[1]!);
    const mean = t.length / docUses.size;
    expect(mean).toBeGreaterThan(2);
    expect(mean).toBeLessThan(8);
  });
});

describe("replay helpers", () => {
  test("text prompts: one byte per token, equal blocks give equal text", () => {
    const a: TraceRequest = {
      index: 0,
      timestamp: 0,
      inputLength: 700,
      outputLength: 1,
      hashIds: [5, 6],
    };
    const b: TraceRequest = {
      index: 1,
      timestamp: 0,
      inputLength: 600,
      outputLength: 1,
      hashIds: [5, 7],
    };
    expect(promptText(a).length).toBe(promptTokens(a).length);
    expect(promptText(a).slice(0, 512)).toBe(promptText(b).slice(0, 512));
    expect(promptText(a).slice(512, 600)).not.toBe(promptText(b).slice(512, 600));
    expect(/^[a-z]+$/.test(promptText(a))).toBe(true);
  });

  test("policy entries carry router flags; only prodstack-session gets session ids", () => {
    expect(parsePolicyEntry("kv+overlap-credit=8+prefill-wait-factor=0")).toEqual({
      policy: "kv",
      args: ["--overlap-credit=8", "--prefill-wait-factor=0"],
    });
    expect(parsePolicyEntry("sglang")).toEqual({ policy: "sglang", args: [] });
    expect(wantsSessionHeader("prodstack-session")).toBe(true);
    expect(wantsSessionHeader("kv")).toBe(false);
  });

  test("work is prompt minus cached tokens per engine, from counter deltas", () => {
    const before = [
      { requests: 10, promptTokens: 1000, cachedTokens: 500 },
      { requests: 0, promptTokens: 0, cachedTokens: 0 },
    ];
    const after = [
      { requests: 20, promptTokens: 5000, cachedTokens: 1500 },
      { requests: 10, promptTokens: 1000, cachedTokens: 0 },
    ];
    const w = summarizeWork(before, after);
    expect(w.perEngineComputed).toEqual([3000, 1000]);
    expect(w.workMaxOverMean).toBe(1.5);
    expect(w.requestMaxOverMean).toBe(1);
    expect(w.idleEngines).toBe(0);
  });

  test("the oracle's LRU evicts tails before prefixes, as the simulated engine does", () => {
    const r = (i: number, ids: number[]): TraceRequest => ({
      index: i,
      timestamp: i,
      inputLength: ids.length * 512,
      outputLength: 1,
      hashIds: ids,
    });
    // capacity 3: [1,2,3] then [1,4]: evicting the LRU end must drop 3 (a tail), keeping 1
    const res = simulateOffline([r(0, [1, 2, 3]), r(1, [1, 4]), r(2, [1, 2])], "round-robin", 1, 3);
    expect(res.hitRate).toBeCloseTo((0 + 1 + 2) / 7, 10);
  });

  test("the timing simulation is deterministic and kv beats round-robin on a shared prefix", () => {
    const t = chat(2).slice(0, 300);
    const o = {
      engines: 4,
      kvBlocks: 200,
      prefillUsPerToken: 200,
      decodeMsPerStep: 20,
      maxOutputTokens: 32,
      arrivalScale: 1,
      seed: 1,
    };
    const cfg = schedulerConfig(KV_DEFAULTS);
    const a = simulate(t, "kv", cfg, o);
    expect(simulate(t, "kv", cfg, o)).toEqual(a);
    const rr = simulate(t, "round-robin", cfg, o);
    expect(a.hit).toBeGreaterThan(rr.hit);
    expect(a.ttft.p90).toBeLessThan(rr.ttft.p90);
  });

  test("the simulation's index answers as the router's: tree sizes for matching engines only, every engine's size on demand; kv puts a new prompt on the emptiest", () => {
    const r = (index: number, timestamp: number, hashIds: number[]): TraceRequest => ({
      index,
      timestamp,
      inputLength: hashIds.length * 512,
      outputLength: 1,
      hashIds,
    });
    // Two prompts fill engines A and B; long after, a third that matches nothing.
    const t = [r(0, 0, [1, 2, 3, 4]), r(1, 1, [5, 6]), r(2, 10_000, [9, 10, 11])];
    const cfg = schedulerConfig(KV_DEFAULTS);
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const engine: number[] = [];
      simulate(t, "kv", cfg, {
        engines: 3,
        kvBlocks: 10,
        prefillUsPerToken: 200,
        decodeMsPerStep: 20,
        maxOutputTokens: 1,
        arrivalScale: 1,
        seed,
        onFirstToken: (i, x) => (engine[i] = x.engine),
      });
      expect({ seed, distinct: new Set(engine).size }).toEqual({ seed, distinct: 3 });
    }
  });

  test("several routers in the simulation: kv's index is the engines' caches (router count changes nothing), approx knows only its own share", () => {
    const t = chat(3);
    const o = {
      engines: 8,
      kvBlocks: 400,
      prefillUsPerToken: 200,
      decodeMsPerStep: 20,
      maxOutputTokens: 32,
      arrivalScale: 1,
      seed: 1,
    };
    const cfg = schedulerConfig(KV_DEFAULTS);
    // kv-blocks: its decisions read only the index and the shared load (the time-based kv's routers
    // each learn engine speeds from their own requests' first tokens, so theirs differ by design).
    const decisions = (r: ReturnType<typeof simulate>) => ({ ...r, predictorError: undefined });
    expect(decisions(simulate(t, "kv-blocks", cfg, { ...o, routers: 4 }))).toEqual(
      decisions(simulate(t, "kv-blocks", cfg, o)),
    );
    const approx1 = simulate(t, "approx", cfg, o);
    const approx4 = simulate(t, "approx", cfg, { ...o, routers: 4 });
    // One approx router sees every decision, as kv sees every cache: near kv's hits; four see a quarter each.
    expect(approx4.hit).toBeLessThan(approx1.hit - 0.05);
  });

  test("an approx cell's engines push no KV events (approx is the router without them); every other policy's push to every router", () => {
    const urls = ["http://127.0.0.1:1", "http://127.0.0.1:2"];
    expect(eventTargetsFor("approx", urls)).toEqual([]);
    for (const p of ["kv", "dynamo", "sglang", "least-loaded"])
      expect(eventTargetsFor(p, urls)).toEqual(urls);
  });
});

describe("the TTFT floor (ttft-floor.ts)", () => {
  const req = (
    index: number,
    timestamp: number,
    hashIds: number[],
    inputLength: number,
  ): TraceRequest => ({ index, timestamp, inputLength, outputLength: 4, hashIds });
  const o = {
    engines: 2,
    speedup: 1,
    arrivalScale: 1,
    prefillUsPerToken: 200,
    prefillOverheadMs: 1,
  };
  const trace = [req(0, 0, [1, 2, 3], 1124), req(1, 0, [1, 2, 4], 1536), req(2, 0, [9], 512)];

  test("each request computes only the blocks no earlier request had; speedup divides", () => {
    // 1124 tokens: 2 full blocks (the third id is a partial block); the second request reuses
    // blocks 1 and 2 (an earlier request had them) and computes the 512 of block 4.
    expect(floorPrefillMs(trace, o).map((x) => +x.toFixed(3))).toEqual([225.8, 103.4, 103.4]);
    expect(floorPrefillMs(trace, { ...o, speedup: 2 }).map((x) => +x.toFixed(3))).toEqual([
      112.9, 51.7, 51.7,
    ]);
  });

  test("pooled: one FIFO queue over the engines — the third request waits for the first free lane", () => {
    // Two lanes: the first two start at once; the third starts when the second ends (103.4)
    // and is done at 206.8, before the first (225.8).
    const two = ttftFloor(trace, o);
    expect(+two.floor.p99.toFixed(3)).toBe(225.8);
    expect(+two.pooled.p99.toFixed(3)).toBe(225.8);
    // One lane: 225.8, then 225.8 + 103.4, then + 103.4 again.
    const one = ttftFloor(trace, { ...o, engines: 1 });
    expect(+one.pooled.p99.toFixed(3)).toBe(432.6);
    expect(+one.floor.p99.toFixed(3)).toBe(225.8);
  });

  test("the table rebuilds a suite cell's trace by name and says when 0.8 × the best peer is below the floor", () => {
    const n = 60;
    const w = suiteWorkloads(n).find((x) => x.name === "gen-rag, half")!;
    const fl = ttftFloor(w.trace(), {
      engines: 8,
      speedup: 10,
      arrivalScale: 1,
      prefillUsPerToken: 200,
      prefillOverheadMs: 1,
    });
    const result = (p90: number) => ({ ttft_ms: { p50: p90, p90, p99: p90 } }) as never;
    const cell = {
      workload: w.name,
      routers: 1,
      restarts: 0,
      arrival_scale: 1,
      report: {
        requests: n,
        engines: 8,
        speedup: 10,
        offline: {},
        policies: {
          kv: result(fl.floor.p90 * 1.1),
          dynamo: result(fl.floor.p90 * 1.1),
          sglang: result(fl.floor.p90 * 2),
        },
      },
    } as never;
    const line = floorTable([cell]).split("\n")[1]!;
    expect(line).toContain("dynamo");
    // 0.8 × 1.1 = 0.88: below the floor, out of any policy's reach.
    expect(line.trim().split(/\s+/).at(-1)).toBe("0.88");
  });
});

describe("the suite's cells", () => {
  test("full: 42 cells, six per workload (N = 1, 2, 4, restarts, loads ×2 and ×0.5), then the 5 tier cells; quick is a subset of the same workloads", () => {
    const full = cells("full", 2000);
    expect(full).toHaveLength(42 + 5);
    expect(full.slice(42).every((c) => c.workload.hostTierFactor !== undefined)).toBe(true);
    expect(full[24]!.workload.name).toBe("gen-chat, half");
    expect(full.slice(24, 30).map((c) => [c.routers, c.restarts, c.arrivalScale])).toEqual([
      [1, 0, 1],
      [2, 0, 1],
      [4, 0, 1],
      [1, 2, 1],
      [1, 0, 0.5],
      [1, 0, 2],
    ]);
    const names = new Set(full.map((c) => c.workload.name));
    for (const c of cells("quick", 300)) expect(names.has(c.workload.name)).toBe(true);
  });

  test("--suite-cells A-B: 1-based and inclusive; a bad range is refused with what is wrong", () => {
    expect(parseCellRange("25-42")).toEqual({ from: 25, to: 42 });
    expect(parseCellRange("3")).toEqual({ from: 3, to: 3 });
    expect(() => parseCellRange("0-2")).toThrow("1-based");
    expect(() => parseCellRange("5-2")).toThrow("A ≤ B");
    expect(() => parseCellRange("a-b")).toThrow("must be A-B");
  });

  test("--suite-cells A-B,C,...: the listed cells once each, in the suite's order", () => {
    expect(parseCellList("13-15,1,3,2")).toEqual([1, 2, 3, 13, 14, 15]);
    expect(parseCellList("4")).toEqual([4]);
    expect(() => parseCellList("1,x")).toThrow("must be A-B");
  });
});

describe("the targets (suite.ts judgeCell, tallyTable)", () => {
  const res = (p90: number, p99: number, extra: Record<string, number> = {}) =>
    ({ ttft_ms: { p50: p90, p90, p99 }, hit_rate: 0.5, errors: 0, ...extra }) as never;
  const cell = (routers: number, policies: Record<string, unknown>) =>
    ({
      workload: "w",
      routers,
      restarts: 0,
      arrival_scale: 1,
      report: { offline: { oracle: { hit_rate: 0.5 } }, policies },
    }) as never;

  test("a target is judged only where the policies it compares ran; each miss is named", () => {
    const one = judgeCell(
      cell(1, {
        kv: res(80, 100, { utilisation: 0.6, work_max_over_mean: 1.3 }),
        dynamo: res(100, 99),
        "least-loaded": res(90, 120),
      }),
    );
    expect(one.applies).toEqual(["hit", "p90", "p99", "≤ll", "work"]);
    expect(one.missed).toEqual(["p99", "work"]);
    const four = judgeCell(
      cell(4, { kv: res(81, 90), dynamo: res(100, 99), approx: res(100, 100) }),
    );
    expect(four.applies).toEqual(["hit", "p90", "p99", "N4 vs approx"]);
    expect(four.missed).toEqual(["p90", "N4 vs approx"]);
  });

  test("the tally counts met over judged cells per target", () => {
    const t = tallyTable([
      cell(1, { kv: res(80, 100), dynamo: res(100, 99) }),
      cell(1, { kv: res(70, 90), dynamo: res(100, 99) }),
    ]);
    expect(t).toMatch(/p90\s+2 \/ 2/);
    expect(t).toMatch(/p99\s+1 \/ 2/);
    expect(t).toMatch(/work\s+0 \/ 0/);
  });
});
