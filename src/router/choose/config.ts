/**
 * Scheduler settings (the routing half of Dynamo's `KvRouterConfig`). Validation of
 * user input is config/'s job; this only holds the shape and the defaults. Every decision
 * uses these as they are: no request overrides them.
 */
import type { LoadMetric } from "./filters/load-guard.ts";

export interface SchedulerConfig {
  /** Tokens per KV block. */
  readonly blockSize: number;
  /** Weight of prefill blocks against decode blocks in the kv cost (Dynamo default 1). */
  readonly overlapScoreWeight: number;
  /** 0 = always the cheapest; > 0 = softmax sampling over costs (Dynamo's DefaultWorkerSelector). */
  readonly temperature: number;
  /**
   * Busy filter (Dynamo's SchedulerQueue): a rank is busy when its active prefill tokens exceed
   * threshold × max_num_batched_tokens. null = no busy filtering.
   */
  readonly busyThreshold: number | null;
  /**
   * Load guard: exclude candidates whose active load exceeds factor × the mean of the
   * candidates' loads before costing. null = off (pure Dynamo). See filters/load-guard.ts.
   */
  readonly loadGuardFactor: number | null;
  /**
   * What the load guard measures: "requests" (active request count) or "blocks" (prefill
   * tokens / bs + active blocks). The kv cost already balances blocks; cached requests are
   * cheap in blocks, so piling shows up in request counts.
   */
  readonly loadGuardMetric: LoadMetric;
  /** Cost per active request on a worker (queue-depth term); 0 = off (pure Dynamo). */
  readonly activeRequestWeight: number;
  /** Credit (negative cost) per cached prompt block, beyond the prefill it saves; 0 = off (pure Dynamo). */
  readonly overlapCredit: number;
  /** Cost (blocks) per request the rank's engine reports waiting (engine metrics); 0 = off. */
  readonly engineWaitingWeight: number;
  /**
   * Count a prompt prefix that requests in flight on a worker already carry as cached there,
   * when it is longer than what the index knows. The index learns blocks only once the
   * engine has stored them (prefill done, event delivered), so a burst of requests sharing
   * a new prefix would otherwise scatter before the first one's blocks are indexed. Engines
   * prefill one request at a time per rank, so a later request on the same rank does find
   * those blocks. Off = Dynamo's reference formula exactly.
   */
  readonly inflightOverlap: boolean;
  /**
   * kv-blocks/approx: keep only workers whose prefill wait (queued prefill + this request's uncached
   * tokens) is within factor × the best worker's + prefillWaitQueueShare × the mean queued prefill
   * (filters/prefill-wait-bound.ts). null = off (pure Dynamo).
   */
  readonly prefillWaitFactor: number | null;
  readonly prefillWaitQueueShare: number;
}

export const DEFAULT_SCHEDULER_CONFIG: SchedulerConfig = {
  blockSize: 16,
  overlapScoreWeight: 1,
  temperature: 0,
  busyThreshold: null,
  loadGuardFactor: null,
  loadGuardMetric: "requests",
  activeRequestWeight: 0,
  overlapCredit: 0,
  engineWaitingWeight: 0,
  inflightOverlap: false,
  prefillWaitFactor: null,
  prefillWaitQueueShare: 0,
};

/** Engines that do not report max_num_batched_tokens are treated as having this many (never busy in practice). */
export const DEFAULT_MAX_BATCHED_TOKENS = 10_000_000;

export function schedulerConfig(partial: Partial<SchedulerConfig> = {}): SchedulerConfig {
  return { ...DEFAULT_SCHEDULER_CONFIG, ...partial };
}
