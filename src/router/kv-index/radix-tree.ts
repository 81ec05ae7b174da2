/**
 * The precise KV index (Dynamo's RadixTree): a radix tree of blocks keyed by the router's local
 * block hash, with a lookup per (worker, dp_rank) from the engine's block hash to the node.
 *
 * Layout (for 64+ workers and millions of blocks): a node is an int id with a 32-byte record
 * in one Int32Array (NodeStore): parent, path hash, child count, first child, and worker
 * membership (the one worker slot inline, or a bitset row when several hold it). A node's first child is linked in its record; further children go
 * to one open-addressing edge table for the whole tree (ChildTable), addressed by the child's
 * path hash (path-hash.ts) so lookups never hash a bigint. Each worker's lookup is a U64BucketMap.
 * No object is allocated per block; hot loops pre-load the cache lines they will need
 * (random misses overlap instead of queueing), which is most of the speed at 1M+ blocks.
 *
 * Semantics, and where they differ from Dynamo's classic RadixTree:
 * - Stored: parent found through the worker's own lookup (for a medium, then the rank's other
 *   media: one hash names a block on every medium); unknown parent rejects the whole
 *   event (parent_block_not_found). A parent hash repeated among the blocks, or a block hash
 *   repeated inside the event, is a self-referencing chain: rejected whole (invalid_block),
 *   nothing applied (Dynamo's newer up-front check; the classic tree half-applied it).
 * - A worker may hold a node under a different engine hash than other workers (vLLM without
 *   a fixed PYTHONHASHSEED): the tree is keyed by local hash, lookups by each worker's hash,
 *   and dump() emits each worker's own hashes. A worker re-storing a hash it already holds
 *   elsewhere moves that hash to the new position (Dynamo grafted the old node, which can
 *   build cycles); a second hash for a node it already holds counts as an extra alias.
 * - Removed is the classic, non-cascading one: exactly the listed blocks leave the worker's
 *   set, so the index equals what the engine reported it holds (an engine that evicts a
 *   parent but keeps a child still has the child; a later Stored naming it as parent works).
 *   Unknown hashes: block_not_found, the rest still applied.
 * - Freeing: a node lives while a worker holds it or it has live children. A node nobody
 *   holds and without children is unlinked and its id reused at once, cascading up; so after
 *   every worker is gone the tree is empty. A node nobody holds but with held descendants
 *   (the evicted-parent case) stays as a path node: matching stops there (nobody holds it),
 *   and a later re-store of the parent re-attaches the kept children. Dynamo instead cleared
 *   the children of an emptied node and kept the empty node, which leaks under churn.
 * - find-matches intersects worker sets level by level (score = leading blocks held); it does
 *   not rely on a child's workers being a subset of its parent's, which path nodes break.
 * - Tiers: a holder is (worker, dp_rank, medium). An engine's CPU or disk tier (vLLM's offloading
 *   connector, SGLang's HiCache) is a slot of its own with its own lookup, in the same tree and
 *   the same holder sets, so a block on GPU and CPU is one node held twice. find-matches scores
 *   GPU slots into `scores` exactly as without tiers, and tier slots beside it (`tierScores`).
 *   A tier counts repeated announcements of a hash (vLLM re-announces hashes shared by two
 *   offloaded chunks) and keeps the block until as many removals came; the GPU does not. A tier
 *   can also hold chunks named only by their last block's hash (applyChunks); a dump writes
 *   their blocks out one by one, so a replayed index holds the same blocks but no longer knows
 *   them as chunks (a later removal by the chunk's hash then removes only its last block).
 * - Cleared clears the (worker, dp_rank) whose stream sent it, and only that one: event ids
 *   are dense per (worker, dp_rank) publisher, so a Cleared speaks for its own rank (Dynamo's
 *   reference tree cleared every rank of the worker); with a medium, only that medium of it,
 *   without one every medium (vLLM's AllBlocksCleared, an engine restart). The rank stays known, empty.
 *   Forgetting a worker or a rank is a separate operation: removeWorker / removeWorkerDpRank.
 */
import type {
  KvEventStatus,
  KvMedium,
  RemovedData,
  RouterEvent,
  StoredBlock,
} from "../../core/events.ts";
import type { DpRank, WorkerId, WorkerKey, WorkerWithDpRank } from "../../core/ids.ts";
import { parseWorkerKey } from "../../core/ids.ts";
import type { OverlapScores } from "../../core/overlap.ts";
import { ChildTable } from "./child-table.ts";
import { copyEventCounters, emptyEventCounters } from "./event-counters.ts";
import {
  CHILD0,
  CHILDREN,
  HOLDERS,
  NodeStore,
  pairSecond,
  PARENT,
  PATH_HI,
  PATH_LO,
  ROOT,
  ROW,
  SOLE,
  STRIDE,
} from "./node-store.ts";
import { childPath, PATH_OUT, ROOT_PATH_HI, ROOT_PATH_LO } from "./path-hash.ts";
import { dumpTree } from "./tree-dump.ts";
import type { EventCounters, KvIndex } from "./types.ts";
import { mix3, pow2AtLeast } from "./hash-mix.ts";
import { U64BucketMap } from "./u64-bucket-map.ts";
import { join, splitInto, wordsOf } from "./u64-split.ts";
import type { WorkerSlot } from "./worker-slots.ts";
import { WorkerSlots } from "./worker-slots.ts";

/** Above this many blocks an event's duplicate check uses a hash set instead of pairs. */
const PAIRWISE_CHECK_MAX = 32;
/**
 * find-matches walks the request in chunks of this many levels: it resolves the chunk's
 * nodes, pre-loads their worker rows (independent loads overlap; a chain of dependent
 * misses would not), then intersects the worker sets on cache-warm lines.
 */
const CHUNK = 16;
/** Removed: a hash whose repeated announcement was dropped, the block still held. */
const KEPT = -2;

export class RadixTree implements KvIndex {
  private readonly nodes = new NodeStore();
  private readonly edges = new ChildTable();
  private readonly slots = new WorkerSlots();
  private readonly applied = emptyEventCounters();
  /**
   * Event blocks split to u32 halves: [lo, hi] per block, as views over 64-bit scratch so a
   * BigUint64Array event is copied in with one set() (a view over the caller's array would be a
   * new object per event, and asking a small typed array for its .buffer makes the engine
   * move its storage: that cost more than the copy).
   */
  private tokBig = new BigUint64Array(32);
  private hashBig = new BigUint64Array(32);
  private tokWords = new Uint32Array(this.tokBig.buffer);
  private hashWords = new Uint32Array(this.hashBig.buffer);
  /** An event's parent hash split: [lo, hi]. */
  private readonly parentWords = new Uint32Array(2);
  /** Path hashes of a chain being stored: [lo, hi] per level. */
  private pathWords = new Int32Array(64);
  /** Where each block's lookup probe starts (see touchHomes). */
  private homes = new Int32Array(32);
  /** Removed: the node each hash named. */
  private held = new Int32Array(32);
  /** find-matches scratch: the chunk's nodes, the active worker bitset, the slots scored. */
  private kids = new Int32Array(CHUNK);
  private active = new Int32Array(1);
  private scored = new Int32Array(64);
  /** Sum of pre-loaded words, kept so the loads cannot be optimised away. */
  private sink = 0;
  /** tierReach's scratch: the prompt's path nodes. */
  private tierPath = new Int32Array(64);

  // ------------------------------------------------------------------ events

  applyEvent(event: RouterEvent): KvEventStatus {
    const { workerId, event: ev } = event;
    const data = ev.data;
    // Every event kind makes its (worker, dp_rank, medium) known, as Dynamo's tree does.
    const slot = this.internSlot(workerId, ev.dpRank, ev.medium);
    let status: KvEventStatus;
    switch (data.type) {
      case "stored":
        status =
          data.chunks === undefined
            ? this.applyStoredBlocks(slot, data.parentHash, data.blocks)
            : this.applyChunks(slot, data.chunks.tailHashes, data.chunks.span);
        break;
      case "removed":
        status = this.applyRemoved(slot, data);
        break;
      case "cleared":
        // No medium: the engine reset (or restarted) as a whole, every medium of the rank empties.
        if (ev.medium === undefined)
          for (const s of this.slots.mediaOf(workerId, ev.dpRank)) this.clearSlot(s);
        else this.clearSlot(slot);
        this.compactIfSparse();
        status = "ok";
        break;
    }
    this.applied[data.type][status]++;
    return status;
  }

  /**
   * Stored without event objects: block i is (tokensHashes[i], blockHashes[i]). For
   * adapters that decode events straight into typed arrays. Counted like applyEvent.
   */
  storeHashes(
    workerId: WorkerId,
    dpRank: DpRank,
    parentHash: bigint | null,
    tokensHashes: BigUint64Array,
    blockHashes: BigUint64Array,
  ): KvEventStatus {
    const n = tokensHashes.length;
    if (n !== blockHashes.length)
      throw new RangeError("tokensHashes and blockHashes differ in length");
    const slot = this.internSlot(workerId, dpRank);
    let pLo = 0;
    let pHi = 0;
    if (parentHash !== null) {
      splitInto(parentHash, this.parentWords, 0);
      pLo = this.parentWords[0]!;
      pHi = this.parentWords[1]!;
    }
    this.fitBlocks(n);
    this.tokBig.set(tokensHashes);
    this.hashBig.set(blockHashes);
    const status = this.storeChain(
      slot,
      parentHash !== null,
      pLo,
      pHi,
      this.tokWords,
      this.hashWords,
      n,
    );
    this.applied.stored[status]++;
    return status;
  }

  // ------------------------------------------------------------------ queries

  findMatches(localHashes: BigUint64Array, _now?: number): OverlapScores {
    const scores = new Map<WorkerKey, number>();
    const treeSizes = new Map<WorkerKey, number>();
    const result: OverlapScores = {
      scores,
      treeSizes,
      frequencies: [],
      indexBlocksOf: this.indexBlocksOf,
    };
    const n = localHashes.length;
    if (n === 0) return result;
    const v = wordsOf(localHashes);
    const nodes = this.nodes;
    const rec = nodes.rec;
    const stride = nodes.stride;
    const rowBits = nodes.rows.bits;
    const words = nodes.rows.words;
    if (this.active.length !== words) this.active = new Int32Array(words);
    // The workers still matching: a bitset, and `single` >= 0 when it is known to hold just
    // that slot (the usual case after the first level), so a node held by one worker is
    // settled in O(1) instead of a walk over every word.
    const active = this.active;
    let single = -1;
    const kids = this.kids;
    let sink = 0;
    let cur = ROOT;
    let lo = ROOT_PATH_LO;
    let hi = ROOT_PATH_HI;
    let depth = 0; // levels matched by the surviving workers
    let nScored = 0;

    walk: for (let base = 0; base < n; base += CHUNK) {
      const m = Math.min(CHUNK, n - base);
      let r = 0;
      while (r < m) {
        const i = base + r;
        childPath(lo, hi, v[2 * i]!, v[2 * i + 1]!);
        lo = PATH_OUT[0]!;
        hi = PATH_OUT[1]!;
        const c = this.findChild(cur, lo, hi);
        if (c < 0) break;
        kids[r++] = c;
        cur = c;
      }
      for (let j = 0; j < r; j++) sink += rec[kids[j]! * stride + HOLDERS]!;
      for (let j = 0; j < r; j++) {
        const at = kids[j]! * stride;
        const holders = rec[at + HOLDERS]!;
        if (holders <= 0) break walk; // a path node nobody holds: everyone still active stops here
        if (holders === 1) {
          const s = rec[at + SOLE]!;
          if (depth === 0) {
            active[s >>> 5] = 1 << (s & 31);
            single = s;
          } else if (single !== s) {
            // Everyone but s stops at `depth`; s goes on if it was still matching.
            const k = s >>> 5;
            const bit = 1 << (s & 31);
            const had = (active[k]! & bit) !== 0;
            if (had) active[k] = active[k]! & ~bit;
            nScored = this.scoreAll(scores, active, depth, nScored);
            if (!had) break walk;
            active[k] = bit;
            single = s;
          }
        } else if (holders === 2) {
          // Two holders inline (SOLE and the pair's second in ROW): a block on one engine's GPU
          // and CPU, or on two engines, needs no row.
          const a = rec[at + SOLE]!;
          const b = pairSecond(rec[at + ROW]!);
          if (depth === 0) {
            active[a >>> 5] = active[a >>> 5]! | (1 << (a & 31));
            active[b >>> 5] = active[b >>> 5]! | (1 << (b & 31));
            single = -1;
          } else if (single >= 0) {
            if (single !== a && single !== b) break walk;
          } else {
            const ka = a >>> 5;
            const kb = b >>> 5;
            const ba = 1 << (a & 31);
            const bb = 1 << (b & 31);
            const hasA = (active[ka]! & ba) !== 0;
            const hasB = (active[kb]! & bb) !== 0;
            if (hasA) active[ka] = active[ka]! & ~ba;
            if (hasB) active[kb] = active[kb]! & ~bb;
            // Everyone else stops at `depth`; a and b go on if they were still matching.
            nScored = this.scoreAll(scores, active, depth, nScored);
            if (!hasA && !hasB) break walk;
            if (hasA) active[ka] = active[ka]! | ba;
            if (hasB) active[kb] = active[kb]! | bb;
            single = hasA && hasB ? -1 : hasA ? a : b;
          }
        } else {
          const row = rec[at + ROW]! * words;
          let any = 0;
          if (depth === 0) {
            for (let k = 0; k < words; k++) {
              const word = rowBits[row + k]!;
              active[k] = word;
              any |= word;
            }
            single = -1;
          } else if (single >= 0) {
            if ((rowBits[row + (single >>> 5)]! & (1 << (single & 31))) === 0) break walk;
            any = 1;
          } else {
            for (let k = 0; k < words; k++) {
              const a = active[k]!;
              if (a === 0) continue;
              const na = a & rowBits[row + k]!;
              if (na !== a) {
                // Workers in `a` but not in this node stop matching at `depth` blocks.
                nScored = this.score(scores, k, a ^ na, depth, nScored);
                active[k] = na;
              }
              any |= na;
            }
          }
          if (any === 0) break walk;
        }
        depth++;
      }
      if (r < m) break;
    }
    if (depth > 0) nScored = this.scoreAll(scores, active, depth, nScored);
    else active.fill(0);
    this.sink = sink;
    for (let j = 0; j < nScored; j++) {
      const slot = this.slots.bySlot[this.scored[j]!]!;
      treeSizes.set(slot.key, slot.blocks.size);
    }
    if (this.slots.tierSlots === 0) return result;
    const tierScores = this.tierReach(v, n, scores);
    return tierScores === undefined ? result : { ...result, tierScores };
  }

  /**
   * Per (worker, rank) with a lower tier, how far its own media take the prompt, counted as
   * its engine loads it: the GPU prefix, then the blocks right after it on CPU (the "cpu"
   * reach), then those on CPU or disk (the "disk" reach). So gpu <= cpu <= disk, Dynamo's
   * cumulative per-tier shape (ai-dynamo/dynamo lib/kv-router indexer /query: host and disk
   * "extension" blocks beyond the device match), and a GPU head with a CPU-only tail counts as
   * loadable. A medium is reported where it adds blocks or holds the first one.
   * One more walk of the prompt's path, only when some engine reports a tier.
   */
  private tierReach(
    v: Uint32Array,
    n: number,
    gpu: ReadonlyMap<WorkerKey, number>,
  ): Map<KvMedium, Map<WorkerKey, number>> | undefined {
    let len = 0;
    let cur = ROOT;
    let lo = ROOT_PATH_LO;
    let hi = ROOT_PATH_HI;
    for (let i = 0; i < n; i++) {
      childPath(lo, hi, v[2 * i]!, v[2 * i + 1]!);
      lo = PATH_OUT[0]!;
      hi = PATH_OUT[1]!;
      const c = this.findChild(cur, lo, hi);
      if (c < 0) break;
      if (len === this.tierPath.length) {
        const grown = new Int32Array(len * 2);
        grown.set(this.tierPath);
        this.tierPath = grown;
      }
      this.tierPath[len++] = c;
      cur = c;
    }
    if (len === 0) return undefined;
    const nodes = this.nodes;
    const steps = this.tierPath;
    let out: Map<KvMedium, Map<WorkerKey, number>> | undefined;
    const seen = new Set<WorkerKey>();
    // Every rank that can reach a block holds the first one on some medium.
    for (const index of this.holdersOf(steps[0]!)) {
      const first = this.slots.bySlot[index]!;
      if (seen.has(first.key)) continue;
      seen.add(first.key);
      const media = this.slots.mediaOf(first.workerId, first.dpRank);
      let cpu = -1;
      let disk = -1;
      for (const m of media)
        if (m.medium === "cpu") cpu = m.index;
        else if (m.medium === "disk") disk = m.index;
      if (cpu < 0 && disk < 0) continue;
      const g = gpu.get(first.key) ?? 0;
      let i = g;
      if (cpu >= 0) while (i < len && nodes.hasHolder(steps[i]!, cpu)) i++;
      const cpuReach = i;
      while (
        i < len &&
        ((cpu >= 0 && nodes.hasHolder(steps[i]!, cpu)) ||
          (disk >= 0 && nodes.hasHolder(steps[i]!, disk)))
      )
        i++;
      const diskReach = i;
      const put = (medium: KvMedium, slot: number, reach: number) => {
        if (slot < 0 || reach === 0 || (reach === g && !nodes.hasHolder(steps[0]!, slot))) return;
        out ??= new Map();
        let m = out.get(medium);
        if (m === undefined) out.set(medium, (m = new Map()));
        m.set(first.key, reach);
      };
      put("cpu", cpu, cpuReach);
      put("disk", disk, diskReach);
    }
    return out;
  }

  /** The slots holding node n. */
  private holdersOf(n: number): number[] {
    const rec = this.nodes.rec;
    const at = n * this.nodes.stride;
    const holders = rec[at + HOLDERS]!;
    if (holders <= 0) return [];
    if (holders === 1) return [rec[at + SOLE]!];
    if (holders === 2) return [rec[at + SOLE]!, pairSecond(rec[at + ROW]!)];
    const out: number[] = [];
    const words = this.nodes.rows.words;
    const row = rec[at + ROW]! * words;
    const bits = this.nodes.rows.bits;
    for (let k = 0; k < words; k++) {
      let b = bits[row + k]!;
      while (b !== 0) {
        const low = b & -b;
        out.push(k * 32 + 31 - Math.clz32(low));
        b ^= low;
      }
    }
    return out;
  }

  /** Score every slot still in `active` at `depth`, and empty it. */
  private scoreAll(
    scores: Map<WorkerKey, number>,
    active: Int32Array,
    depth: number,
    nScored: number,
  ): number {
    for (let k = 0; k < active.length; k++) {
      const a = active[k]!;
      if (a !== 0) {
        nScored = this.score(scores, k, a, depth, nScored);
        active[k] = 0;
      }
    }
    return nScored;
  }

  size(): number {
    let total = 0;
    for (const s of this.slots.bySlot) if (s) total += s.blocks.size;
    return total;
  }

  /**
   * A (worker, rank)'s blocks, bound once: every findMatches result carries it
   * (OverlapScores.indexBlocksOf). By worker, not key: a key is parsed back into a bigint, and a
   * cold prompt on an idle fleet reads this for every candidate (2,048 reads at 1,024 ranks: ~185 µs by key, ~52 by worker).
   */
  private readonly indexBlocksOf = (w: WorkerWithDpRank): number =>
    this.slots.find(w.workerId, w.dpRank)?.blocks.size ?? 0;

  /** Whether any (worker, dp_rank) has a CPU or disk tier here. */
  hasTiers(): boolean {
    return this.slots.tierSlots > 0;
  }

  /** Blocks one (worker, dp_rank) holds on one medium. */
  mediumSize(w: WorkerWithDpRank, medium: KvMedium): number {
    return this.slots.find(w.workerId, w.dpRank, medium)?.blocks.size ?? 0;
  }

  workerSize(key: WorkerKey): number {
    let w: WorkerWithDpRank;
    try {
      w = parseWorkerKey(key);
    } catch {
      return 0;
    }
    return this.indexBlocksOf(w);
  }

  /** Known (worker, dp_rank) pairs, including cleared ones, ordered (Dynamo's RadixTree::get_workers). */
  knownWorkers(): WorkerWithDpRank[] {
    const out: WorkerWithDpRank[] = [];
    for (const s of this.slots.sorted()) {
      const last = out[out.length - 1];
      // Sorted by (worker, rank, medium): a rank's tiers follow its GPU slot.
      if (last !== undefined && last.workerId === s.workerId && last.dpRank === s.dpRank) continue;
      out.push({ workerId: s.workerId, dpRank: s.dpRank });
    }
    return out;
  }

  nodeCount(): number {
    return this.nodes.live;
  }

  counters(): EventCounters {
    return copyEventCounters(this.applied);
  }

  /** Bytes held by the index's typed arrays (nodes, edges, lookups). */
  memoryBytes(): number {
    let bytes = this.nodes.bytes() + this.edges.capacity * 16;
    for (const s of this.slots.bySlot) if (s) bytes += s.blocks.bytes();
    return bytes;
  }

  dump(): RouterEvent[] {
    return dumpTree(this.nodes, this.slots);
  }

  // ------------------------------------------------------------------ workers

  removeWorker(workerId: WorkerId): void {
    for (const s of this.slots.ranksOf(workerId)) {
      this.clearSlot(s);
      this.slots.release(s);
    }
    this.afterRemovals();
  }

  removeWorkerDpRank(workerId: WorkerId, dpRank: DpRank): void {
    const media = this.slots.mediaOf(workerId, dpRank);
    if (media.length === 0) return;
    for (const s of media) {
      this.clearSlot(s);
      this.slots.release(s);
    }
    this.afterRemovals();
  }

  /** The precise index learns from engine events only. */
  recordDecision(): void {}

  expire(): void {}

  // ------------------------------------------------------------------ for ApproxIndex

  /** The slot of a (worker, dp_rank, medium: GPU unless named), created when missing. */
  internSlot(workerId: WorkerId, dpRank: DpRank, medium: KvMedium = "gpu"): WorkerSlot {
    const slot = this.slots.intern(workerId, dpRank, medium);
    if (slot.index >= this.nodes.rows.words * 32) this.nodes.fitWorkers(this.slots.span);
    return slot;
  }

  /** The slot of a (worker, dp_rank), if known. */
  slotOf(workerId: WorkerId, dpRank: DpRank): WorkerSlot | undefined {
    return this.slots.find(workerId, dpRank);
  }

  /** The slot with this index, if live. */
  slotAt(index: number): WorkerSlot | undefined {
    return this.slots.bySlot[index];
  }

  /** Remove one block (engine hash lo/hi) from a slot; false when the slot lacks it. */
  removeHash(slot: WorkerSlot, lo: number, hi: number): boolean {
    const n = slot.blocks.delete(lo, hi);
    if (n < 0) return false;
    this.releaseAlias(slot, n);
    // No node id is held by any caller between two removals: a safe point to compact.
    this.compactIfSparse();
    return true;
  }

  /**
   * Store a chain of n blocks under the slot's block (pLo, pHi), or under the root when
   * hasParent is false. tok/hash hold [lo, hi] per block. Not counted.
   */
  storeChain(
    slot: WorkerSlot,
    hasParent: boolean,
    pLo: number,
    pHi: number,
    tok: Uint32Array,
    hash: Uint32Array,
    n: number,
  ): KvEventStatus {
    const map = slot.blocks;
    // The parent's lookup line and every block's, fetched together before anything waits on one.
    if (this.homes.length <= n) this.homes = new Int32Array(2 * n + 2);
    const homes = this.homes;
    for (let i = 0; i < n; i++) homes[i] = map.home(hash[2 * i]!, hash[2 * i + 1]!);
    let m = n;
    if (hasParent) homes[m++] = map.home(pLo, pHi);
    this.touchHomes(map.raw, m);
    if (!hasParent && n > 0) {
      // Under the root (many children) the first block is looked up in the edge table: load its
      // line now, alongside the lookup lines, rather than wait for it alone later.
      childPath(ROOT_PATH_LO, ROOT_PATH_HI, tok[0]!, tok[1]!);
      this.sink += this.edges.slots[this.edges.home(PATH_OUT[0]!, PATH_OUT[1]!)]!;
    }
    let cur = ROOT;
    if (hasParent) {
      cur = map.get(pLo, pHi);
      if (cur < 0) cur = this.parentOnOtherMedium(slot, pLo, pHi);
      if (cur < 0) return "parent_block_not_found";
    }
    if (!distinctChain(hasParent, pLo, pHi, hash, n)) return "invalid_block";
    if (this.pathWords.length < 2 * n) this.pathWords = new Int32Array(2 * n);
    const paths = this.pathWords;
    let lo = this.nodes.get(cur, PATH_LO);
    let hi = this.nodes.get(cur, PATH_HI);
    for (let i = 0; i < n; i++) {
      childPath(lo, hi, tok[2 * i]!, tok[2 * i + 1]!);
      lo = PATH_OUT[0]!;
      hi = PATH_OUT[1]!;
      paths[2 * i] = lo;
      paths[2 * i + 1] = hi;
    }
    // Down the blocks the tree already has, then the rest as a fresh chain.
    let i = 0;
    for (; i < n; i++) {
      const child = this.findChild(cur, paths[2 * i]!, paths[2 * i + 1]!);
      if (child < 0) break;
      this.holdBlock(slot, child, hash[2 * i]!, hash[2 * i + 1]!);
      cur = child;
    }
    if (i < n) this.storeFresh(slot, cur, i, n, paths, hash);
    return "ok";
  }

  // ------------------------------------------------------------------ internals

  private applyStoredBlocks(
    slot: WorkerSlot,
    parentHash: bigint | null,
    blocks: readonly StoredBlock[],
  ): KvEventStatus {
    const n = blocks.length;
    this.fitBlocks(n);
    const tok = this.tokWords;
    const hash = this.hashWords;
    for (let i = 0; i < n; i++) {
      const b = blocks[i]!;
      splitInto(b.tokensHash, tok, 2 * i);
      splitInto(b.blockHash, hash, 2 * i);
    }
    let pLo = 0;
    let pHi = 0;
    if (parentHash !== null) {
      splitInto(parentHash, this.parentWords, 0);
      pLo = this.parentWords[0]!;
      pHi = this.parentWords[1]!;
    }
    return this.storeChain(slot, parentHash !== null, pLo, pHi, tok, hash, n);
  }

  /**
   * A Stored's parent that this medium does not hold, found through the rank's other media (an
   * engine names a block by one hash on every medium): a GPU head whose tail was offloaded and
   * evicted is the CPU tier's parent without being on the CPU (the simulated engine names the
   * block before the run as the parent, as its GPU events do). -1 when none holds it.
   */
  private parentOnOtherMedium(slot: WorkerSlot, lo: number, hi: number): number {
    if (this.slots.tierSlots === 0) return -1;
    for (const s of this.slots.mediaOf(slot.workerId, slot.dpRank)) {
      if (s === slot) continue;
      const n = s.blocks.get(lo, hi);
      if (n >= 0) return n;
    }
    return -1;
  }

  /**
   * A tier holds chunks named by their last block's hash (vLLM's offloading placeholders): the
   * hash is the engine's own, so another medium of the same (worker, dp rank) — the GPU first —
   * knows its node; the chunk is that node and its span - 1 ancestors (the tree is keyed by the
   * tokens' path, so the ancestors are exactly the chunk's other blocks). A hash no other medium
   * holds any more (the GPU evicted it before the offload was reported) cannot be placed:
   * block_not_found, the other chunks still applied.
   */
  private applyChunks(slot: WorkerSlot, tails: readonly bigint[], span: number): KvEventStatus {
    if (slot.medium === "gpu" || !Number.isInteger(span) || span < 1) return "invalid_block";
    const sources = this.slots.mediaOf(slot.workerId, slot.dpRank).filter((s) => s !== slot);
    const w = this.parentWords;
    const chain = new Int32Array(span);
    let status: KvEventStatus = "ok";
    for (const h of tails) {
      splitInto(h, w, 0);
      const lo = w[0]!;
      const hi = w[1]!;
      let n = -1;
      for (let k = 0; k < sources.length && n < 0; k++) n = sources[k]!.blocks.get(lo, hi);
      if (n < 0) {
        status = "block_not_found";
        continue;
      }
      let depth = 0;
      for (let q = n; depth < span && q !== ROOT; q = this.nodes.get(q, PARENT)) chain[depth++] = q;
      if (depth < span) {
        // Fewer blocks above it than a chunk has: not the chunk the engine described.
        status = "invalid_block";
        continue;
      }
      slot.chunkSpan = span;
      for (let i = 0; i < span; i++) {
        chunkKey(lo, hi, i);
        this.holdBlock(slot, chain[i]!, CHUNK_KEY[0]!, CHUNK_KEY[1]!);
      }
    }
    return status;
  }

  /** The slot holds `child` (a node that exists) under engine hash (hLo, hHi). */
  private holdBlock(slot: WorkerSlot, child: number, hLo: number, hHi: number): void {
    const prev = slot.blocks.set(hLo, hHi, child);
    if (prev === child) {
      // A repeated store: nothing changes on the GPU; a tier counts it (see WorkerSlot.repeats).
      if (slot.medium !== "gpu") {
        const reps = (slot.repeats ??= new Map());
        const h = join(hLo, hHi);
        reps.set(h, (reps.get(h) ?? 0) + 1);
      }
      return;
    }
    if (prev >= 0 && slot.repeats !== null) forgetRepeats(slot, hLo, hHi);
    if (!this.nodes.addHolder(child, slot.index)) {
      // Already held under another hash: one more alias of the same node.
      const al = (slot.aliases ??= new Map());
      al.set(child, (al.get(child) ?? 0) + 1);
    }
    // The hash named another node before: it moved here. Released after child is held, so
    // freeing cannot reach the path being built.
    if (prev >= 0) this.releaseAlias(slot, prev);
  }

  /**
   * Blocks [from, n) as new nodes under `cur`, which has no child on this path: each one's
   * parent is the node just made, so nothing needs looking up, and each is born held by the
   * slot alone. The common case: an engine stores what no worker had.
   */
  private storeFresh(
    slot: WorkerSlot,
    cur: number,
    from: number,
    n: number,
    paths: Int32Array,
    hash: Uint32Array,
  ): void {
    const nodes = this.nodes;
    const map = slot.blocks;
    const w = slot.index;
    let lo = paths[2 * from]!;
    let hi = paths[2 * from + 1]!;
    let child = nodes.alloc(cur, lo, hi, w);
    if (nodes.get(cur, CHILD0) !== child) this.edges.set(cur, lo, hi, child);
    for (let i = from; ; ) {
      const prev = map.set(hash[2 * i]!, hash[2 * i + 1]!, child);
      // The hash named another node before: it moved here (after child is held, as above).
      if (prev >= 0) {
        if (slot.repeats !== null) forgetRepeats(slot, hash[2 * i]!, hash[2 * i + 1]!);
        this.releaseAlias(slot, prev);
      }
      if (++i === n) return;
      lo = paths[2 * i]!;
      hi = paths[2 * i + 1]!;
      child = nodes.alloc(child, lo, hi, w);
    }
  }

  private applyRemoved(slot: WorkerSlot, data: RemovedData): KvEventStatus {
    const hashes = data.blockHashes;
    const n = hashes.length;
    this.fitBlocks(n);
    const hw = this.hashWords;
    const homes = this.homes;
    const map = slot.blocks;
    for (let i = 0; i < n; i++) {
      splitInto(hashes[i]!, hw, 2 * i);
      homes[i] = map.home(hw[2 * i]!, hw[2 * i + 1]!);
    }
    this.touchHomes(map.raw, n);
    // Every hash out of the lookup first, then the nodes' records fetched together, then the
    // nodes released: the same releases in the same order as one hash at a time (a lookup
    // delete never reads a node), but the misses of each pass overlap instead of queueing.
    const held = this.held;
    const reps = slot.repeats;
    for (let i = 0; i < n; i++) {
      held[i] =
        reps !== null && dropRepeat(slot, reps, hashes[i]!)
          ? KEPT
          : map.delete(hw[2 * i]!, hw[2 * i + 1]!);
    }
    const rec = this.nodes.rec;
    let sink = 0;
    for (let i = 0; i < n; i++) {
      const node = held[i]!;
      if (node >= 0) sink += rec[node * STRIDE + HOLDERS]!;
    }
    this.sink = sink;
    let status: KvEventStatus = "ok";
    for (let i = 0; i < n; i++) {
      const node = held[i]!;
      if (node === KEPT) continue;
      if (node < 0) status = "block_not_found";
      else this.releaseAlias(slot, node);
    }
    if (slot.chunkSpan > 1) this.removeChunkRest(slot, hashes);
    // No node id is held by any caller once the event is applied: a safe point to compact.
    this.compactIfSparse();
    return status;
  }

  /** A removed hash that named a chunk: its other blocks' keys go too (those present). */
  private removeChunkRest(slot: WorkerSlot, hashes: readonly bigint[]): void {
    const w = this.parentWords;
    for (const h of hashes) {
      splitInto(h, w, 0);
      const lo = w[0]!;
      const hi = w[1]!;
      for (let i = 1; i < slot.chunkSpan; i++) {
        chunkKey(lo, hi, i);
        const kLo = CHUNK_KEY[0]!;
        const kHi = CHUNK_KEY[1]!;
        const reps = slot.repeats;
        if (reps !== null && dropRepeat(slot, reps, join(kLo, kHi))) continue;
        const node = slot.blocks.delete(kLo, kHi);
        if (node >= 0) this.releaseAlias(slot, node);
      }
    }
  }

  /** Scratch for events of n blocks. */
  private fitBlocks(n: number): void {
    if (this.tokBig.length >= n) return;
    const cap = pow2AtLeast(n);
    this.tokBig = new BigUint64Array(cap);
    this.hashBig = new BigUint64Array(cap);
    this.tokWords = new Uint32Array(this.tokBig.buffer);
    this.hashWords = new Uint32Array(this.hashBig.buffer);
    this.homes = new Int32Array(cap + 1);
    this.held = new Int32Array(cap);
  }

  /**
   * Read the first word of every line in homes[0, m): random lines of tables too big for the
   * cache. A loop that does nothing else keeps many of them in flight at once; interleaved
   * with the hashing that computes the addresses, the out-of-order window held two or three
   * and each block waited about a memory latency (1,024 workers x 10 M blocks: ~145 -> ~20
   * ns a block for the touch itself).
   */
  private touchHomes(raw: Int32Array, m: number): void {
    const homes = this.homes;
    let sink = 0;
    for (let i = 0; i < m; i++) sink += raw[homes[i]!]!;
    this.sink = sink;
  }

  /** The slot no longer holds node n under one of its hashes (already out of its lookup). */
  private releaseAlias(slot: WorkerSlot, n: number): void {
    const al = slot.aliases;
    if (al !== null) {
      const c = al.get(n);
      if (c !== undefined) {
        if (c > 1) al.set(n, c - 1);
        else if (al.size === 1) slot.aliases = null;
        else al.delete(n);
        return;
      }
    }
    this.nodes.removeHolder(n, slot.index);
    this.freeUnused(n);
  }

  /** The child of `cur` with path (lo, hi), or -1: first child first, then the edge table. */
  private findChild(cur: number, lo: number, hi: number): number {
    const rec = this.nodes.rec;
    const stride = this.nodes.stride;
    const r = cur * stride;
    const c0 = rec[r + CHILD0]!;
    if (c0 >= 0) {
      const c = c0 * stride;
      if (rec[c + PATH_LO] === lo && rec[c + PATH_HI] === hi) return c0;
      if (rec[r + CHILDREN] === 1) return -1;
    } else if (rec[r + CHILDREN] === 0) {
      return -1;
    }
    return this.edges.get(cur, lo, hi);
  }

  /** Unlink and free n and then its ancestors while they are unheld and childless. */
  private freeUnused(n: number): void {
    const nodes = this.nodes;
    while (n !== ROOT && nodes.get(n, HOLDERS) === 0 && nodes.get(n, CHILDREN) === 0) {
      const p = nodes.get(n, PARENT);
      if (nodes.get(p, CHILD0) !== n)
        this.edges.delete(p, nodes.get(n, PATH_LO), nodes.get(n, PATH_HI));
      nodes.free(n); // unlinks CHILD0; may reset the arrays when the tree empties
      n = p;
    }
  }

  /** Slots were released: the holder rows narrow to the slots in use, the nodes compact when sparse. */
  private afterRemovals(): void {
    this.nodes.fitWorkers(this.slots.span);
    this.compactIfSparse();
  }

  /**
   * Most node ids are free (workers left, blocks removed or expired): renumber the nodes
   * densely and remap every id kept outside the store (edges, lookups, aliases), so the
   * index's memory follows its live nodes instead of its peak.
   */
  private compactIfSparse(): void {
    if (!this.nodes.sparse) return;
    const remap = this.nodes.compact();
    this.edges.remapIds(remap);
    for (const s of this.slots.bySlot) {
      if (s === undefined) continue;
      s.blocks.remapValues(remap);
      if (s.aliases !== null) {
        const moved = new Map<number, number>();
        for (const [n, count] of s.aliases) moved.set(remap[n]!, count);
        s.aliases = moved;
      }
    }
  }

  /** Drop every block of a slot; the slot stays known with an empty lookup. */
  private clearSlot(slot: WorkerSlot): void {
    const nodes = this.nodes;
    const held = slot.blocks.values();
    slot.blocks = new U64BucketMap();
    slot.aliases = null;
    slot.repeats = null;
    for (let i = 0; i < held.length; i++) {
      const n = held[i]!;
      // isLive: an alias of a node freed earlier in this loop (or after a reset) is skipped.
      if (nodes.isLive(n) && nodes.removeHolder(n, slot.index)) this.freeUnused(n);
    }
  }

  private score(
    scores: Map<WorkerKey, number>,
    word: number,
    bits: number,
    depth: number,
    nScored: number,
  ): number {
    while (bits !== 0) {
      const low = bits & -bits;
      const index = word * 32 + 31 - Math.clz32(low);
      const slot = this.slots.bySlot[index]!;
      bits ^= low;
      // A tier's overlap goes beside the GPU's, never into it (tierReach, after the walk).
      if (slot.medium !== "gpu") continue;
      scores.set(slot.key, depth);
      if (nScored === this.scored.length) {
        const grown = new Int32Array(nScored * 2);
        grown.set(this.scored);
        this.scored = grown;
      }
      this.scored[nScored++] = index;
    }
    return nScored;
  }
}

/** chunkKey's answer: [lo, hi]. */
const CHUNK_KEY = new Uint32Array(2);

/**
 * The lookup key of block i of a chunk named by its last block's hash (lo, hi), i counted from
 * the last: i = 0 is the hash itself; the others are derived from it, distinct per i and, like
 * the dump's synthetic hashes, not a hash an engine would send but by a 2^-64 accident.
 */
function chunkKey(lo: number, hi: number, i: number): void {
  if (i === 0) {
    CHUNK_KEY[0] = lo;
    CHUNK_KEY[1] = hi;
    return;
  }
  CHUNK_KEY[0] = (lo ^ Math.imul(i, 0x9e3779b9)) >>> 0;
  CHUNK_KEY[1] = (hi ^ 0x6a09e667 ^ Math.imul(i, 0x85ebca6b)) >>> 0;
}

/** A tier's hash moved to another block: its repeat count belonged to the old one. */
function forgetRepeats(slot: WorkerSlot, lo: number, hi: number): void {
  const reps = slot.repeats!;
  reps.delete(join(lo, hi));
  if (reps.size === 0) slot.repeats = null;
}

/** One removal of a hash announced more than once: true when it was a repeat (the block stays). */
function dropRepeat(slot: WorkerSlot, reps: Map<bigint, number>, h: bigint): boolean {
  const c = reps.get(h);
  if (c === undefined) return false;
  if (c > 1) reps.set(h, c - 1);
  else {
    reps.delete(h);
    if (reps.size === 0) slot.repeats = null;
  }
  return true;
}

/** distinctChain's scratch set: block indices, -1 = free. */
let seenTable = new Int32Array(256);

/**
 * True when the chain's block hashes are pairwise distinct and differ from the parent hash:
 * a repeat would make a block its own ancestor (Dynamo's RadixTree self-reference check).
 */
function distinctChain(
  hasParent: boolean,
  pLo: number,
  pHi: number,
  hash: Uint32Array,
  n: number,
): boolean {
  if (hasParent) {
    for (let i = 0; i < n; i++) if (hash[2 * i] === pLo && hash[2 * i + 1] === pHi) return false;
  }
  if (n <= PAIRWISE_CHECK_MAX) {
    for (let i = 1; i < n; i++) {
      const lo = hash[2 * i]!;
      const hi = hash[2 * i + 1]!;
      for (let j = 0; j < i; j++) if (hash[2 * j] === lo && hash[2 * j + 1] === hi) return false;
    }
    return true;
  }
  // An open-addressing set of block indices in a reused table (one per process: the check
  // runs synchronously), not a new map per event: events of 33+ blocks are common (vLLM sends
  // a whole prefill's blocks, approximate mode records a prompt's) and this runs on each.
  const cap = pow2AtLeast(2 * n);
  if (seenTable.length < cap) seenTable = new Int32Array(cap);
  seenTable.fill(-1, 0, cap);
  const mask = cap - 1;
  for (let i = 0; i < n; i++) {
    const lo = hash[2 * i]!;
    const hi = hash[2 * i + 1]!;
    for (let k = mix3(0, lo, hi) & mask; ; k = (k + 1) & mask) {
      const j = seenTable[k]!;
      if (j < 0) {
        seenTable[k] = i;
        break;
      }
      if (hash[2 * j] === lo && hash[2 * j + 1] === hi) return false;
    }
  }
  return true;
}
