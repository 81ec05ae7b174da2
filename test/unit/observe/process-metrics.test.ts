import { describe, expect, test } from "bun:test";
import {
  bindProcessMetrics,
  EventLoopLag,
  LAG_JITTER_MS,
  LAG_SAMPLE_MS,
} from "../../../src/observe/process-metrics.ts";
import { MetricsRegistry } from "../../../src/observe/registry.ts";

describe("process metrics", () => {
  test("the standard names from the probe; what the probe cannot tell is left out, not 0", () => {
    const r = new MetricsRegistry();
    bindProcessMetrics(r, {
      cpuSeconds: () => 1.5,
      residentBytes: () => 1024,
      startTimeSeconds: () => 1700000000,
      openFds: () => undefined,
    });
    const text = r.render();
    expect(text).toContain("# TYPE process_cpu_seconds_total counter");
    expect(text).toContain("process_cpu_seconds_total 1.5");
    expect(text).toContain("process_resident_memory_bytes 1024");
    expect(text).toContain("process_start_time_seconds 1700000000");
    expect(text).not.toContain("process_open_fds 0");
    expect(text).not.toContain("process_max_fds");
  });

  test("event-loop lag: the worst delay since the last scrape, then it starts over", () => {
    let t = 0;
    const lag = new EventLoopLag(() => t, { every: () => 1, stop: () => {} });
    lag.start();
    t += LAG_SAMPLE_MS + 3; // on time but for 3 ms
    lag.tick();
    t += LAG_SAMPLE_MS + 250; // a 250 ms stall
    lag.tick();
    t += LAG_SAMPLE_MS;
    lag.tick();
    const r = new MetricsRegistry();
    lag.bind(r);
    expect(r.render()).toContain("switchyard_event_loop_lag_seconds 0.25");
    expect(r.render()).toContain("switchyard_event_loop_lag_seconds 0\n");
  });

  test("lag since a mark: every tick's lateness past the jitter allowance, the hold in progress included", () => {
    let t = 0;
    const lag = new EventLoopLag(() => t, { every: () => 1, stop: () => {} });
    expect(lag.lagSince(lag.mark())).toBe(0);
    lag.start();
    const m = lag.mark();
    t += LAG_SAMPLE_MS + LAG_JITTER_MS; // timer jitter: not a hold
    lag.tick();
    expect(lag.lagSince(m)).toBe(0);
    t += LAG_SAMPLE_MS + 400; // held 400 ms
    lag.tick();
    expect(lag.lagSince(m)).toBe(400);
    // A hold in progress (the tick has not run yet) counts before its tick runs, and once.
    t += LAG_SAMPLE_MS + 300;
    expect(lag.lagSince(m)).toBe(700);
    const during = lag.mark(); // a wait that starts 300 ms into the hold
    t += 200;
    expect(lag.lagSince(during)).toBe(200);
    lag.tick();
    expect(lag.lagSince(m)).toBe(900);
    expect(lag.lagSince(during)).toBe(200);
  });

  test("a stopped meter reports no hold in progress", () => {
    let t = 0;
    const lag = new EventLoopLag(() => t, { every: () => 1, stop: () => {} });
    const m = lag.mark();
    t += 5000;
    expect(lag.lagSince(m)).toBe(0);
  });
});
