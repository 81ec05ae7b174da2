/**
 * The official OpenTelemetry SDK behind our Tracer port, on Bun, exporting to a receiver that
 * decodes what it sends (OTLP/HTTP protobuf): parents, kinds, times, attributes, events, status
 * and the client's tracestate arrive as given.
 */
import { describe, expect, test } from "bun:test";
import { otelTracer, otlpTracesUrl } from "../../../src/observe/otel-tracer.ts";
import { SPAN_KIND, startOtlpReceiver } from "../../support/otlp-receiver.ts";

describe("OpenTelemetry export", () => {
  test("the endpoint: a base URL gets /v1/traces, a URL naming it is kept", () => {
    expect(otlpTracesUrl("http://collector:4318")).toBe("http://collector:4318/v1/traces");
    expect(otlpTracesUrl("http://collector:4318/")).toBe("http://collector:4318/v1/traces");
    expect(otlpTracesUrl("https://otel.example/api/v1/traces")).toBe(
      "https://otel.example/api/v1/traces",
    );
    expect(otlpTracesUrl("http://c:4318/prefix")).toBe("http://c:4318/prefix/v1/traces");
  });

  test("spans under a remote parent reach the collector as protobuf with their ids, times and attributes", async () => {
    const rx = startOtlpReceiver();
    try {
      const tracer = otelTracer({ endpoint: rx.url, serviceVersion: "1.2.3", exportDelayMs: 50 });
      const t0 = Date.UTC(2026, 0, 1);
      const client = {
        traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
        spanId: "00f067aa0ba902b7",
        sampled: true,
        tracestate: "congo=t61rcWkgMzE",
      };
      const server = tracer.start({
        name: "POST /v1/chat/completions",
        kind: "server",
        parent: client,
        remoteParent: true,
        startMs: t0,
        attributes: { "http.request.method": "POST", skipped: undefined },
      });
      const route = tracer.start({
        name: "route",
        kind: "internal",
        parent: server.identity,
        startMs: t0 + 1,
        attributes: {
          "switchyard.route.candidates": 3,
          "switchyard.route.candidate_costs": ["1:0 cost=2", "2:0 cost=5"],
        },
      });
      route.end(t0 + 1.5);
      const up = tracer.start({
        name: "POST",
        kind: "client",
        parent: server.identity,
        startMs: t0 + 2,
      });
      up.event("first_byte", t0 + 10);
      up.fail("HTTP 503");
      up.end(t0 + 20);
      server.set({ "http.response.status_code": 200, "gen_ai.request.model": "llama" });
      server.end(t0 + 30);
      expect(server.identity.traceId).toBe(client.traceId);
      await tracer.shutdown();

      expect(rx.contentTypes[0]).toBe("application/x-protobuf");
      const byName = Object.fromEntries(rx.spans.map((s) => [s.name, s]));
      const s = byName["POST /v1/chat/completions"]!;
      expect(s).toMatchObject({
        traceId: client.traceId,
        parentSpanId: client.spanId,
        kind: SPAN_KIND.server,
        traceState: "congo=t61rcWkgMzE",
      });
      expect(s.attributes).toEqual({
        "http.request.method": "POST",
        "http.response.status_code": 200,
        "gen_ai.request.model": "llama",
      });
      expect(s.startNs).toBe(BigInt(t0) * 1_000_000n);
      expect(s.endNs).toBe(BigInt(t0 + 30) * 1_000_000n);
      expect(s.resource).toMatchObject({
        "service.name": "switchyard",
        "service.version": "1.2.3",
      });
      expect(s.scope).toBe("switchyard");
      expect(byName.route).toMatchObject({
        parentSpanId: s.spanId,
        kind: SPAN_KIND.internal,
        attributes: {
          "switchyard.route.candidates": 3,
          "switchyard.route.candidate_costs": ["1:0 cost=2", "2:0 cost=5"],
        },
      });
      expect(byName.POST).toMatchObject({
        parentSpanId: s.spanId,
        kind: SPAN_KIND.client,
        status: { code: 2, message: "HTTP 503" },
      });
      expect(byName.POST!.events.map((e) => e.name)).toEqual(["first_byte"]);
      expect(new Set(rx.spans.map((x) => x.traceId))).toEqual(new Set([client.traceId]));
    } finally {
      rx.stop();
    }
  });

  test("without a parent a new trace starts, sampled", async () => {
    const rx = startOtlpReceiver();
    try {
      const tracer = otelTracer({ endpoint: rx.url, serviceVersion: "0", exportDelayMs: 50 });
      const s = tracer.start({ name: "x", kind: "server", parent: undefined, startMs: Date.now() });
      s.end(Date.now());
      expect(s.identity.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(s.identity.sampled).toBe(true);
      await tracer.shutdown();
      expect(rx.spans).toHaveLength(1);
      expect(rx.spans[0]).toMatchObject({ traceId: s.identity.traceId, parentSpanId: "" });
    } finally {
      rx.stop();
    }
  });
});
