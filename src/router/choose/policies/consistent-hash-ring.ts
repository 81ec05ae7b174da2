/**
 * A consistent-hash ring over endpoint keys, the way production-stack's SessionRouter uses
 * `uhashring.HashRing` (src/vllm_router/routers/routing_logic.py @ 5ae0b10): each node owns many
 * points on a 32-bit ring, a session id goes to the first point clockwise of its own hash, so
 * adding or removing one endpoint moves only that endpoint's share of sessions.
 * uhashring's default is ketama (MD5) with 160 points per node; here FNV-1a 32 with 160 points
 * (no crypto in the pure core): the same properties, not the same assignment.
 */
export const POINTS_PER_NODE = 160;

/** FNV-1a 32-bit over the UTF-16 code units of `s`, then a murmur3 finaliser to spread the bits. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export class HashRing {
  #nodes: readonly string[] = [];
  #points = new Uint32Array(0);
  #owners: string[] = [];

  /** Rebuild only when the node set changed (order-insensitive). */
  setNodes(nodes: readonly string[]): void {
    const sorted = [...new Set(nodes)].sort();
    if (sorted.length === this.#nodes.length && sorted.every((n, i) => n === this.#nodes[i]))
      return;
    this.#nodes = sorted;
    const pts: [number, string][] = [];
    for (const n of sorted)
      for (let i = 0; i < POINTS_PER_NODE; i++) pts.push([hash32(`${n}-${i}`), n]);
    pts.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    this.#points = Uint32Array.from(pts.map((p) => p[0]));
    this.#owners = pts.map((p) => p[1]);
  }

  /** The node owning `key`; undefined when the ring is empty. */
  nodeFor(key: string): string | undefined {
    const n = this.#points.length;
    if (n === 0) return undefined;
    const h = hash32(key);
    let lo = 0;
    let hi = n; // first point >= h
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#points[mid]! < h) lo = mid + 1;
      else hi = mid;
    }
    return this.#owners[lo === n ? 0 : lo];
  }
}
