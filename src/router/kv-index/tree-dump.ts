/**
 * The radix tree as a list of Stored/Removed events that rebuild an equal tree when replayed
 * in order into an empty index (Dynamo's dump_tree_as_events, used by recovery and the worker-local indexer).
 *
 * Per (worker, dp_rank, medium), ordered by (worker_id, dp_rank, medium: GPU, CPU, disk), each
 * event carrying its medium (none for GPU, as before tiers); per holder, its blocks in
 * breadth-first order (by depth), one Stored event per block, parent_hash = the worker's
 * own hash of the parent, event ids 0, 1, 2, … across the dump. Each worker's own engine
 * hashes are emitted (Dynamo emitted the node's first hash for every worker, which loses the
 * per-worker lookups when engines hash differently).
 *
 * A worker can hold a block whose parent it does not hold (the engine evicted the parent
 * and kept the child). There is no parent hash to name then, so the block is emitted as one
 * Stored of the missing path (with synthetic hashes the worker does not use) followed by a
 * Removed of those synthetic hashes: replayed, the worker holds exactly the block, and the
 * path nodes exist as in the original.
 *
 * A tier's hash announced n extra times (WorkerSlot.repeats) is emitted n extra times, so the
 * replayed tier needs as many removals as the original.
 */
import type { RouterEvent, StoredBlock } from "../../core/events.ts";
import { removedEvent, storedEvent } from "../../core/events.ts";
import type { NodeStore } from "./node-store.ts";
import { PARENT, PATH_HI, PATH_LO, ROOT } from "./node-store.ts";
import { PATH_OUT, tokensOf } from "./path-hash.ts";
import { join } from "./u64-split.ts";
import type { WorkerSlot, WorkerSlots } from "./worker-slots.ts";

export function dumpTree(nodes: NodeStore, slots: WorkerSlots): RouterEvent[] {
  const depth = depths(nodes);
  const events: RouterEvent[] = [];
  /** node -> index of the current worker's first entry holding it, or -1. */
  const entryOf = new Int32Array(nodes.idLimit).fill(-1);
  let eventId = 0n;

  for (const slot of slots.sorted()) {
    const count = slot.blocks.size;
    const lo = new Uint32Array(count);
    const hi = new Uint32Array(count);
    const node = new Int32Array(count);
    let k = 0;
    slot.blocks.forEach((l, h, n) => {
      lo[k] = l;
      hi[k] = h;
      node[k] = n;
      if (entryOf[n] === -1) entryOf[n] = k;
      k++;
    });
    const order = Array.from({ length: count }, (_, i) => i);
    order.sort(
      (a, b) =>
        depth[node[a]!]! - depth[node[b]!]! ||
        node[a]! - node[b]! ||
        hi[a]! - hi[b]! ||
        lo[a]! - lo[b]!,
    );

    for (const e of order) {
      const n = node[e]!;
      const block: StoredBlock = {
        blockHash: join(lo[e]!, hi[e]!),
        tokensHash: tokensHashOf(nodes, n),
      };
      // Path nodes between the nearest ancestor this worker holds (or the root) and n.
      const path: number[] = [];
      let p = nodes.get(n, PARENT);
      while (p !== ROOT && entryOf[p] === -1) {
        path.push(p);
        p = nodes.get(p, PARENT);
      }
      const parentHash = p === ROOT ? null : join(lo[entryOf[p]!]!, hi[entryOf[p]!]!);
      const times = 1 + (slot.repeats?.get(block.blockHash) ?? 0);
      if (path.length === 0) {
        for (let t = 0; t < times; t++)
          events.push(
            storedEvent(slot.workerId, eventId++, [block], parentHash, slot.dpRank, slot.medium),
          );
        continue;
      }
      path.reverse();
      const synthetic = syntheticHashes(slot, path, nodes);
      const blocks = path.map((q, i) => ({
        blockHash: synthetic[i]!,
        tokensHash: tokensHashOf(nodes, q),
      }));
      blocks.push(block);
      for (let t = 0; t < times; t++) {
        events.push(
          storedEvent(slot.workerId, eventId++, blocks, parentHash, slot.dpRank, slot.medium),
        );
        events.push(removedEvent(slot.workerId, eventId++, synthetic, slot.dpRank, slot.medium));
      }
    }
    for (let i = 0; i < count; i++) entryOf[node[i]!] = -1;
  }
  return events;
}

function tokensHashOf(nodes: NodeStore, n: number): bigint {
  const p = nodes.get(n, PARENT);
  tokensOf(
    nodes.get(p, PATH_LO),
    nodes.get(p, PATH_HI),
    nodes.get(n, PATH_LO),
    nodes.get(n, PATH_HI),
  );
  return join(PATH_OUT[0]!, PATH_OUT[1]!);
}

/** Depth of every live node (root 0), -1 for free ids. */
function depths(nodes: NodeStore): Int32Array {
  const limit = nodes.idLimit;
  const depth = new Int32Array(limit).fill(-1);
  depth[ROOT] = 0;
  const stack: number[] = [];
  for (let n = 1; n < limit; n++) {
    if (!nodes.isLive(n) || depth[n] !== -1) continue;
    let q = n;
    while (depth[q] === -1) {
      stack.push(q);
      q = nodes.get(q, PARENT);
    }
    let d = depth[q]!;
    while (stack.length > 0) depth[stack.pop()!] = ++d;
  }
  return depth;
}

/** One hash per path node that the worker does not use and that are distinct. */
function syntheticHashes(slot: WorkerSlot, path: readonly number[], nodes: NodeStore): bigint[] {
  const out: bigint[] = [];
  for (const q of path) {
    let lo = (nodes.get(q, PATH_LO) ^ 0x5bd1e995) >>> 0;
    const hi = (nodes.get(q, PATH_HI) ^ 0x27d4eb2f) >>> 0;
    for (;;) {
      const h = join(lo, hi);
      if (slot.blocks.get(lo, hi) < 0 && !out.includes(h)) {
        out.push(h);
        break;
      }
      lo = (lo + 1) >>> 0;
    }
  }
  return out;
}
