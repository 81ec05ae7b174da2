/**
 * One trace across client, router and engine: a real router process with --otlp-endpoint
 * exporting to a receiver in this test that decodes what the OpenTelemetry exporter sends
 * (OTLP/HTTP protobuf), in front of two stand-in engines that trace too — each continues the
 * traceparent it receives and exports its own span, as an engine with OpenTelemetry does.
 * Checked: a client's trace id is continued; the router's spans (request, tokenization, the
 * routing decision with its attributes, each upstream try to its first byte and to its end) hang
 * under the right parents; the engine's span hangs under the router's upstream span; the
 * access line names the same trace; an unsampled client trace is passed on, not recorded.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { otelTracer } from "../../src/observe/otel-tracer.ts";
import { parseTraceparent } from "../../src/observe/trace-context.ts";
import type { Tracer } from "../../src/observe/tracing.ts";
import {
  SPAN_KIND,
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from "../support/otlp-receiver.ts";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";

let rx: OtlpReceiver | undefined;
let router: Proc | undefined;
let engineTracer: Tracer | undefined;
const engines: ReturnType<typeof Bun.serve>[] = [];
/** Per request id: the traceparent each engine call carried. */
const received = new Map<string, string[]>();
/** Request ids whose first engine call answers 503 (so the router retries on the other engine). */
const failFirst = new Set<string>();

function standInEngine(): ReturnType<typeof Bun.serve> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/health") return new Response("ok");
      if (path === "/v1/models")
        return Response.json({ object: "list", data: [{ id: "traced", object: "model" }] });
      if (path !== "/v1/completions") return new Response("not found", { status: 404 });
      const id = req.headers.get("x-request-id") ?? "";
      const tp = req.headers.get("traceparent") ?? "";
      received.set(id, [...(received.get(id) ?? []), tp]);
      // The engine's own span, under whatever context it was handed (the router's upstream span).
      const parent = parseTraceparent(tp);
      const span = parent?.sampled
        ? engineTracer!.start({
            name: "engine generate",
            kind: "server",
            parent,
            remoteParent: true,
            startMs: Date.now(),
          })
        : undefined;
      if (failFirst.delete(id)) {
        span?.fail("busy");
        span?.end(Date.now());
        return new Response("busy", { status: 503 });
      }
      await Bun.sleep(5);
      span?.end(Date.now());
      const sse =
        ["a", "b", "c"].map((t) => `data: {"choices":[{"text":"${t}"}]}\n\n`).join("") +
        "data: [DONE]\n\n";
      return new Response(sse, { headers: { "content-type": "text/event-stream" } });
    },
  });
}

beforeAll(async () => {
  rx = startOtlpReceiver();
  engineTracer = otelTracer({
    endpoint: rx.url,
    serviceName: "stand-in-engine",
    serviceVersion: "0",
    exportDelayMs: 50,
  });
  engines.push(standInEngine(), standInEngine());
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--log-format",
    "json",
    "--health-interval",
    "30",
    "--otlp-endpoint",
    rx.url,
    ...engines.flatMap((e) => ["--worker", `http://127.0.0.1:${e.port}`]),
  ]);
  // The route span's candidate count is asserted: both engines must be registered and healthy
  // first (a registration slowed by a loaded machine is retried, not waited for, at start).
  await until(
    async () => {
      const res = await fetch(`${router!.info.url}/v1/workers`);
      const body = (await res.json()) as
        | { workers?: { healthy?: boolean }[] }
        | { healthy?: boolean }[];
      const list = Array.isArray(body) ? body : (body.workers ?? []);
      return list.filter((w) => w.healthy === true).length === engines.length;
    },
    "both engines registered and healthy",
    15_000,
    20,
  );
});

afterAll(async () => {
  await stopAll([router]);
  await engineTracer?.shutdown();
  for (const e of engines) e.stop(true);
  rx?.stop();
});

async function complete(
  headers: Record<string, string>,
  prompt = "trace me through the router",
): Promise<Response> {
  const res = await fetch(`${router!.info.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "traced", prompt, stream: true }),
  });
  await res.text();
  return res;
}

function spansOf(traceId: string): ReceivedSpan[] {
  return rx!.spans.filter((s) => s.traceId === traceId);
}

/** Wait until the trace has the router's request span and the engine's span (exports are batched, ~1 s). */
function traceOf(traceId: string, engineSpans = 1): Promise<ReceivedSpan[]> {
  return until(
    () => {
      const s = spansOf(traceId);
      return s.some(
        (x) =>
          x.kind === SPAN_KIND.server && x.scope === "switchyard" && x.name.startsWith("POST /v1"),
      ) && s.filter((x) => x.name === "engine generate").length >= engineSpans
        ? s
        : undefined;
    },
    () =>
      `the spans of trace ${traceId} (have ${JSON.stringify(spansOf(traceId).map((x) => x.name))})`,
    15_000,
    50,
  );
}

function accessLine(requestId: string): Promise<Record<string, unknown>> {
  return until(() => {
    const l = router!
      .output()
      .split("\n")
      .find((x) => x.includes('"msg":"request"') && x.includes(`"request_id":"${requestId}"`));
    return l ? (JSON.parse(l) as Record<string, unknown>) : undefined;
  }, `the access line of ${requestId}`);
}

describe("tracing (a real router, --otlp-endpoint, OTLP/HTTP protobuf)", () => {
  test("a client's trace is continued through the router into the engine, each span under its parent", async () => {
    await complete({
      "x-request-id": "trace-1",
      traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
      tracestate: "client=1",
    });
    const spans = await traceOf(CLIENT_TRACE);
    expect(rx!.contentTypes).toContain("application/x-protobuf");
    const router = spans.filter((s) => s.scope === "switchyard");
    const server = router.find((s) => s.kind === SPAN_KIND.server)!;
    expect(server).toMatchObject({ name: "POST /v1/completions", parentSpanId: CLIENT_SPAN });
    expect(server.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/completions",
      "http.response.status_code": 200,
      "gen_ai.operation.name": "text_completion",
      "gen_ai.request.model": "traced",
      "gen_ai.usage.output_tokens": 3,
      "switchyard.request_id": "trace-1",
    });
    const child = (name: string) =>
      router.find((s) => s.name === name && s.parentSpanId === server.spanId);
    expect(child("tokenize")).toBeDefined();
    const route = child("route")!;
    expect(route.attributes["switchyard.route.candidates"]).toBe(2);
    expect(route.attributes["switchyard.route.worker_id"]).toMatch(/^\d+$/);
    expect(typeof route.attributes["switchyard.route.cost"]).toBe("number");
    expect(route.attributes["switchyard.route.overlap_blocks"]).toBe(0);
    expect((route.attributes["switchyard.route.candidate_costs"] as string[]).length).toBe(2);
    const upstream = child("POST")!;
    expect(upstream.kind).toBe(SPAN_KIND.client);
    expect(upstream.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.response.status_code": 200,
      "server.address": "127.0.0.1",
    });
    expect(String(upstream.attributes["url.full"])).toEndWith("/v1/completions");
    // To the first byte (an event, and its time) and to the end (the span's end).
    const firstByte = upstream.events.find((e) => e.name === "first_byte")!;
    expect(firstByte.timeNs).toBeGreaterThan(upstream.startNs);
    expect(firstByte.timeNs).toBeLessThanOrEqual(upstream.endNs);
    expect(upstream.attributes["switchyard.upstream.first_byte_ms"]).toBeGreaterThan(0);
    // Times nest: the request holds its upstream call.
    expect(upstream.startNs).toBeGreaterThanOrEqual(server.startNs);
    expect(upstream.endNs).toBeLessThanOrEqual(server.endNs);
    // The engine continued the router's upstream span, with the client's trace state passed along.
    const tp = parseTraceparent(received.get("trace-1")![0])!;
    expect(tp).toEqual({ traceId: CLIENT_TRACE, spanId: upstream.spanId, sampled: true });
    expect(spans.find((s) => s.name === "engine generate")!.parentSpanId).toBe(upstream.spanId);
    expect(upstream.traceState).toBe("client=1");
    expect((await accessLine("trace-1")).trace_id).toBe(CLIENT_TRACE);
  });

  test("without a client context the router starts the trace; the engine and the access line join it", async () => {
    const res = await complete({ "x-request-id": "trace-2" });
    expect(res.status).toBe(200);
    const tp = parseTraceparent(received.get("trace-2")![0])!;
    expect(tp.traceId).not.toBe(CLIENT_TRACE);
    const spans = await traceOf(tp.traceId);
    const server = spans.find((s) => s.scope === "switchyard" && s.kind === SPAN_KIND.server)!;
    expect(server.parentSpanId).toBe("");
    expect(spans.find((s) => s.name === "POST" && s.kind === SPAN_KIND.client)!.spanId).toBe(
      tp.spanId,
    );
    expect((await accessLine("trace-2")).trace_id).toBe(tp.traceId);
  });

  test("a failed try and its retry are two upstream spans; the failed one is an error", async () => {
    failFirst.add("trace-3");
    const trace = "5bf92f3577b34da6a3ce929d0e0e4737";
    await complete(
      { "x-request-id": "trace-3", traceparent: `00-${trace}-${CLIENT_SPAN}-01` },
      "a request whose first engine is busy",
    );
    const spans = await traceOf(trace, 2);
    const tries = spans
      .filter((s) => s.scope === "switchyard" && s.kind === SPAN_KIND.client)
      .sort((a, b) => Number(a.startNs - b.startNs));
    expect(tries).toHaveLength(2);
    expect(tries[0]!.status.code).toBe(2);
    expect(tries[0]!.status.message).toContain("503");
    expect(tries[1]!.status.code).toBe(0);
    expect(tries[1]!.attributes["http.request.resend_count"]).toBe(1);
    expect(received.get("trace-3")!.map((t) => parseTraceparent(t)!.spanId)).toEqual(
      tries.map((t) => t.spanId),
    );
    expect(await accessLine("trace-3")).toMatchObject({ retries: 1, trace_id: trace });
  });

  test("an unsampled client trace is passed to the engine unchanged and not recorded", async () => {
    const trace = "6bf92f3577b34da6a3ce929d0e0e4738";
    const header = `00-${trace}-${CLIENT_SPAN}-00`;
    await complete({ "x-request-id": "trace-4", traceparent: header });
    expect(received.get("trace-4")).toEqual([header]);
    // A later sampled request's spans arrive; none of the unsampled one's ever do.
    const later = "7bf92f3577b34da6a3ce929d0e0e4739";
    await complete({ "x-request-id": "trace-5", traceparent: `00-${later}-${CLIENT_SPAN}-01` });
    await traceOf(later);
    expect(spansOf(trace)).toEqual([]);
    expect((await accessLine("trace-4")).trace_id).toBe(trace);
  });
});
