/**
 * Part of delay-to-others.ts (the kv policy's cost): the decode steps a prefix group's coming requests will meet where this one is placed: the
 * requests of its group that run at once (books/prefix-traffic.ts, Little's law: the group's
 * arrival rate, learned per prefix, × a request's time on its engine), each waiting for the
 * rank's decode step at the batch they find there (the predictor's decode weight × the rank's
 * step time, books/step-times.ts) in ms. The group's requests spread over the engines that hold
 * its prefix, so a rank gets its share: of h holders, each 1/h of them, already in its batch;
 * a rank that would become a new home, 1/(h + 1), added to its batch (a new group: all of it).
 *
 * Why: a request's own predicted TTFT prices one request, but the first of a group decides where
 * the group's whole traffic goes (its siblings follow the cached prefix). Priced as one request,
 * each new group went to whichever engine was free that instant, and on SGLang's
 * generated-shared-prefix load one engine collected four groups while another idled (issue 44).
 * Priced for its traffic, a group whose siblings arrive fast goes where the batch is smallest;
 * one whose siblings arrive slowly, or a prompt nobody shares, is priced as before (its rate, so
 * this term, is near 0). A new prefix, whose rate cannot be known yet, is priced at the typical
 * group's. On an engine whose prefills never wait for decodes the decode weight is 0 and so is
 * this term.
 */
import type { Candidate, CostTerm, SchedulingContext } from "../types.ts";

/** The depth (blocks) of the longest prefix of the prompt any candidate holds or is computing, and its sequence hash; undefined when none. */
export function groupOf(
  seqHashes: BigUint64Array | null,
  candidates: readonly Candidate[],
): { key: bigint; depth: number } | undefined {
  if (seqHashes === null) return undefined;
  let depth = 0;
  for (const c of candidates) if (c.overlapBlocks > depth) depth = c.overlapBlocks;
  depth = Math.min(depth, seqHashes.length);
  return depth === 0 ? undefined : { key: seqHashes[depth - 1]!, depth };
}

export interface GroupDecodes extends CostTerm {
  /** The group's requests expected to run at once, as the last decision priced it (tests, debug). */
  readonly running: number;
}

export function groupDecodesCost(): GroupDecodes {
  let running = 0;
  /** Candidates holding the group's prefix. */
  let holders = 0;
  return {
    type: "group-decodes",
    get running() {
      return running;
    },
    prepare(ctx: SchedulingContext, candidates: readonly Candidate[]): void {
      running = 0;
      const ttft = ctx.ttft;
      if (ttft === undefined || ttft.decodeWeight === 0) return;
      running = ttft.traffic.runningOf(ctx.groupKey, ctx.now);
      holders = 0;
      const depth = ctx.groupDepth ?? 0;
      if (depth > 0) for (const c of candidates) if (c.overlapBlocks >= depth) holders++;
    },
    cost(ctx: SchedulingContext, c: Candidate): number {
      if (running === 0 || ctx.ttft === undefined) return 0;
      const decodes = c.activeRequests - (c.prefillingRequests ?? 0);
      const depth = ctx.groupDepth ?? 0;
      const holds = depth > 0 && c.overlapBlocks >= depth;
      const share = running / (holds ? holders : holders + 1);
      return (
        share *
        ctx.ttft.decodeWeight *
        ctx.ttft.steps.stepMs(c.key, holds ? decodes : decodes + share)
      );
    },
  };
}
