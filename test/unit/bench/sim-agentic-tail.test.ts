/**
 * The agentic-tail study's parts (bench/replay/sim-agentic-tail.ts): the tool prompts it finds
 * in a trace, where it puts their copies, and the simulation's warm blocks it relies on.
 */
import { describe, expect, test } from "bun:test";
import { AGENTIC_DEFAULTS, agentic } from "../../../bench/replay/gen/shapes.ts";
import {
  fullOfOthers,
  placeCopies,
  sharedPrefixes,
} from "../../../bench/replay/sim-agentic-tail.ts";
import { simulate, type SimOptions } from "../../../bench/replay/sim.ts";
import { KV_DEFAULTS } from "../../../bench/replay/sim-workloads.ts";
import type { TraceRequest } from "../../../bench/replay/trace.ts";
import { schedulerConfig } from "../../../src/router/choose/config.ts";

describe("the agentic tail study", () => {
  test("finds each agent's tool prompt in the trace: one per agent, toolBlocks long, disjoint", () => {
    for (const seed of [2, 3]) {
      const prefixes = sharedPrefixes(agentic(seed));
      expect(prefixes.length).toBe(AGENTIC_DEFAULTS.agents);
      for (const p of prefixes) expect(p.length).toBe(AGENTIC_DEFAULTS.toolBlocks);
      const all = prefixes.flat();
      expect(new Set(all).size).toBe(all.length);
    }
  });

  test("places every prefix on `copies` different engines, no engine with more than its share", () => {
    const prefixes = [
      [1, 2],
      [3, 4],
      [5, 6],
      [7, 8],
      [9, 10],
      [11, 12],
    ];
    const placed = placeCopies(prefixes, 8, 2);
    for (const p of prefixes) expect(placed.filter((ids) => ids.includes(p[0]!)).length).toBe(2);
    for (const ids of placed) expect(ids.length / 2).toBeLessThanOrEqual(Math.ceil((6 * 2) / 8));
  });

  test("caches full of others' blocks: every engine at capacity, no id shared with the trace or between engines", () => {
    const trace = agentic(2);
    const full = fullOfOthers(8, 31);
    expect(full.map((ids) => ids.length)).toEqual(Array(8).fill(31));
    const ids = full.flat();
    expect(new Set(ids).size).toBe(8 * 31);
    const traceIds = new Set(trace.flatMap((r) => r.hashIds));
    expect(ids.filter((id) => traceIds.has(id))).toEqual([]);
  });

  test("warm blocks are cached before the first request, and kv's index sees them", () => {
    // Two requests far apart sharing 4 blocks; engine 3 holds those blocks from the start.
    const r = (index: number, timestamp: number): TraceRequest => ({
      index,
      timestamp,
      inputLength: 5 * 512,
      outputLength: 1,
      hashIds: [10, 11, 12, 13, 100 + index],
    });
    const trace = [r(0, 0), r(1, 100_000)];
    const o: SimOptions = {
      engines: 8,
      kvBlocks: 64,
      prefillUsPerToken: 200,
      decodeMsPerStep: 20,
      maxOutputTokens: 1,
      arrivalScale: 1,
      seed: 1,
    };
    const engines: number[] = [];
    const ttfts: number[] = [];
    const warm = Array.from({ length: 8 }, (_, e) => (e === 3 ? [10, 11, 12, 13] : []));
    const res = simulate(trace, "kv", schedulerConfig(KV_DEFAULTS), {
      ...o,
      warmBlocks: warm,
      onFirstToken: (_i, x) => (engines.push(x.engine), ttfts.push(x.done - x.arrival)),
    });
    expect(engines).toEqual([3, 3]);
    // Only the last block is computed: 512 tokens at 0.2 ms plus the 1 ms overhead.
    expect(ttfts[0]).toBeCloseTo(1 + 512 * 0.2, 6);
    expect(res.hit).toBeCloseTo(8 / 10, 6);
    // Without them the first request computes the whole prompt.
    const cold: number[] = [];
    simulate(trace, "kv", schedulerConfig(KV_DEFAULTS), {
      ...o,
      onFirstToken: (_i, x) => cold.push(x.done - x.arrival),
    });
    expect(cold[0]).toBeCloseTo(1 + 5 * 512 * 0.2, 6);
  });
});
