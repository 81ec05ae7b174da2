/**
 * A deliberately simple model of the precise index, for differential tests: per
 * (worker, dp_rank), a Map from engine hash to the block's path (its local hashes from the
 * root, joined). A worker holds a path when at least one of its hashes maps to it.
 * Same semantics as RadixTree, written with Maps and strings, no cleverness.
 */
import type { KvEventStatus, RouterEvent } from "../../../../src/core/events.ts";

export class ReferenceIndex {
  /** "worker:rank" -> (engine hash -> path) */
  readonly workers = new Map<string, Map<bigint, string>>();

  apply(e: RouterEvent): KvEventStatus {
    const key = `${e.workerId}:${e.event.dpRank}`;
    if (!this.workers.has(key)) this.workers.set(key, new Map());
    const map = this.workers.get(key)!;
    const d = e.event.data;
    if (d.type === "cleared") {
      map.clear();
      return "ok";
    }
    if (d.type === "removed") {
      let status: KvEventStatus = "ok";
      for (const h of d.blockHashes)
        if (!map.delete(BigInt.asUintN(64, h))) status = "block_not_found";
      return status;
    }
    let path = "";
    if (d.parentHash !== null) {
      const p = map.get(d.parentHash);
      if (p === undefined) return "parent_block_not_found";
      path = p;
    }
    const hashes = d.blocks.map((b) => b.blockHash);
    if (
      new Set(hashes).size !== hashes.length ||
      (d.parentHash !== null && hashes.includes(d.parentHash))
    )
      return "invalid_block";
    for (const b of d.blocks) {
      path = `${path}/${b.tokensHash}`;
      map.set(b.blockHash, path);
    }
    return "ok";
  }

  removeWorker(workerId: bigint): void {
    for (const k of [...this.workers.keys()])
      if (k.startsWith(`${workerId}:`)) this.workers.delete(k);
  }

  removeWorkerDpRank(workerId: bigint, dpRank: number): void {
    this.workers.delete(`${workerId}:${dpRank}`);
  }

  findMatches(locals: readonly bigint[]): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [key, map] of this.workers) {
      const held = new Set(map.values());
      let path = "";
      let depth = 0;
      for (const l of locals) {
        path = `${path}/${l}`;
        if (!held.has(path)) break;
        depth++;
      }
      if (depth > 0) out[key] = depth;
    }
    return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
  }

  size(): number {
    let n = 0;
    for (const m of this.workers.values()) n += m.size;
    return n;
  }

  /** Held paths and all their prefixes: the nodes a tree needs. */
  nodeCount(): number {
    const nodes = new Set<string>();
    for (const m of this.workers.values()) {
      for (const p of m.values()) {
        let q = p;
        while (q !== "" && !nodes.has(q)) {
          nodes.add(q);
          q = q.slice(0, q.lastIndexOf("/"));
        }
      }
    }
    return nodes.size;
  }

  /** Canonical state: sorted "worker hash path" lines of non-empty workers. */
  state(): string[] {
    const lines: string[] = [];
    for (const [k, m] of this.workers) for (const [h, p] of m) lines.push(`${k} ${h} ${p}`);
    return lines.sort();
  }

  /** Every held path as a list of local hashes (queries that must match). */
  heldPaths(): bigint[][] {
    const paths = new Set<string>();
    for (const m of this.workers.values()) for (const p of m.values()) paths.add(p);
    return [...paths].map((p) => p.slice(1).split("/").map(BigInt));
  }
}
