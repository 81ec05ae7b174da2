/**
 * The three hand-written u64 open-addressing tables against the one table with a row width
 * parameter (src/core/u64-table.ts), each on its own shape (issue 10):
 *   - U64Map (indexer: engine block hash -> node; rows of 3)          vs U64Table width 3
 *   - ChildTable (indexer: (path hash, parent) -> child; rows of 4)   vs U64Table width 4, 3 key columns
 *   - Hash64Table (scheduler: sequence hash -> entry + aux; rows of 4) vs U64Table width 4
 *
 *   bun bench/micro/u64-tables.ts [--runs 5] [--json FILE]   (also: bun run bench:micro --only u64-tables)
 *
 * Per shape and size (64 Ki keys: fits the caches; 1 Mi keys: does not): ns per operation,
 * median of `--runs` runs, for insert (from empty), lookups that hit, lookups that miss, and
 * delete-all. Keys are seeded random u64 halves, generated outside the timed region.
 */
import { writeFileSync } from "node:fs";
import { U64Table } from "./u64-table-generic.ts";
import { ChildTable } from "../../src/router/kv-index/child-table.ts";
import { U64Map } from "../../src/router/kv-index/u64-map.ts";
import { Hash64Table } from "../../src/router/books/hash64-table.ts";
import { xorshift32 } from "../../test/support/prng.ts";
import { textTable } from "../support/text-table.ts";

/** One table under test: the four operations over keys i in [0, n). */
interface Variant {
  readonly name: string;
  make(): unknown;
  insert(t: unknown, lo: Int32Array, hi: Int32Array, n: number): number;
  hit(t: unknown, lo: Int32Array, hi: Int32Array, n: number): number;
  remove(t: unknown, lo: Int32Array, hi: Int32Array, n: number): number;
}

const PARENT = (i: number) => i & 1023;

const VARIANTS: readonly (readonly [string, Variant, Variant])[] = [
  [
    "block -> node (3 int32)",
    {
      name: "U64Map",
      make: () => new U64Map(),
      insert: (t, lo, hi, n) => {
        const m = t as U64Map;
        for (let i = 0; i < n; i++) m.set(lo[i]!, hi[i]!, i);
        return m.size;
      },
      hit: (t, lo, hi, n) => {
        const m = t as U64Map;
        let s = 0;
        for (let i = 0; i < n; i++) s += m.get(lo[i]!, hi[i]!);
        return s;
      },
      remove: (t, lo, hi, n) => {
        const m = t as U64Map;
        let s = 0;
        for (let i = 0; i < n; i++) s += m.delete(lo[i]!, hi[i]!);
        return s;
      },
    },
    {
      name: "U64Table(3)",
      make: () => new U64Table({ width: 3, keyColumns: 2 }),
      insert: (t, lo, hi, n) => {
        const m = t as U64Table;
        for (let i = 0; i < n; i++) m.set(lo[i]!, hi[i]!, 0, i);
        return m.size;
      },
      hit: (t, lo, hi, n) => {
        const m = t as U64Table;
        let s = 0;
        for (let i = 0; i < n; i++) s += m.get(lo[i]!, hi[i]!);
        return s;
      },
      remove: (t, lo, hi, n) => {
        const m = t as U64Table;
        let s = 0;
        for (let i = 0; i < n; i++) s += m.delete(lo[i]!, hi[i]!);
        return s;
      },
    },
  ],
  [
    "edge (path, parent) -> child (4 int32)",
    {
      name: "ChildTable",
      make: () => new ChildTable(),
      insert: (t, lo, hi, n) => {
        const m = t as ChildTable;
        for (let i = 0; i < n; i++) m.set(PARENT(i), lo[i]!, hi[i]!, i);
        return m.size;
      },
      hit: (t, lo, hi, n) => {
        const m = t as ChildTable;
        let s = 0;
        for (let i = 0; i < n; i++) s += m.get(PARENT(i), lo[i]!, hi[i]!);
        return s;
      },
      remove: (t, lo, hi, n) => {
        const m = t as ChildTable;
        let s = 0;
        for (let i = 0; i < n; i++) s += m.delete(PARENT(i), lo[i]!, hi[i]!);
        return s;
      },
    },
    {
      name: "U64Table(4, k3)",
      make: () => new U64Table({ width: 4, keyColumns: 3 }),
      insert: (t, lo, hi, n) => {
        const m = t as U64Table;
        for (let i = 0; i < n; i++) m.set(lo[i]!, hi[i]!, PARENT(i), i);
        return m.size;
      },
      hit: (t, lo, hi, n) => {
        const m = t as U64Table;
        let s = 0;
        for (let i = 0; i < n; i++) s += m.get(lo[i]!, hi[i]!, PARENT(i));
        return s;
      },
      remove: (t, lo, hi, n) => {
        const m = t as U64Table;
        let s = 0;
        for (let i = 0; i < n; i++) s += m.delete(lo[i]!, hi[i]!, PARENT(i));
        return s;
      },
    },
  ],
  [
    "seq hash -> entry + aux (4 int32)",
    {
      name: "Hash64Table",
      make: () => new Hash64Table(),
      insert: (t, lo, hi, n) => {
        const m = t as Hash64Table;
        for (let i = 0; i < n; i++) m.findOrInsert(lo[i]!, hi[i]!, i);
        return m.size;
      },
      hit: (t, lo, hi, n) => {
        const m = t as Hash64Table;
        let s = 0;
        for (let i = 0; i < n; i++) {
          const p = m.find(lo[i]!, hi[i]!);
          s += m.valueAt(p) + m.auxAt(p);
        }
        return s;
      },
      remove: (t, lo, hi, n) => {
        const m = t as Hash64Table;
        let s = 0;
        for (let i = 0; i < n; i++) s += m.delete(lo[i]!, hi[i]!) ? 1 : 0;
        return s;
      },
    },
    {
      name: "U64Table(4)",
      make: () => new U64Table({ width: 4, keyColumns: 2 }),
      insert: (t, lo, hi, n) => {
        const m = t as U64Table;
        for (let i = 0; i < n; i++) m.findOrInsert(lo[i]!, hi[i]!, 0, i);
        return m.size;
      },
      hit: (t, lo, hi, n) => {
        const m = t as U64Table;
        let s = 0;
        for (let i = 0; i < n; i++) {
          const p = m.find(lo[i]!, hi[i]!);
          s += m.at(p, 2) + m.at(p, 3);
        }
        return s;
      },
      remove: (t, lo, hi, n) => {
        const m = t as U64Table;
        let s = 0;
        for (let i = 0; i < n; i++) s += m.delete(lo[i]!, hi[i]!) >= 0 ? 1 : 0;
        return s;
      },
    },
  ],
];

function keys(n: number, seed: number): [Int32Array, Int32Array] {
  const rng = xorshift32(seed);
  const lo = new Int32Array(n);
  const hi = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    lo[i] = rng() | 0;
    hi[i] = rng() | 0;
  }
  return [lo, hi];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** ns per op of insert / hit / miss / delete, median of `runs` fresh runs. */
function measure(v: Variant, n: number, runs: number): Record<string, number> {
  const [lo, hi] = keys(n, 0x51ed);
  const [mlo, mhi] = keys(n, 0xbad5eed);
  const out: Record<string, number[]> = { insert: [], hit: [], miss: [], delete: [] };
  let sink = 0;
  for (let r = 0; r < runs + 1; r++) {
    const t = v.make();
    let t0 = performance.now();
    sink += v.insert(t, lo, hi, n);
    const ins = performance.now() - t0;
    t0 = performance.now();
    sink += v.hit(t, lo, hi, n);
    const hit = performance.now() - t0;
    t0 = performance.now();
    if (v.name !== "Hash64Table" && v.name !== "U64Table(4)") sink += v.hit(t, mlo, mhi, n);
    else sink += missesOf(t, v, mlo, mhi, n);
    const miss = performance.now() - t0;
    t0 = performance.now();
    sink += v.remove(t, lo, hi, n);
    const del = performance.now() - t0;
    if (r === 0) continue; // warm-up
    out.insert!.push((ins * 1e6) / n);
    out.hit!.push((hit * 1e6) / n);
    out.miss!.push((miss * 1e6) / n);
    out.delete!.push((del * 1e6) / n);
  }
  if (sink === 0.5) console.log(sink); // keep the work observable
  return Object.fromEntries(Object.entries(out).map(([k, xs]) => [k, median(xs)]));
}

/** Misses on the find-position tables: find alone (valueAt of -1 would read garbage). */
function missesOf(t: unknown, v: Variant, lo: Int32Array, hi: Int32Array, n: number): number {
  let s = 0;
  if (v.name === "Hash64Table")
    for (let i = 0; i < n; i++) s += (t as Hash64Table).find(lo[i]!, hi[i]!);
  else for (let i = 0; i < n; i++) s += (t as U64Table).find(lo[i]!, hi[i]!);
  return s;
}

export async function runU64TablesBench(
  opts: { runs?: number } = {},
): Promise<Record<string, unknown>> {
  const runs = opts.runs ?? 5;
  const cases: Record<string, unknown>[] = [];
  // Same answers before timing: both tables of a shape hold and find the same values.
  for (const [shape, ours, generic] of VARIANTS) {
    const [lo, hi] = keys(4096, 7);
    const answers = [ours, generic].map((v) => {
      const t = v.make();
      return [
        v.insert(t, lo, hi, 4096),
        v.hit(t, lo, hi, 4096),
        v.remove(t, lo, hi, 2048),
        v.hit(t, lo.subarray(2048), hi.subarray(2048), 2048),
      ].join();
    });
    if (answers[0] !== answers[1])
      throw new Error(`${shape}: ${ours.name} ${answers[0]} != ${generic.name} ${answers[1]}`);
  }
  for (const n of [1 << 16, 1 << 20]) {
    for (const [shape, ours, generic] of VARIANTS) {
      for (const v of [ours, generic])
        cases.push({ shape, n, table: v.name, ...measure(v, n, runs) });
    }
  }
  const fmt = (x: unknown) => (x as number).toFixed(1);
  console.log(
    textTable(
      ["shape", "keys", "table", "insert", "hit", "miss", "delete"],
      cases.map((c) => [
        String(c.shape),
        String(c.n),
        String(c.table),
        fmt(c.insert),
        fmt(c.hit),
        fmt(c.miss),
        fmt(c.delete),
      ]),
    ),
  );
  return { bench: "u64-tables", unit: "ns/op (median)", runs, cases };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const runsAt = args.indexOf("--runs");
  const result = await runU64TablesBench({
    runs: runsAt >= 0 ? Number(args[runsAt + 1]) : undefined,
  });
  const jsonAt = args.indexOf("--json");
  if (jsonAt >= 0) writeFileSync(args[jsonAt + 1]!, JSON.stringify(result, null, 2));
}
