/**
 * vLLM production-stack router policies (vllm-project/production-stack
 * src/vllm_router/routers/routing_logic.py @ 5ae0b10, src/vllm_router/prefix/hashtrie.py):
 *
 * `--policy prodstack-prefix` (PrefixAwareRouter): a hash trie of the prompt's chunks, filled
 * with its own decisions and never evicted; the candidates holding the longest matched prefix
 * (all candidates when nothing matches), one of them uniformly at random; no load term.
 * Chunks there are 128 characters; here they are the router's KV blocks (chained sequence
 * hashes walk the same trie path). "No eviction" is kept, bounded at 4 M blocks per endpoint so
 * a long-running router cannot grow without limit.
 *
 * `--policy prodstack-session` (SessionRouter): consistent hashing of the session id
 * (`X-Session-ID` here; production-stack's `--session-key` header) over the candidates;
 * without a session id, the endpoint with the lowest request rate (there: QPS over a sliding
 * window; here: a request count decaying with a 60 s time constant). Pure; state in the pickers.
 */
import type { Candidate, Picker, SchedulingContext } from "../types.ts";
import { HashRing } from "./consistent-hash-ring.ts";
import { DecisionIndex } from "./decision-index.ts";

const NO_EVICTION_BOUND = 4_000_000;
const QPS_TIME_CONSTANT_MS = 60_000;

export function prodstackPrefixPicker(): Picker & { readonly trie: DecisionIndex } {
  const trie = new DecisionIndex(NO_EVICTION_BOUND);
  return {
    type: "prodstack-prefix",
    trie,
    pick(ctx: SchedulingContext, candidates: readonly Candidate[]): Candidate {
      let depth = 0;
      let holders: Candidate[] = [];
      for (const c of candidates) {
        const d = trie.matchDepth(c.key, ctx.request.seqHashes);
        if (d > depth) {
          depth = d;
          holders = [c];
        } else if (d === depth && d > 0) holders.push(c);
      }
      const pool = depth === 0 ? candidates : holders;
      const chosen = pool[Math.floor(ctx.rng() * pool.length)]!;
      trie.record(chosen.key, ctx.request.seqHashes);
      return chosen;
    },
  };
}

export function prodstackSessionPicker(): Picker {
  const ring = new HashRing();
  const rate = new Map<string, { value: number; at: number }>();
  const rateOf = (key: string, now: number): number => {
    const r = rate.get(key);
    return r ? r.value * Math.exp(-(now - r.at) / QPS_TIME_CONSTANT_MS) : 0;
  };
  return {
    type: "prodstack-session",
    pick(ctx: SchedulingContext, candidates: readonly Candidate[]): Candidate {
      const sessionId = ctx.request.sessionId;
      let chosen: Candidate | undefined;
      if (sessionId !== undefined) {
        ring.setNodes(candidates.map((c) => c.key));
        const key = ring.nodeFor(sessionId);
        chosen = candidates.find((c) => c.key === key);
      }
      if (!chosen) {
        let low = Infinity;
        for (const c of candidates) {
          const r = rateOf(c.key, ctx.now);
          if (r < low) {
            low = r;
            chosen = c;
          }
        }
      }
      const c = chosen ?? candidates[0]!;
      rate.set(c.key, { value: rateOf(c.key, ctx.now) + 1, at: ctx.now });
      return c;
    },
  };
}
