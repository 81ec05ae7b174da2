/**
 * What an operator needs to read the other series: switchyard_worker_info (the opaque u64
 * `worker` label joined to the engine's URL, its models and its role: `* on(worker)
 * group_left(url) switchyard_worker_info`), switchyard_build_info, the KV event path's
 * recovery counters (gaps found, restores, failures), the ZMQ event streams per (worker, dp
 * rank), and a tokenizer that disagrees with an engine's. All read at scrape time from the
 * parts that hold them.
 */
import type { BuildInfo } from "../core/build-info.ts";
import { METRIC_PREFIX } from "./names.ts";
import type { Gauge, MetricsRegistry } from "./registry.ts";

export interface WorkerInfoSource {
  readonly workers: () => Iterable<{
    readonly id: bigint;
    readonly url: string;
    readonly model?: string;
  }>;
  /** The models a worker serves (base models and adapters), when known. */
  readonly modelsOf: (id: bigint) => readonly { readonly id: string }[] | undefined;
  /** prefill | decode | both (--disagg); without it every worker is "both". */
  readonly roleOf?: (url: string) => string;
}

export function bindWorkerInfo(r: MetricsRegistry, s: WorkerInfoSource): void {
  r.gauge(
    `${METRIC_PREFIX}worker_info`,
    "1 per registered worker and model it serves: joins the u64 worker label to the engine's URL, model and role",
    ["worker", "url", "model", "role"],
  ).onCollect((g) => {
    g.reset();
    for (const w of s.workers()) {
      const role = s.roleOf?.(w.url) ?? "both";
      const served = s.modelsOf(w.id);
      const names =
        served !== undefined && served.length > 0
          ? served.map((m) => m.id)
          : [w.model ?? "unknown"];
      for (const m of names) g.set([String(w.id), w.url, m, role], 1);
    }
  });
}

export function bindBuildInfo(r: MetricsRegistry, info: BuildInfo): void {
  r.gauge(
    `${METRIC_PREFIX}build_info`,
    "1, labelled with the router's version, the commit it was built from and the runtime it runs on",
    ["version", "commit", "runtime"],
  ).set([info.version, info.commit, info.runtime], 1);
}

/** The recovery driver's counters (src/router/recovery RecoveryStats), read structurally. */
export type RecoveryCounters = Readonly<Record<string, number>>;

export function bindRecoveryMetrics(r: MetricsRegistry, stats: () => RecoveryCounters): void {
  r.counter(
    `${METRIC_PREFIX}kv_recovery_total`,
    "The KV event path's recovery work by kind: gaps (missing event ids found), recoveries started, restores (full dumps applied), restarts (an engine's ids went back), failed (gave up after retries), discarded, retries, stale events ignored",
    ["kind"],
  ).onCollect((c) => {
    for (const [kind, n] of Object.entries(stats())) if (typeof n === "number") c.set([kind], n);
  });
}

/** One subscribed (worker, dp rank) event stream (ZMQ on Bun). */
export interface StreamState {
  readonly worker: bigint;
  readonly dpRank: number;
  readonly connected: boolean;
  readonly events: number;
  readonly gaps: number;
  readonly lostBatches: number;
}

export function bindStreamMetrics(r: MetricsRegistry, streams: () => Iterable<StreamState>): void {
  const p = METRIC_PREFIX;
  const up = r.gauge(
    `${p}kv_stream_up`,
    "1 while the (worker, dp rank) KV event stream's socket is open and subscribed, 0 when lost",
    ["worker", "dp_rank"],
  );
  const events = r.counter(`${p}kv_stream_events_total`, "KV events received on the stream", [
    "worker",
    "dp_rank",
  ]);
  const gaps = r.counter(
    `${p}kv_stream_gaps_total`,
    "Sequence gaps seen on the stream (batches missing)",
    ["worker", "dp_rank"],
  );
  const lost = r.counter(
    `${p}kv_stream_lost_batches_total`,
    "Batches lost for good (beyond the engine's replay buffer): the rank is wiped",
    ["worker", "dp_rank"],
  );
  // `up` is collected first in the exposition and refreshes all four from one pass.
  up.onCollect((g) => {
    g.reset();
    for (const s of streams()) {
      const l = [String(s.worker), String(s.dpRank)];
      g.set(l, s.connected ? 1 : 0);
      events.set(l, s.events);
      gaps.set(l, s.gaps);
      lost.set(l, s.lostBatches);
    }
  });
}

/** 1 for a worker whose /tokenize disagrees with the router's tokenizer (its prompts route on tokens the engine does not see). */
export function tokenizerMismatchGauge(r: MetricsRegistry): Gauge {
  return r.gauge(
    `${METRIC_PREFIX}tokenizer_mismatch`,
    "1 when the worker's /tokenize disagrees with the router's tokenizer for its model (checked at registration)",
    ["worker"],
  );
}
