/** The scheduler's public surface: what the composition root and the HTTP edge import. */
export { ActiveSequences, CHECK_EXPIRY_EVERY_MS, EXPIRY_MS, type SlotRequest } from "../books/active-sequences.ts";
export { DEFAULT_MAX_BATCHED_TOKENS, DEFAULT_SCHEDULER_CONFIG, schedulerConfig, type SchedulerConfig } from "./config.ts";
export { explainDynamoKvCost } from "./costs/dynamo-kv.ts";
export { endpoint, endpointsOf, type WorkerDescription } from "./endpoints.ts";
export { allWorkersBusy } from "./filters/busy-threshold.ts";
export type { LoadMetric } from "./filters/load-guard.ts";
export { findBestMatch, type FindBestMatchInput } from "./find-best-match.ts";
export { LoadTracker, type LoadTrackerOptions, type PotentialLoad, type TrackedRequest, type WorkerLoad } from "../books/load-tracker.ts";
export { runPipeline } from "./pipeline.ts";
export { POLICY_NAMES, createPipeline, isPolicyName, type PolicyName } from "./registry.ts";
export {
  ActiveSequenceEventSchema,
  activeSequenceEventToWire,
  type ActiveSequenceEvent,
  type ActiveSequenceEventData,
} from "../books/sequence-events.ts";
export type * from "./types.ts";
