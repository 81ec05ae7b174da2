/**
 * The tracer as the request path sees it: start a span under a parent (a client's W3C
 * context, or another span), set attributes, end it at a given time. Runtime-free, so the
 * edge and the observation code run unchanged on every runtime; the OpenTelemetry SDK sits
 * behind it on Bun only (otel-tracer.ts, wired by src/runtime/bun.ts when --otlp-endpoint is
 * set). Without a tracer no span object is made at all.
 *
 * Times are milliseconds since the epoch with sub-millisecond precision (performance.timeOrigin
 * + performance.now()), as OpenTelemetry's TimeInput takes them, so spans that are recorded
 * after the fact (tokenization, admission wait) get their real start and end.
 */

export type SpanKind = "server" | "client" | "internal";
export type AttributeValue = string | number | boolean | readonly string[] | readonly number[];
export type Attributes = Readonly<Record<string, AttributeValue | undefined>>;

/** A span's identity as W3C trace context carries it. */
export interface SpanIdentity {
  readonly traceId: string;
  readonly spanId: string;
  readonly sampled: boolean;
  /** The caller's tracestate, passed on unchanged. */
  readonly tracestate?: string;
}

export interface SpanHandle {
  readonly identity: SpanIdentity;
  set(attributes: Attributes): void;
  event(name: string, timeMs: number, attributes?: Attributes): void;
  /** Marks the span failed (status ERROR) with a short reason. */
  fail(message: string): void;
  end(timeMs: number): void;
}

export interface StartSpan {
  readonly name: string;
  readonly kind: SpanKind;
  /** A remote caller's context or a local span's; undefined starts a new trace. */
  readonly parent: SpanIdentity | undefined;
  /** True when the parent came from another process (a client's traceparent). */
  readonly remoteParent?: boolean;
  readonly startMs: number;
  readonly attributes?: Attributes;
}

export interface Tracer {
  start(s: StartSpan): SpanHandle;
  /** Export every finished span now (they are otherwise batched). */
  flush(): Promise<void>;
  /** Export what is buffered and stop (router stopping). */
  shutdown(): Promise<void>;
}
