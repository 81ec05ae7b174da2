/**
 * The engine's own block hashes (the `block_hash` of its KV events). Like vLLM's, they are rolling
 * and prefix-dependent: block i's hash covers block i's content and every block before it. They are
 * deliberately NOT the router's hashes: a different seed and chain than the router's block hash
 * (XXH3 seed 1337) and sequence hash (XXH3 of the previous and this block's hash, seed 1337), so a
 * router that confused engine and local hashes would be caught. LoRA separation comes for free: the
 * input local hashes are already LoRA-salted.
 */
import { xxh3_64 } from "../core/xxh3.ts";

/** "mocker" in ASCII; any seed other than 1337 keeps engine hashes apart from tokens_hash. */
export const ENGINE_HASH_SEED = 0x6d6f636b6572n;
/** Parent of a sequence's first block in the chain (not emitted: the first block has no parent). */
export const ENGINE_ROOT = 0n;

const buf = new Uint8Array(16);
const view = new DataView(buf.buffer);

/** engine[i] = XXH3(u64le(engine[i-1] or ROOT) ‖ u64le(local[i]), ENGINE_HASH_SEED). */
export function engineBlockHashes(localHashes: BigUint64Array): BigUint64Array {
  const out = new BigUint64Array(localHashes.length);
  let parent = ENGINE_ROOT;
  for (let i = 0; i < localHashes.length; i++) {
    view.setBigUint64(0, parent, true);
    view.setBigUint64(8, localHashes[i]!, true);
    parent = xxh3_64(buf, ENGINE_HASH_SEED);
    out[i] = parent;
  }
  return out;
}
