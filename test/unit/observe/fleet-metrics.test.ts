import { describe, expect, test } from "bun:test";
import {
  bindBuildInfo,
  bindRecoveryMetrics,
  bindStreamMetrics,
  bindWorkerInfo,
  type StreamState,
} from "../../../src/observe/fleet-metrics.ts";
import { MetricsRegistry } from "../../../src/observe/registry.ts";

describe("metrics that make the others readable", () => {
  test("worker_info: one series per (worker, model served), with its URL and role; a removed worker leaves", () => {
    const r = new MetricsRegistry();
    const workers = [
      { id: 18446744073709551615n, url: "http://a:8000", model: "base-a" },
      { id: 7n, url: "http://b:8000" },
    ];
    const served = new Map<bigint, { id: string }[]>([
      [7n, [{ id: "llama" }, { id: "llama-lora" }]],
    ]);
    bindWorkerInfo(r, {
      workers: () => workers,
      modelsOf: (id) => served.get(id),
      roleOf: (u) => (u.includes("a:") ? "prefill" : "both"),
    });
    let text = r.render();
    expect(text).toContain(
      'switchyard_worker_info{worker="18446744073709551615",url="http://a:8000",model="base-a",role="prefill"} 1',
    );
    expect(text).toContain(
      'switchyard_worker_info{worker="7",url="http://b:8000",model="llama",role="both"} 1',
    );
    expect(text).toContain(
      'switchyard_worker_info{worker="7",url="http://b:8000",model="llama-lora",role="both"} 1',
    );
    workers.pop();
    text = r.render();
    expect(text).not.toContain('worker="7"');
  });

  test("build_info names version, commit and runtime", () => {
    const r = new MetricsRegistry();
    bindBuildInfo(r, { version: "1.2.3", commit: "abc123", runtime: "Bun/1.4.5" });
    expect(r.render()).toContain(
      'switchyard_build_info{version="1.2.3",commit="abc123",runtime="Bun/1.4.5"} 1',
    );
  });

  test("recovery counters by kind, read at scrape time", () => {
    const r = new MetricsRegistry();
    const stats = { gaps: 0, restores: 1, failed: 0 };
    bindRecoveryMetrics(r, () => stats);
    stats.gaps = 4;
    const text = r.render();
    expect(text).toContain('switchyard_kv_recovery_total{kind="gaps"} 4');
    expect(text).toContain('switchyard_kv_recovery_total{kind="restores"} 1');
  });

  test("event streams per (worker, rank): up, events, gaps, lost batches; a stream that goes away leaves", () => {
    const r = new MetricsRegistry();
    let streams: StreamState[] = [
      { worker: 5n, dpRank: 0, connected: true, events: 10, gaps: 0, lostBatches: 0 },
      { worker: 5n, dpRank: 1, connected: false, events: 3, gaps: 2, lostBatches: 1 },
    ];
    bindStreamMetrics(r, () => streams);
    let text = r.render();
    expect(text).toContain('switchyard_kv_stream_up{worker="5",dp_rank="0"} 1');
    expect(text).toContain('switchyard_kv_stream_up{worker="5",dp_rank="1"} 0');
    expect(text).toContain('switchyard_kv_stream_gaps_total{worker="5",dp_rank="1"} 2');
    expect(text).toContain('switchyard_kv_stream_lost_batches_total{worker="5",dp_rank="1"} 1');
    expect(text).toContain('switchyard_kv_stream_events_total{worker="5",dp_rank="0"} 10');
    streams = [];
    text = r.render();
    expect(text).not.toContain("switchyard_kv_stream_up{");
  });
});
