/**
 * Property: whatever the transport does (drops, duplicates, reorders, delays) and whatever
 * the engines do (stores, evictions, clears, restarts), once everything is delivered and
 * the driver is idle the index holds exactly each engine rank's blocks. See
 * support/simulation.ts for the model and its two documented assumptions.
 */
import { describe, expect, test } from "bun:test";
import { workerKey } from "../../../../src/core/ids.ts";
import { RadixTree } from "../../../../src/router/kv-index/radix-tree.ts";
import { ModelIndex, sorted } from "./support/model-index.ts";
import { simulate, type SimResult } from "./support/simulation.ts";

const SEEDS = 1200;
/**
 * Its own timeout: the seeds take ~1 s on a quiet machine and several on a loaded one, more
 * than bun's default 5 s when run without the suite's --timeout (bun test test/unit/router).
 */
const PROPERTY_TIMEOUT_MS = 120_000;
/** The real index is slower to build per seed; a smaller run checks the driver feeds it right. */
const RADIX_SEEDS = 400;

function entries(m: Map<string, bigint[]>): [string, string][] {
  return [...m]
    .map(([k, v]) => [k, v.join(",")] as [string, string])
    .sort(([a], [b]) => (a < b ? -1 : 1));
}

describe("recovery driver property (seeded)", () => {
  test(
    `the index equals the engines' blocks after delivery, for ${SEEDS} seeds`,
    async () => {
      const failures: string[] = [];
      const totals = { restarts: 0, restores: 0, gaps: 0, clears: 0, dropped: 0, emitted: 0 };
      for (let seed = 1; seed <= SEEDS; seed++) {
        const index = new ModelIndex();
        let r: SimResult;
        try {
          r = await simulate(seed, index);
        } catch (e) {
          failures.push(`seed ${seed}: threw ${String(e)}`);
          continue;
        }
        totals.restarts += r.stats.restarts;
        totals.restores += r.stats.restores;
        totals.gaps += r.stats.gaps;
        totals.clears += r.stats.clears;
        totals.dropped += r.stats.dropped;
        totals.emitted += r.emitted;
        const want = entries(r.truth);
        const got = entries(index.snapshot());
        if (JSON.stringify(want) !== JSON.stringify(got)) {
          failures.push(
            `seed ${seed} params ${JSON.stringify(r.params)}\n  want ${JSON.stringify(want)}\n  got  ${JSON.stringify(got)}\n  stats ${JSON.stringify(r.stats)}`,
          );
        }
      }
      if (process.env.RECOVERY_SIM_VERBOSE) console.log(totals);
      if (failures.length > 0)
        console.error(`${failures.length} failing seeds; first:\n${failures[0]}`);
      expect(failures).toEqual([]);
      // The generator really exercised the hard paths.
      expect(totals.restarts).toBeGreaterThan(50);
      expect(totals.gaps).toBeGreaterThan(500);
      expect(totals.clears).toBeGreaterThan(50);
      expect(totals.dropped).toBeGreaterThan(0);
    },
    PROPERTY_TIMEOUT_MS,
  );
});

/** Per "w:r", the block hashes a RadixTree holds, read back through its dump. */
function treeBlocks(tree: RadixTree): Map<string, bigint[]> {
  const per = new Map<string, Set<bigint>>();
  for (const ev of tree.dump()) {
    const d = ev.event.data;
    if (d.type !== "stored") continue;
    const key = workerKey(ev.workerId, ev.event.dpRank);
    let set = per.get(key);
    if (set === undefined) per.set(key, (set = new Set()));
    for (const b of d.blocks) set.add(b.blockHash);
  }
  const out = new Map<string, bigint[]>();
  for (const [k, v] of per) if (v.size > 0) out.set(k, sorted(v));
  return out;
}

describe("recovery driver property against the radix tree (seeded)", () => {
  test(
    `the RadixTree equals the engines' blocks after delivery, for ${RADIX_SEEDS} seeds`,
    async () => {
      const failures: string[] = [];
      for (let seed = 1; seed <= RADIX_SEEDS; seed++) {
        const tree = new RadixTree();
        const r = await simulate(seed, tree);
        const want = entries(r.truth);
        const got = entries(treeBlocks(tree));
        const sizes = [...r.truth].every(([k, v]) => tree.workerSize(k) === v.length);
        if (JSON.stringify(want) !== JSON.stringify(got) || !sizes) {
          failures.push(
            `seed ${seed} params ${JSON.stringify(r.params)}\n  want ${JSON.stringify(want)}\n  got  ${JSON.stringify(got)}`,
          );
        }
      }
      if (failures.length > 0)
        console.error(`${failures.length} failing seeds; first:\n${failures[0]}`);
      expect(failures).toEqual([]);
    },
    PROPERTY_TIMEOUT_MS,
  );
});
