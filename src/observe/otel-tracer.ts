/**
 * The Tracer port (tracing.ts) over the official OpenTelemetry JavaScript SDK, exporting spans
 * over OTLP/HTTP in protobuf (the OTLP spec's default encoding, what every collector takes) to
 * `--otlp-endpoint`. Wired by src/runtime/bun.ts only: the SDK runs on Bun as it is (the 3.x
 * packages, nothing patched), and the Deno and workerd entries refuse the flag rather than
 * carry an exporter nobody tested there.
 *
 * Spans are batched (BatchSpanProcessor: at most a second late, 512 per export, a bounded
 * queue that drops rather than grows when the collector is away), so the request path only
 * records; shutdown() exports what is left. Parents come from our own span identities, never
 * from the SDK's context manager: the router's request path is callbacks and promises across
 * many requests at once, and an explicit parent cannot attach a span to the wrong request.
 */
import {
  createTraceState,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes as OtelAttributes,
} from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import type { Attributes, SpanHandle, SpanKind as Kind, StartSpan, Tracer } from "./tracing.ts";

/** Where traces go: a base URL gets the signal path (/v1/traces), as OTEL_EXPORTER_OTLP_ENDPOINT does; a URL naming it is used as is. */
export function otlpTracesUrl(endpoint: string): string {
  const u = new URL(endpoint);
  if (u.pathname.endsWith("/v1/traces")) return u.toString();
  u.pathname = `${u.pathname.replace(/\/+$/, "")}/v1/traces`;
  return u.toString();
}

const KIND: Readonly<Record<Kind, SpanKind>> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  internal: SpanKind.INTERNAL,
};

/** Attributes without the undefined ones (the SDK warns on each). */
function clean(a: Attributes | undefined): OtelAttributes | undefined {
  if (a === undefined) return undefined;
  const out: OtelAttributes = {};
  for (const k in a) {
    const v = a[k];
    if (v !== undefined) out[k] = v as OtelAttributes[string];
  }
  return out;
}

export interface OtelTracerOptions {
  readonly endpoint: string;
  /** service.name and the instrumentation scope (default "switchyard"). */
  readonly serviceName?: string;
  readonly serviceVersion: string;
  /** Extra resource attributes (e.g. service.instance.id). */
  readonly resource?: Readonly<Record<string, string>>;
  /** Longest wait before a finished span is exported (default 1000 ms). */
  readonly exportDelayMs?: number;
}

export function otelTracer(o: OtelTracerOptions): Tracer {
  const exporter = new OTLPTraceExporter({ url: otlpTracesUrl(o.endpoint) });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: o.serviceName ?? "switchyard",
      [ATTR_SERVICE_VERSION]: o.serviceVersion,
      ...o.resource,
    }),
    // An export that hangs (a collector away) is given up after 10 s; the queue drops beyond 8 192 spans.
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        scheduledDelayMillis: o.exportDelayMs ?? 1000,
        maxExportBatchSize: 512,
        maxQueueSize: 8192,
        exportTimeoutMillis: 10_000,
      }),
    ],
  });
  const tracer = provider.getTracer(o.serviceName ?? "switchyard", o.serviceVersion);
  return {
    start(s: StartSpan): SpanHandle {
      const p = s.parent;
      const parent =
        p === undefined
          ? ROOT_CONTEXT
          : trace.setSpanContext(ROOT_CONTEXT, {
              traceId: p.traceId,
              spanId: p.spanId,
              traceFlags: p.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
              isRemote: s.remoteParent === true,
              traceState: p.tracestate !== undefined ? createTraceState(p.tracestate) : undefined,
            });
      const span = tracer.startSpan(
        s.name,
        { kind: KIND[s.kind], startTime: s.startMs, attributes: clean(s.attributes) },
        parent,
      );
      const sc = span.spanContext();
      return {
        // The trace state travels with the identity, so children made from it keep the caller's.
        identity: {
          traceId: sc.traceId,
          spanId: sc.spanId,
          sampled: (sc.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED,
          tracestate: sc.traceState?.serialize() || undefined,
        },
        set: (a) => void span.setAttributes(clean(a) ?? {}),
        event: (name, timeMs, a) => void span.addEvent(name, clean(a), timeMs),
        fail: (message) => void span.setStatus({ code: SpanStatusCode.ERROR, message }),
        end: (timeMs) => span.end(timeMs),
      };
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
