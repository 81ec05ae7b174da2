import { describe, expect, test } from "bun:test";
import { MetricsRegistry } from "../../../src/observe/registry.ts";

describe("MetricsRegistry", () => {
  test("renders counters, gauges and cumulative histograms in the text format", () => {
    const r = new MetricsRegistry();
    const c = r.counter("x_total", "things", ["worker", "status"]);
    c.inc(["1", "200"]);
    c.inc(["1", "200"], 2);
    const g = r.gauge("y", "level");
    g.set([], 5);
    const h = r.histogram("z_seconds", "time", ["phase"], [0.1, 1]);
    h.observe(["hash"], 0.05);
    h.observe(["hash"], 0.5);
    h.observe(["hash"], 5);
    const text = r.render();
    expect(text).toContain("# TYPE x_total counter");
    expect(text).toContain('x_total{worker="1",status="200"} 3');
    expect(text).toContain("y 5");
    expect(text).toContain('z_seconds_bucket{phase="hash",le="0.1"} 1');
    expect(text).toContain('z_seconds_bucket{phase="hash",le="1"} 2');
    expect(text).toContain('z_seconds_bucket{phase="hash",le="+Inf"} 3');
    expect(text).toContain('z_seconds_count{phase="hash"} 3');
  });

  test("label values are escaped and collect callbacks run at scrape time", () => {
    const r = new MetricsRegistry();
    let n = 0;
    r.gauge("g", "h", ["l"]).onCollect((g) => g.set(['a"b\\c'], ++n));
    expect(r.render()).toContain('g{l="a\\"b\\\\c"} 1');
    expect(r.render()).toContain('g{l="a\\"b\\\\c"} 2');
  });

  test("a name registered twice is refused", () => {
    const r = new MetricsRegistry();
    r.counter("a", "h");
    expect(() => r.gauge("a", "h")).toThrow("twice");
  });
});
