/**
 * The timing model of the simulated engine, as pure arithmetic (milliseconds).
 *
 * - Prefill is compute-bound: its time is linear in the prompt tokens NOT served from the
 *   prefix cache, plus a fixed per-request overhead. With `--scheduler fifo` one prefill runs
 *   at a time per dp rank (the caller serializes them); with `--scheduler v1` prompt chunks
 *   share a step with the decodes (stepMs).
 * - Decode is memory-bound: one step yields one token for every running sequence, and a
 *   step gets slower as the batch grows.
 * - Everything is divided by `speedup`, so benchmarks can run the same shape faster.
 */

export interface TimingModel {
  /** Prefill cost per uncached prompt token, µs. */
  prefillUsPerToken: number;
  /** Fixed cost of every prefill (scheduling, first-token sampling), ms. */
  prefillOverheadMs: number;
  /** Decode step with a single running sequence, ms. */
  decodeMsPerStep: number;
  /** Relative slowdown of a step per additional running sequence. */
  decodeBatchFactor: number;
  speedup: number;
}

/**
 * Calibrated so that routing matters: the uncached prefill of one 512-token block
 * (512 × 40 µs ≈ 20 ms) costs about two decode steps (10 ms), and an 8k-token prompt
 * (≈ 330 ms) costs far more than its cached equivalent (≈ 1 ms). At 64 running sequences a
 * step takes 10 × (1 + 0.02 × 63) ≈ 23 ms, the ~2x batch slowdown of a busy GPU.
 */
export const DEFAULT_TIMING: TimingModel = {
  prefillUsPerToken: 40,
  prefillOverheadMs: 1,
  decodeMsPerStep: 10,
  decodeBatchFactor: 0.02,
  speedup: 1,
};

/** Time of one prefill that must compute `uncachedTokens` tokens. */
export function prefillMs(uncachedTokens: number, m: TimingModel): number {
  return (
    (m.prefillOverheadMs + (Math.max(0, uncachedTokens) * m.prefillUsPerToken) / 1000) / m.speedup
  );
}

/** Time of one decode step while `running` sequences decode on the rank (at least 1). */
export function decodeStepMs(running: number, m: TimingModel): number {
  return (m.decodeMsPerStep * (1 + m.decodeBatchFactor * Math.max(0, running - 1))) / m.speedup;
}

/**
 * One step of `--scheduler v1` (vLLM V1: decodes and prompt chunks in one batch): the decode
 * cost of its `decodes` running sequences plus, for its `prefills` prompt chunks, the fixed
 * cost of each and the compute of their `prefillTokens`. A step with one whole prompt and no
 * decodes costs prefillMs, one with only decodes decodeStepMs: an isolated request takes the
 * same time under either scheduler.
 */
export function stepMs(
  decodes: number,
  prefills: number,
  prefillTokens: number,
  m: TimingModel,
): number {
  const decode = decodes > 0 ? m.decodeMsPerStep * (1 + m.decodeBatchFactor * (decodes - 1)) : 0;
  const prefill =
    prefills > 0
      ? prefills * m.prefillOverheadMs + (prefillTokens * m.prefillUsPerToken) / 1000
      : 0;
  return (decode + prefill) / m.speedup;
}

/**
 * Expected end-to-end time of an isolated request (no queueing, constant batch): prefill,
 * which yields the first token, then one decode step per further token. For docs and tests.
 */
export function isolatedRequestMs(
  uncachedTokens: number,
  outputTokens: number,
  running: number,
  m: TimingModel,
): number {
  return prefillMs(uncachedTokens, m) + Math.max(0, outputTokens - 1) * decodeStepMs(running, m);
}

/**
 * Time to move `tokens` tokens' KV at `gbps` GB/s (10^9 bytes/s), `kvBytesPerToken` modelled
 * bytes each: a load from a lower tier or a pull from a peer. The simulated blocks are smaller
 * (--kv-block-bytes); the time is the modelled model's, not the copy's.
 */
export function tierLoadMs(
  tokens: number,
  gbps: number,
  m: { kvBytesPerToken: number; speedup: number },
): number {
  if (tokens <= 0) return 0;
  return (tokens * m.kvBytesPerToken) / (gbps * 1e6) / m.speedup;
}
