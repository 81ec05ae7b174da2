/**
 * The peers' own approximate prefix index: what a router that sees no KV events believes each
 * endpoint caches, learned only from its own routing decisions. Per endpoint, a bounded LRU set
 * of sequence hashes (a chained hash names a whole prefix, so a set of them is a prefix tree
 * flattened: the leading run of a prompt's hashes found in the set is its matched prefix).
 *
 * Used by the peer policies (sglang cache_aware's approximate radix tree, llm-d's
 * prefix-cache-scorer LRU, production-stack's hash trie); the router's own `approx` indexer is a
 * separate, TTL-based structure. Pure: no clock of its own, memory bounded per endpoint.
 */
import type { WorkerKey } from "../../../core/ids.ts";

export class DecisionIndex {
  readonly #byKey = new Map<WorkerKey, Map<bigint, true>>();

  /** @param capacityPerEndpoint most hashes kept per endpoint (least recently recorded dropped first). */
  constructor(readonly capacityPerEndpoint: number) {
    if (!(capacityPerEndpoint >= 1))
      throw new Error(`capacity must be >= 1, got ${capacityPerEndpoint}`);
  }

  /** Leading blocks of `seqHashes` this endpoint is believed to hold. */
  matchDepth(key: WorkerKey, seqHashes: BigUint64Array | null): number {
    const set = this.#byKey.get(key);
    if (!set || !seqHashes) return 0;
    let i = 0;
    while (i < seqHashes.length && set.has(seqHashes[i]!)) i++;
    return i;
  }

  /** Hashes believed held there: SGLang's tree size, the smallest-tree tie-break. */
  size(key: WorkerKey): number {
    return this.#byKey.get(key)?.size ?? 0;
  }

  /** Remember that this endpoint now holds the prompt (refreshes recency of every block). */
  record(key: WorkerKey, seqHashes: BigUint64Array | null): void {
    if (!seqHashes || seqHashes.length === 0) return;
    let set = this.#byKey.get(key);
    if (!set) this.#byKey.set(key, (set = new Map()));
    for (const h of seqHashes) {
      set.delete(h); // Map keeps insertion order: re-inserting moves it to the most recent end
      set.set(h, true);
    }
    while (set.size > this.capacityPerEndpoint) set.delete(set.keys().next().value!);
  }

  /** Forget an endpoint (removed worker). */
  forget(key: WorkerKey): void {
    this.#byKey.delete(key);
  }
}
