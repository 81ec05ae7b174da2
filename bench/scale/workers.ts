/**
 * Many workers: what registering them costs, and what the index keeps after they leave.
 * The decision room and worker membership as the router builds them (no HTTP, no engines:
 * engine info answers at once, the recovery query answers an empty dump), so the numbers are
 * the router's own work.
 *
 *   bun bench/scale/workers.ts [--workers 1000,2000,4000] [--prompts 64] [--blocks 16384] [--json FILE]
 *
 * Phases: register the workers in steps (each step's wall time: registration must not grow
 * with the workers already there); route `--prompts` distinct text prompts approximately
 * (each `--blocks` blocks, a decision on one worker), so the approximate index holds nodes;
 * remove every worker but one, then the last, each followed by a GC: the RSS and the index's
 * typed-array bytes must follow what is still live.
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { portableBatchHasher } from "../../src/core/block-hash.ts";
import { WorkerMembership } from "../../src/fleet/membership.ts";
import { WorkerRegistry } from "../../src/fleet/registry.ts";
import { RouterMetrics } from "../../src/observe/names.ts";
import { createRouter } from "../../src/router/create-router.ts";
import { MemoryAffinityStore } from "../../src/router/sessions/memory-store.ts";
import { StickyRouter } from "../../src/router/sessions/sticky.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    workers: { type: "string", default: "1000,2000,4000" },
    prompts: { type: "string", default: "64" },
    blocks: { type: "string", default: "16384" },
    json: { type: "string" },
  },
});
const steps = values.workers.split(",").map(Number);
const prompts = Number(values.prompts);
const blocks = Number(values.blocks);
const BS = 16;

const rssMb = () => Math.round(process.memoryUsage().rss / 1e6);
function settle(): number {
  for (let i = 0; i < 3; i++) Bun.gc(true);
  return rssMb();
}

const clock = 0;
const registry = new WorkerRegistry();
const router = createRouter(
  { policy: "kv", scheduler: { blockSize: BS }, sessionTtlMs: 60_000, approxTtlMs: 3_600_000 },
  {
    hasher: portableBatchHasher,
    now: () => clock,
    rng: Math.random,
    workers: registry,
    sticky: new StickyRouter(
      new MemoryAffinityStore({ clock: { now: () => clock, every: () => () => {} } }),
    ),
    metrics: new RouterMetrics(),
    query: async () => ({ kind: "tree_dump", events: [], lastEventId: null }),
    sleep: async () => {},
  },
);
const membership = new WorkerMembership({
  registry,
  blockSize: BS,
  load: router.members,
  recovery: router.members,
  engineInfo: async () => ({ dpRanks: 1, blockSize: BS, loras: [] }),
});
/** The approximate index's typed arrays (its radix tree's nodes, edges and lookups), MB. */
const indexBytes = () => {
  const tree = (router.approxIndex as unknown as { tree?: { memoryBytes(): number } }).tree;
  return tree === undefined ? NaN : Math.round(tree.memoryBytes() / 1e6);
};

const report: Record<string, unknown> = { steps: [] as unknown[] };
console.log(`start: RSS ${settle()} MB`);
let registered = 0;
for (const target of steps) {
  const t0 = performance.now();
  for (; registered < target; registered++)
    await membership.register({
      url: `http://10.${registered >> 16}.${(registered >> 8) & 255}.${registered & 255}:8000`,
    });
  const ms = performance.now() - t0;
  console.log(
    `registered up to ${target} workers: this step ${Math.round(ms)} ms (${(ms / (target - (report.steps as unknown[]).reduce((a: number, s) => a + (s as { added: number }).added, 0))).toFixed(2)} ms each); RSS ${settle()} MB`,
  );
  (report.steps as unknown[]).push({
    workers: target,
    added: target - ((report.steps as { workers: number }[]).at(-1)?.workers ?? 0),
    ms: Math.round(ms),
    rssMb: rssMb(),
  });
}

// Distinct prompts, each decided onto one worker: the approximate index's nodes, and (while
// their leases are held) the load books' blocks.
const t1 = performance.now();
const leases: { free(): void }[] = [];
let keep: bigint | undefined;
for (let p = 0; p < prompts; p++) {
  const tokens = new Uint32Array(blocks * BS);
  for (let i = 0; i < tokens.length; i++) tokens[i] = (p * 7919 + i * 31) % 50_000;
  tokens[0] = p; // distinct from the first block on
  const d = await router.routing.route({ tokens, approximate: true, requestId: `r${p}` });
  keep ??= d.worker.workerId;
  leases.push(d.lease);
}
const routedMs = Math.round(performance.now() - t1);
const routedRss = settle();
console.log(
  `routed ${prompts} prompts of ${blocks} blocks in ${routedMs} ms (${(routedMs / prompts).toFixed(1)} ms each), leases held: index ${router.approxIndex?.nodeCount()} nodes, ${indexBytes()} MB of typed arrays; RSS ${routedRss} MB`,
);
report.routed = {
  prompts,
  blocks,
  msEach: routedMs / prompts,
  nodes: router.approxIndex?.nodeCount(),
  indexMb: indexBytes(),
  rssMb: routedRss,
};
for (const l of leases) l.free();
const freedRss = settle();
console.log(`leases freed: RSS ${freedRss} MB`);
report.freed = { rssMb: freedRss };

// Every worker leaves but the one that holds the first prompt's blocks.
const ids = registry
  .list()
  .map((w) => w.id)
  .filter((id) => id !== keep);
const t2 = performance.now();
for (const id of ids) membership.remove(id);
const removeMs = Math.round(performance.now() - t2);
const oneLeftRss = settle();
console.log(
  `removed ${ids.length} workers in ${removeMs} ms: index ${router.approxIndex?.nodeCount()} nodes, ${indexBytes()} MB; RSS ${oneLeftRss} MB`,
);
report.oneLeft = {
  ms: removeMs,
  nodes: router.approxIndex?.nodeCount(),
  indexMb: indexBytes(),
  rssMb: oneLeftRss,
};
membership.remove(keep!);
const noneRss = settle();
console.log(`removed the last: index ${indexBytes()} MB; RSS ${noneRss} MB`);
report.none = { indexMb: indexBytes(), rssMb: noneRss };
if (values.json) writeFileSync(values.json, JSON.stringify(report, null, 2));
