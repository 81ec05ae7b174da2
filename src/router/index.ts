/**
 * The router's one public module. Everything outside src/router (the composition root, the HTTP
 * edge, load sync, metrics, config, the event adapters) reaches src/router through this file,
 * so what it offers is written down in one place and its inside can move freely.
 * Inside src/router, files import each other directly. What is not exported here (the index's
 * tree, the scheduler's pipeline pieces, the recovery state machine, the books' internals)
 * is src/router's own business; tests and benches of those internals import them by path.
 */

// The router, built in one place, and the ports it is given.
export {
  createRouter,
  type IngestResult,
  type Router,
  type RouterConfig,
  type RouterPorts,
  type RouterApi,
} from "./create-router.ts";
export type {
  BurstClaimOutcome,
  Observer,
  RoutableWorkers,
  RoutingObserver,
  Timers,
} from "./ports.ts";
export type { BurstClaim, BurstClaims, HeldClaim, PrefixMark } from "./books/burst-claims.ts";

// One decision and the booking it holds until it is freed.
export type {
  PromptHashes,
  RouteDecision,
  RouteInput,
  RouteWaitOptions,
  RoutingService,
} from "./routing-service.ts";
export type { RequestLease } from "./books/request-lease.ts";

// The policies and scheduler knobs the config validates its flags against.
export { POLICY_NAMES, type PolicyName } from "./choose/registry.ts";
export { LOAD_METRICS, type LoadMetric } from "./choose/filters/load-guard.ts";
export type { SchedulerConfig } from "./choose/config.ts";

// The load books as load sync, the metrics and /v1/workers read them (createRouter builds the
// tracker; nobody outside makes one), and the active-sequence events routers share.
export type { LoadTracker, WorkerLoad } from "./books/load-tracker.ts";
export {
  ActiveSequenceEventSchema,
  activeSequenceEventToWire,
  type ActiveSequenceEvent,
  type ActiveSequenceEventData,
} from "./books/sequence-events.ts";

// The KV index as the metrics and the edge read it.
export type { EventCounters, KvIndex } from "./kv-index/types.ts";

// Events in: where an event came from, and the engines' recovery query the adapters implement.
export type { EventSource, WorkerQuery } from "./recovery/types.ts";

// Admission: the queue in front of the scheduler when every worker is busy, and a tenant's share
// of it (its priority band and fair-admission weight) that the edge hands in per request.
export {
  AdmissionGate,
  type AdmissionGateOptions,
  type AdmitOptions,
} from "./admission/admission-gate.ts";
export type { TenantShare } from "./admission/virtual-token-counter.ts";

// Sticky sessions: the policy, the store interface every store implements, the embedded store,
// and engine-backed session turns.
export { StickyRouter, type StickyOptions } from "./sessions/sticky.ts";
export { MemoryAffinityStore, type MemoryAffinityStoreOptions } from "./sessions/memory-store.ts";
export {
  REAPER_INTERVAL_MS,
  type AffinityKind,
  type AffinityStore,
  type Binding,
  type OnExpire,
  type StoreClock,
} from "./sessions/store.ts";
export {
  sessionControlOf,
  type EngineSessionOps,
  type SessionControl,
} from "./sessions/session-control.ts";
