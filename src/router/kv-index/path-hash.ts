/**
 * Path hashes: each tree node's 64-bit hash of its local-hash path from the root,
 * P(child) = F(P(parent)) XOR tokensHash, with F a bijective mix (two Feistel rounds).
 *
 * Why: the edge table is addressed by P, so the slot of level i+1 of a request can be
 * computed from the request alone, before level i's lookup has returned. Lookups then no
 * longer form a chain of dependent cache misses, and the tree reads a batch of levels' slots
 * in parallel (~8x faster per level on this class of machine). Exactness does not depend on
 * P: an edge matches only if its parent id is equal too, and for a fixed parent XOR with the
 * tokens hash is injective, so (parent, P) identifies (parent, tokensHash) exactly. P also
 * gives a node's tokens hash back: tokensHash = P(node) XOR F(P(parent)).
 *
 * Results go to PATH_OUT[0] (lo) and PATH_OUT[1] (hi) to avoid allocating pairs.
 */

export const ROOT_PATH_LO = 0x2545f491;
export const ROOT_PATH_HI = 0x4f6cdd1d;

export const PATH_OUT = new Int32Array(2);

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** F(parent path) XOR (tLo, tHi) -> PATH_OUT. */
export function childPath(pLo: number, pHi: number, tLo: number, tHi: number): void {
  const hi = pHi ^ fmix32(pLo + 0x9e3779b9);
  const lo = pLo ^ fmix32(hi + 0x7f4a7c15);
  PATH_OUT[0] = lo ^ tLo;
  PATH_OUT[1] = hi ^ tHi;
}

/** The tokens hash of a node from its path and its parent's path -> PATH_OUT. */
export function tokensOf(pLo: number, pHi: number, nodeLo: number, nodeHi: number): void {
  childPath(pLo, pHi, 0, 0);
  PATH_OUT[0] = PATH_OUT[0]! ^ nodeLo;
  PATH_OUT[1] = PATH_OUT[1]! ^ nodeHi;
}
