/** The rejected series of a pod live as long as the pod, on the real metrics registry. */
import { expect, test } from "bun:test";
import { discoveryMetrics } from "../../../../src/fleet/discovery/discovery-metrics.ts";
import { MetricsRegistry } from "../../../../src/observe/registry.ts";

test("forget drops every field's series of that pod and only that pod's", () => {
  const registry = new MetricsRegistry();
  const m = discoveryMetrics(registry);
  m.rejected("ml/a-1", "role");
  m.rejected("ml/a-1", "tokenizer");
  m.rejected("ml/b-1", "role");
  expect(registry.render()).toContain(
    'switchyard_discovery_rejected_total{pod="ml/a-1",field="tokenizer"} 1',
  );
  m.forget("ml/a-1");
  const text = registry.render();
  expect(text).not.toContain('pod="ml/a-1"');
  expect(text).toContain('switchyard_discovery_rejected_total{pod="ml/b-1",field="role"} 1');
  m.forget("ml/never-seen");
  expect(registry.render()).toBe(text);
});
