/**
 * A long shared prefix fanned out (issue 45's cell; llm-d's P2P guide measured a 43-subagent
 * fork of a 48K-token context): each task first sends its root request, a 32,768-token context
 * (64 blocks of 512) plus a question; once that has been answered, its `branches` subagents
 * start within a few hundred ms, each the whole context plus its own two blocks. What is
 * measured is the branches' TTFT ("branch start"): a branch that finds the context nowhere
 * recomputes 32K tokens, one sent to the root's engine queues behind its siblings, one that
 * pulls it from a peer pays the transfer. Branch sessions are named `task-K/branch-B`.
 */
import { mulberry32 } from "../../../test/support/prng.ts";
import { TRACE_BLOCK_TOKENS, type TraceRequest } from "../trace.ts";

export interface FanOutParams {
  tasks: number;
  /** Shared context per task, in 512-token blocks (64: 32,768 tokens). */
  prefixBlocks: number;
  branches: number;
  /** Each branch's own blocks after the context. */
  branchBlocks: number;
  /** Trace ms between task starts, and from a task's root to its branches (the root's 32K-token prefill is ~6.6 s at 200 µs a token). */
  taskGapMs: number;
  forkAfterMs: number;
  /** The branches start uniformly within this many ms. */
  branchSpreadMs: number;
  outputTokens: number;
}

export const FAN_OUT_DEFAULTS: FanOutParams = {
  tasks: 3,
  prefixBlocks: 64,
  branches: 32,
  branchBlocks: 2,
  taskGapMs: 20_000,
  forkAfterMs: 10_000,
  branchSpreadMs: 300,
  outputTokens: 8,
};

/** Whether a request of this shape is a branch (the cell's measured requests). */
export const isBranch = (r: TraceRequest) => r.sessionId?.includes("/branch-") === true;

export function fanOut(seed: number, p: FanOutParams = FAN_OUT_DEFAULTS): TraceRequest[] {
  const rng = mulberry32(seed);
  let next = 0;
  const take = (n: number) => Array.from({ length: n }, () => next++);
  const rows: { t: number; ids: number[]; session: string }[] = [];
  for (let k = 0; k < p.tasks; k++) {
    const start = k * p.taskGapMs;
    const context = take(p.prefixBlocks);
    rows.push({ t: start, ids: [...context, ...take(1)], session: `task-${k}` });
    for (let b = 0; b < p.branches; b++)
      rows.push({
        t: start + p.forkAfterMs + rng() * p.branchSpreadMs,
        ids: [...context, ...take(p.branchBlocks)],
        session: `task-${k}/branch-${b}`,
      });
  }
  rows.sort((a, b) => a.t - b.t);
  return rows.map((r, index) => ({
    index,
    timestamp: Math.round(r.t),
    // The last block is half full (a partial block is never a cache hit).
    inputLength: r.ids.length * TRACE_BLOCK_TOKENS - TRACE_BLOCK_TOKENS / 2,
    outputLength: p.outputTokens,
    hashIds: r.ids,
    sessionId: r.session,
  }));
}
