/**
 * Contract: a vLLM engine with the OffloadingConnector publishes its GPU blocks and its CPU /
 * STORAGE tiers over ZeroMQ, and the router's index holds each block under (worker, dp rank,
 * medium) exactly. The publisher (test/support/vllm_offload_events.py, driven through the
 * python stand-in for vLLM's ZmqEventPublisher) builds the events as vLLM's
 * OffloadingEventsTracker does: GPU blocks of 16 tokens, offloaded in chunks of 48 (vLLM's own
 * tests use 16 and 48), self-describing chunks or placeholders. The real subscriber (libzmq over
 * bun:ffi, the receive Worker, the decoder) feeds a real RadixTree.
 * Needs: apt-get install -y libzmq5 python3-zmq python3-msgpack.
 */
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { computeBlockHashes } from "../../src/core/block-hash.ts";
import type { KvEventStatus, KvMedium, RouterEvent } from "../../src/core/events.ts";
import { RadixTree } from "../../src/router/kv-index/radix-tree.ts";
import {
  startVllmKvSubscriber,
  type VllmKvSubscriber,
} from "../../src/runtime/bun/zmq/subscriber.ts";
import { until } from "../support/processes.ts";
import { pythonZmqProblem, VllmPublisherProcess } from "../support/vllm-kv-publisher.ts";

const W = 77n;
const BS = 16;
const CHUNK_BLOCKS = 3; // a 48-token CPU block
const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);
/** Request A: 6 blocks (2 chunks). B shares A's first 4 blocks, then differs: its chunk 1 re-announces A's block 3. */
const TOKENS_A = range(0, 96);
const TOKENS_B = [...range(0, 64), ...range(1000, 1032)];

const procs: VllmPublisherProcess[] = [];
const subs: VllmKvSubscriber[] = [];

beforeAll(() => {
  const problem = pythonZmqProblem();
  if (problem !== undefined)
    throw new Error(`the ZeroMQ integration tests need a python publisher: ${problem}`);
});

afterEach(async () => {
  await Promise.all(subs.splice(0).map((s) => s.stop()));
  await Promise.all(procs.splice(0).map((p) => p.stop()));
});

/** A publisher, a subscriber and the index it feeds; statuses of every applied event kept. */
async function fleet() {
  const p = await VllmPublisherProcess.start();
  procs.push(p);
  const tree = new RadixTree();
  const applied: { event: RouterEvent; status: KvEventStatus }[] = [];
  const sub = await startVllmKvSubscriber({
    endpoint: p.pub,
    replayEndpoint: p.replay,
    workerId: W,
    blockSize: BS,
    onEvents: (evs) => {
      for (const event of evs) applied.push({ event, status: tree.applyEvent(event) });
    },
    log: { info: () => {}, warn: () => {} },
  });
  subs.push(sub);
  await p.waitSubscriber();
  /** Wait until every batch up to `seq` was decoded (events or none). */
  const settle = (seq: number) =>
    until(
      () => sub.stats().lastSeq >= seq,
      () => `batch ${seq} (last seen ${sub.stats().lastSeq})`,
    );
  return { p, tree, applied, sub, settle };
}

/** What the index holds for worker W, per medium: block hash -> tokens hash, from a dump. */
function holdings(tree: RadixTree): Record<KvMedium, Map<bigint, bigint>> {
  const out: Record<KvMedium, Map<bigint, bigint>> = {
    gpu: new Map(),
    cpu: new Map(),
    disk: new Map(),
  };
  for (const e of tree.dump()) {
    const d = e.event.data;
    if (e.workerId !== W || d.type !== "stored") continue;
    const block = d.blocks[d.blocks.length - 1]!; // path blocks of a dump are synthetic and removed again
    out[e.event.medium ?? "gpu"].set(block.blockHash, block.tokensHash);
  }
  return out;
}

/** The expected holdings of one medium: these blocks of these requests. */
function expectHeld(
  got: Map<bigint, bigint>,
  want: [hashes: bigint[], tokens: number[], blocks: number[]][],
): void {
  const expected = new Map<bigint, bigint>();
  for (const [hashes, tokens, blocks] of want) {
    const local = computeBlockHashes(tokens, BS);
    for (const b of blocks) expected.set(hashes[b]!, local[b]!);
  }
  expect(new Map([...got].sort())).toEqual(new Map([...expected].sort()));
}

/**
 * What each medium alone holds of a request, from block 0: the index's tierScores are reaches
 * through the rank's GPU prefix first (gpu <= cpu <= disk), so each medium is read from a copy
 * of the index holding that medium only (its dump's events for it). `reach` is the index's own.
 */
function overlap(tree: RadixTree, tokens: number[]): Record<KvMedium, number> {
  const hashes = computeBlockHashes(tokens, BS);
  const key = `${W}:0`;
  const alone = (m: KvMedium) => {
    const copy = new RadixTree();
    for (const e of tree.dump()) if ((e.event.medium ?? "gpu") === m) copy.applyEvent(e);
    const s = copy.findMatches(hashes);
    return m === "gpu" ? (s.scores.get(key) ?? 0) : (s.tierScores?.get(m)?.get(key) ?? 0);
  };
  return { gpu: alone("gpu"), cpu: alone("cpu"), disk: alone("disk") };
}
function reach(tree: RadixTree, tokens: number[]): Record<KvMedium, number> {
  const s = tree.findMatches(computeBlockHashes(tokens, BS));
  const key = `${W}:0`;
  return {
    gpu: s.scores.get(key) ?? 0,
    cpu: s.tierScores?.get("cpu")?.get(key) ?? 0,
    disk: s.tierScores?.get("disk")?.get(key) ?? 0,
  };
}

describe("vLLM OffloadingConnector events into the index (16-token GPU blocks, 48-token CPU blocks)", () => {
  test("self-describing chunks: every medium held exactly, shared hashes reference-counted, Cleared empties all", async () => {
    const { p, tree, applied, sub, settle } = await fleet();
    const engine = { block_size: BS, blocks_per_chunk: CHUNK_BLOCKS, self_describing: true };

    // A computed on the GPU and both its chunks offloaded to CPU; B shares 4 blocks, stores 2
    // new ones and offloads its chunk 1 (blocks 3..5: block 3 is A's, announced again).
    const r1 = await p.tiered(
      [
        {
          ops: [
            { op: "request", req: "a", tokens: TOKENS_A },
            { op: "gpu_store", req: "a" },
            { op: "offload", req: "a", chunks: [0, 1] },
          ],
        },
        {
          ops: [
            { op: "request", req: "b", tokens: TOKENS_B },
            { op: "gpu_store", req: "b" },
            { op: "offload", req: "b", chunks: [1] },
          ],
        },
        // The GPU evicts A's last block; A's chunk 0 is written to the STORAGE tier too.
        {
          ops: [
            { op: "gpu_evict", req: "a", blocks: [5] },
            { op: "offload", req: "a", chunks: [0], medium: "STORAGE" },
          ],
        },
      ],
      engine,
    );
    const A = r1.hashes.a!;
    const B = r1.hashes.b!;
    expect(A.slice(0, 4)).toEqual(B.slice(0, 4)); // one engine, one hash per (prefix, block)
    await settle(r1.seqs[2]!);

    expect(applied.every((a) => a.status === "ok")).toBe(true);
    const h = holdings(tree);
    expectHeld(h.gpu, [
      [A, TOKENS_A, [0, 1, 2, 3, 4]],
      [B, TOKENS_B, [4, 5]],
    ]);
    expectHeld(h.cpu, [
      [A, TOKENS_A, [0, 1, 2, 3, 4, 5]],
      [B, TOKENS_B, [4, 5]],
    ]);
    expectHeld(h.disk, [[A, TOKENS_A, [0, 1, 2]]]);
    expect(overlap(tree, TOKENS_A)).toEqual({ gpu: 5, cpu: 6, disk: 3 });
    // Through the rank's media, as its engine loads: GPU 5, CPU to 6, CPU or disk to 6.
    expect(reach(tree, TOKENS_A)).toEqual({ gpu: 5, cpu: 6, disk: 6 });
    expect(overlap(tree, TOKENS_B)).toEqual({ gpu: 6, cpu: 6, disk: 3 });
    expect(tree.mediumSize({ workerId: W, dpRank: 0 }, "cpu")).toBe(8);
    expect(tree.workerSize(`${W}:0`)).toBe(7); // GPU blocks only, as before tiers
    expect(sub.stats().decode).toMatchObject({
      tier: 4,
      placeholder: 0,
      otherMedium: 0,
      blockSizeMismatch: 0,
    });

    // A's chunk 1 leaves the CPU: its removal names blocks 3..5, but block 3 was announced
    // twice (B's chunk 1 too), so the CPU keeps it until B's chunk 1 leaves as well.
    const r2 = await p.tiered([{ ops: [{ op: "offload_evict", req: "a", chunks: [1] }] }]);
    await settle(r2.seqs[0]!);
    expectHeld(holdings(tree).cpu, [
      [A, TOKENS_A, [0, 1, 2, 3]],
      [B, TOKENS_B, [4, 5]],
    ]);
    expect(overlap(tree, TOKENS_A)).toEqual({ gpu: 5, cpu: 4, disk: 3 });
    expect(overlap(tree, TOKENS_B)).toEqual({ gpu: 6, cpu: 6, disk: 3 });

    const r3 = await p.tiered([{ ops: [{ op: "offload_evict", req: "b", chunks: [1] }] }]);
    await settle(r3.seqs[0]!);
    expectHeld(holdings(tree).cpu, [[A, TOKENS_A, [0, 1, 2]]]);
    expect(overlap(tree, TOKENS_B)).toEqual({ gpu: 6, cpu: 3, disk: 3 });
    expect(applied.every((a) => a.status === "ok")).toBe(true);

    // vLLM's AllBlocksCleared names no medium: the engine's every tier empties, the rank stays known.
    const r4 = await p.tiered([{ ops: [{ op: "cleared" }] }]);
    await settle(r4.seqs[0]!);
    expect(overlap(tree, TOKENS_A)).toEqual({ gpu: 0, cpu: 0, disk: 0 });
    expect(tree.size()).toBe(0);
    expect(tree.nodeCount()).toBe(0);
    expect(tree.knownWorkers()).toEqual([{ workerId: W, dpRank: 0 }]);
  });

  test("vLLM 0.11 placeholders (a 48-token chunk named by its last block's hash, no tokens) are placed through the engine's own blocks", async () => {
    const { p, tree, applied, sub, settle } = await fleet();
    const r = await p.tiered(
      [
        {
          ops: [
            { op: "request", req: "a", tokens: TOKENS_A },
            { op: "gpu_store", req: "a" },
            { op: "offload", req: "a", chunks: [0, 1] },
          ],
        },
        // The GPU evicts A's second chunk; B (A's first 4 blocks, then its own) is offloaded too:
        // its chunk 1 starts with A's block 3, which only the CPU still holds.
        {
          ops: [
            { op: "gpu_evict", req: "a", blocks: [3, 4, 5] },
            { op: "request", req: "b", tokens: TOKENS_B },
            { op: "gpu_store", req: "b" },
            { op: "offload", req: "b", chunks: [1] },
          ],
        },
      ],
      { block_size: BS, blocks_per_chunk: CHUNK_BLOCKS, self_describing: false, legacy: true },
    );
    await settle(r.seqs[1]!);
    expect(applied.map((a) => a.status)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    expect(sub.stats().decode).toMatchObject({ chunkRefs: 2, placeholder: 0, tier: 2 });
    const all = (tokens: number[]) => [...computeBlockHashes(tokens, BS)].sort();
    const tokensHeld = (m: Map<bigint, bigint>) => [...new Set(m.values())].sort();
    expect(tokensHeld(holdings(tree).cpu)).toEqual(
      [...new Set([...all(TOKENS_A), ...all(TOKENS_B)])].sort(),
    );
    // B recomputed block 3 on the GPU (the engine had evicted it), so A matches 4 there.
    expect(overlap(tree, TOKENS_A)).toEqual({ gpu: 4, cpu: 6, disk: 0 });
    expect(overlap(tree, TOKENS_B)).toEqual({ gpu: 6, cpu: 6, disk: 0 });

    // A's chunk 1 leaves the CPU: blocks 4 and 5 go, block 3 stays (B's chunk 1 holds it). The
    // GPU evicts A's chunk 0, which then goes to the disk tier: placed through the CPU's copy.
    // A chunk of a request the engine never reported on any medium cannot be placed.
    const r2 = await p.tiered([
      {
        ops: [
          { op: "offload_evict", req: "a", chunks: [1] },
          { op: "gpu_evict", req: "a", blocks: [0, 1, 2] },
          { op: "offload", req: "a", chunks: [0], medium: "STORAGE" },
        ],
      },
      {
        ops: [
          { op: "request", req: "c", tokens: range(5000, 5048) },
          { op: "offload", req: "c", chunks: [0] },
        ],
      },
    ]);
    await settle(r2.seqs[1]!);
    expect(
      applied
        .slice(5)
        .map((a) => [a.event.event.medium ?? "gpu", a.event.event.data.type, a.status]),
    ).toEqual([
      ["cpu", "removed", "ok"],
      ["gpu", "removed", "ok"],
      ["disk", "stored", "ok"],
      ["cpu", "stored", "block_not_found"],
    ]);
    expect(overlap(tree, TOKENS_A)).toEqual({ gpu: 0, cpu: 4, disk: 3 });
    expect(overlap(tree, TOKENS_B)).toEqual({ gpu: 0, cpu: 6, disk: 3 });
    expect(tree.mediumSize({ workerId: W, dpRank: 0 }, "cpu")).toBe(6);
  });

  test("placeholder payloads (no tokens, no parent) and REMOTE tiers are counted and skipped; the GPU is untouched", async () => {
    const { p, tree, sub, settle } = await fleet();
    const r = await p.tiered(
      [
        {
          ops: [
            { op: "request", req: "a", tokens: TOKENS_A },
            { op: "gpu_store", req: "a" },
            { op: "offload", req: "a", chunks: [0, 1] },
          ],
        },
      ],
      { block_size: BS, blocks_per_chunk: CHUNK_BLOCKS, self_describing: false },
    );
    const A = r.hashes.a!;
    // Self-describing again, into a shared file system tier that is not this engine's own.
    const r2 = await p.tiered(
      [
        {
          ops: [
            { op: "request", req: "a", tokens: TOKENS_A },
            { op: "offload", req: "a", chunks: [0], medium: "STORAGE", locality: "REMOTE" },
          ],
        },
      ],
      { block_size: BS, blocks_per_chunk: CHUNK_BLOCKS, self_describing: true },
    );
    await settle(r2.seqs[0]!);
    expect(sub.stats().decode).toMatchObject({
      placeholder: 2,
      otherMedium: 1,
      tier: 0,
      stored: 1,
    });
    const h = holdings(tree);
    expectHeld(h.gpu, [[A, TOKENS_A, [0, 1, 2, 3, 4, 5]]]);
    expect(h.cpu.size + h.disk.size).toBe(0);
    expect(overlap(tree, TOKENS_A)).toEqual({ gpu: 6, cpu: 0, disk: 0 });
  });
});
