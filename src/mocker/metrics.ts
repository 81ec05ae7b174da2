/**
 * Prometheus text exposition of the simulated engine: request and token counters, queue
 * depth, running sequences and cache usage per dp rank, KV event publishing (per router). Read-only:
 * it renders the engine's state, it does not keep any.
 */
import { type MockEngine, rankLoad } from "./engine.ts";
import type { HandoffStats } from "./kv-handoff.ts";
import type { TierStats } from "./kv-tiers.ts";
import type { PeerStats } from "./peer-pull.ts";
import { prefillFamilies } from "./prefill-stats.ts";
import type { EventPublisher } from "./publisher.ts";

type Sample = readonly [labels: string, value: number];

function family(
  out: string[],
  name: string,
  type: "counter" | "gauge",
  help: string,
  samples: readonly Sample[],
): void {
  out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  for (const [labels, value] of samples) out.push(`${name}${labels} ${value}`);
}

export function renderMetrics(
  engine: MockEngine,
  publishers: readonly EventPublisher[] = [],
  handoff?: HandoffStats,
  peer?: PeerStats,
): string {
  const c = engine.counters;
  const ranks = engine.ranks.map((r, i) => [`{dp_rank="${i}"}`, rankLoad(r), r] as const);
  const out: string[] = [];
  family(out, "mocker_requests_total", "counter", "Completion requests received.", [
    ["", c.requests],
  ]);
  family(
    out,
    "mocker_unknown_model_total",
    "counter",
    "Requests for a model this engine does not serve (404).",
    [["", c.unknownModel]],
  );
  family(
    out,
    "mocker_requests_aborted_total",
    "counter",
    "Requests cancelled by the client before they finished.",
    [["", c.aborted]],
  );
  family(
    out,
    "mocker_prompt_tokens_total",
    "counter",
    "Prompt tokens of requests that reached prefill.",
    [["", c.promptTokens]],
  );
  family(
    out,
    "mocker_cached_tokens_total",
    "counter",
    "Prompt tokens served from the prefix cache.",
    [["", c.cachedTokens]],
  );
  family(out, "mocker_completion_tokens_total", "counter", "Output tokens generated.", [
    ["", c.completionTokens],
  ]);
  family(
    out,
    "mocker_queue_depth",
    "gauge",
    "Requests waiting for a running slot.",
    ranks.map(([l, q]) => [l, q.waiting]),
  );
  family(
    out,
    "mocker_prefill_queue_depth",
    "gauge",
    "Admitted requests whose prompt is not computed yet.",
    ranks.map(([l, q]) => [l, q.prefilling]),
  );
  family(
    out,
    "mocker_running",
    "gauge",
    "Admitted (running) sequences.",
    ranks.map(([l, q]) => [l, q.running]),
  );
  family(
    out,
    "mocker_decoding",
    "gauge",
    "Sequences in the decode phase.",
    ranks.map(([l, q]) => [l, q.decoding]),
  );
  family(
    out,
    "mocker_kv_blocks_used",
    "gauge",
    "Blocks held by the prefix cache.",
    ranks.map(([l, , r]) => [l, r.kv.cache.size]),
  );
  family(
    out,
    "mocker_kv_blocks_pinned",
    "gauge",
    "Cached blocks in use by running requests.",
    ranks.map(([l, , r]) => [l, r.kv.cache.pinnedCount]),
  );
  family(
    out,
    "mocker_kv_blocks_capacity",
    "gauge",
    "Prefix-cache capacity in blocks.",
    ranks.map(([l, , r]) => [l, r.kv.cache.capacity]),
  );
  family(
    out,
    "mocker_kv_cache_usage",
    "gauge",
    "Fraction of the prefix cache in use.",
    ranks.map(([l, , r]) => [l, r.kv.cache.size / r.kv.cache.capacity]),
  );
  family(
    out,
    "mocker_kv_events_total",
    "counter",
    "KV events emitted since the last restart.",
    ranks.map(([l, , r]) => [l, Number(r.kv.log.nextEventId)]),
  );
  family(out, "mocker_loras_loaded", "gauge", "LoRA adapters loaded.", [
    ["", engine.loras.list().length],
  ]);
  family(out, "mocker_sessions_open", "gauge", "Engine-backed sessions open.", [
    ["", engine.sessions.openCount],
  ]);
  // The load gauges under vLLM V1's own names and labels (vllm/v1/metrics/loggers.py,
  // PrometheusStatLogger: `engine` = the DP engine index, `model_name`), so the router's
  // --engine-metrics-interval scrape reads this engine as it reads vLLM. KV usage, as in
  // vLLM, counts blocks held by running requests; cached blocks nobody uses are free.
  const vllm = engine.ranks.map(
    (r, i) => [`{engine="${i}",model_name="${escapeLabel(engine.config.model)}"}`, r] as const,
  );
  family(
    out,
    "vllm:num_requests_running",
    "gauge",
    "Number of requests in model execution batches.",
    vllm.map(([l, r]) => [l, rankLoad(r).running]),
  );
  family(
    out,
    "vllm:num_requests_waiting",
    "gauge",
    "Number of requests waiting to be processed.",
    vllm.map(([l, r]) => [l, rankLoad(r).waiting]),
  );
  family(
    out,
    "vllm:kv_cache_usage_perc",
    "gauge",
    "KV-cache usage. 1 means 100 percent usage.",
    vllm.map(([l, r]) => [l, r.kv.cache.pinnedCount / r.kv.cache.capacity]),
  );
  // And the prefill histograms vLLM records as each request finishes: the router reads their sums for each engine's own prefill speed.
  out.push(...prefillFamilies(vllm.map(([l, r]) => [l.slice(1, -1), r.prefillStats] as const)));
  if (publishers.length > 0) {
    const byRouter = (get: (p: EventPublisher) => number): Sample[] =>
      publishers.map((p) => [`{router="${p.routerUrl}"}`, get(p)]);
    family(
      out,
      "mocker_event_batches_sent_total",
      "counter",
      "KV event batches the router accepted.",
      byRouter((p) => p.sentBatches),
    );
    family(
      out,
      "mocker_event_push_failures_total",
      "counter",
      "KV event batches dropped after a failed push.",
      byRouter((p) => p.failedBatches),
    );
  }
  if (handoff !== undefined) {
    const h = handoff;
    family(
      out,
      "mocker_kv_transfer_blocks_total",
      "counter",
      "KV blocks pulled from prefill engines (decode side), content checked.",
      [["", h.importedBlocks]],
    );
    family(out, "mocker_kv_transfer_bytes_total", "counter", "Bytes of those blocks.", [
      ["", h.importedBytes],
    ]);
    family(
      out,
      "mocker_kv_transfer_copy_seconds_total",
      "counter",
      "Time in the native batched copies alone.",
      [["", h.importCopySeconds]],
    );
    family(
      out,
      "mocker_kv_transfer_imports_total",
      "counter",
      "Hand-offs this decode engine took part in.",
      [["", h.imports]],
    );
    family(
      out,
      "mocker_kv_transfer_failures_total",
      "counter",
      "Hand-offs that fell back to local prefill (segment gone, bad content, prefill down).",
      [["", h.importFailures]],
    );
    family(
      out,
      "mocker_kv_transfer_mismatched_blocks_total",
      "counter",
      "Transferred blocks whose bytes were wrong (must stay 0).",
      [["", h.mismatchedBlocks]],
    );
    family(
      out,
      "mocker_kv_exported_blocks_total",
      "counter",
      "KV blocks written for decode engines (prefill side).",
      [["", h.exportedBlocks]],
    );
    family(
      out,
      "mocker_kv_exported_segments_total",
      "counter",
      "Shared-memory segments written (prefill side).",
      [["", h.exportedSegments]],
    );
    family(
      out,
      "mocker_kv_expired_segments_total",
      "counter",
      "Segments no decode engine fetched within --kv-lease-ms, removed.",
      [["", h.expiredSegments]],
    );
  }
  const tiered = ranks.filter(([, , r]) => r.tiers !== null);
  if (tiered.length > 0) {
    const t = (get: (s: TierStats) => number): Sample[] =>
      tiered.map(([l, , r]) => [l, get(r.tiers!.stats)]);
    family(
      out,
      "mocker_kv_tier_blocks",
      "gauge",
      "Blocks held by the host tier.",
      tiered.map(([l, , r]) => [l, r.tiers!.host.size]),
    );
    family(
      out,
      "mocker_kv_tier_offloaded_blocks_total",
      "counter",
      "GPU evictions copied device -> host.",
      t((s) => s.offloadedBlocks),
    );
    family(
      out,
      "mocker_kv_tier_spilled_blocks_total",
      "counter",
      "Host evictions copied host -> disk.",
      t((s) => s.spilledBlocks),
    );
    family(
      out,
      "mocker_kv_tier_loaded_blocks_total",
      "counter",
      "Blocks loaded into the GPU from the host tier instead of computed.",
      t((s) => s.loadedFromHost),
    );
    family(
      out,
      "mocker_kv_tier_disk_loaded_blocks_total",
      "counter",
      "Blocks loaded into the GPU from the disk tier instead of computed.",
      t((s) => s.loadedFromDisk),
    );
    family(
      out,
      "mocker_kv_tier_offload_failures_total",
      "counter",
      "Offloads that failed (those blocks never reached the host tier).",
      t((s) => s.failures),
    );
    family(
      out,
      "mocker_kv_tier_mismatched_blocks_total",
      "counter",
      "Loaded blocks whose bytes were wrong (must stay 0).",
      t((s) => s.mismatchedBlocks),
    );
  }
  if (peer !== undefined && peer.pulls + peer.exports > 0) {
    family(out, "mocker_kv_p2p_exports_total", "counter", "Peer pulls this engine served.", [
      ["", peer.exports],
    ]);
    family(
      out,
      "mocker_kv_p2p_exported_blocks_total",
      "counter",
      "Blocks written for pulling peers.",
      [["", peer.exportedBlocks]],
    );
    family(
      out,
      "mocker_kv_p2p_pulls_total",
      "counter",
      "Pulls this engine made (kv_transfer_params.remote_kv_source).",
      [["", peer.pulls]],
    );
    family(
      out,
      "mocker_kv_p2p_pulled_blocks_total",
      "counter",
      "Blocks pulled from peers, content checked.",
      [["", peer.pulledBlocks]],
    );
    family(
      out,
      "mocker_kv_p2p_pull_failures_total",
      "counter",
      "Pulls that fell back to computing (peer down, bad bytes, deadline).",
      [["", peer.pullFailures]],
    );
    family(
      out,
      "mocker_kv_p2p_mismatched_blocks_total",
      "counter",
      "Pulled blocks whose bytes were wrong (must stay 0).",
      [["", peer.mismatchedBlocks]],
    );
    family(
      out,
      "mocker_kv_p2p_pull_timeouts_total",
      "counter",
      "Pulls abandoned at --kv-pull-deadline-ms.",
      [["", peer.pullTimeouts]],
    );
  }
  if (peer !== undefined && (peer.exportsWaiting > 0 || peer.pulls + peer.exports > 0))
    family(
      out,
      "mocker_kv_p2p_exports_waiting",
      "gauge",
      "Peer exports waiting for a rank's prefill lane.",
      [["", peer.exportsWaiting]],
    );
  return out.join("\n") + "\n";
}

function escapeLabel(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
