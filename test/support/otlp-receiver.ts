/**
 * An OTLP/HTTP trace receiver for tests (no collector can be installed here): POST /v1/traces
 * with an ExportTraceServiceRequest in protobuf (what the OpenTelemetry exporter sends by
 * default, `application/x-protobuf`) or in OTLP's JSON encoding (`application/json`), decoded
 * into plain spans; answered with an empty ExportTraceServiceResponse, as the OTLP/HTTP spec
 * asks. The protobuf decoder reads only the fields a test needs, by their numbers in
 * opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto; unknown fields are skipped
 * by wire type, as protobuf readers must.
 */

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** "" for a root span. */
  readonly parentSpanId: string;
  readonly traceState: string;
  readonly name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly attributes: Record<string, unknown>;
  readonly events: { name: string; timeNs: bigint }[];
  /** OTLP StatusCode: 0 unset, 1 ok, 2 error. */
  readonly status: { code: number; message: string };
  readonly resource: Record<string, unknown>;
  readonly scope: string;
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3 } as const;

class Reader {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.buf[this.pos++];
      if (b === undefined) throw new Error("truncated varint");
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  }
  fixed64(): bigint {
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8).getBigUint64(
      0,
      true,
    );
    this.pos += 8;
    return v;
  }
  double(): number {
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8).getFloat64(0, true);
    this.pos += 8;
    return v;
  }
  bytes(): Uint8Array {
    const n = Number(this.varint());
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  /** Each field as [number, wire type]; `read` consumes the value or skips it. */
  *fields(): Generator<[number, number]> {
    while (!this.done) {
      const key = Number(this.varint());
      const start = this.pos;
      yield [key >>> 3, key & 7];
      if (this.pos === start) this.skip(key & 7);
    }
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

function anyValue(buf: Uint8Array): unknown {
  const r = new Reader(buf);
  for (const [f, w] of r.fields()) {
    if (f === 1 && w === 2) return text(r.bytes());
    if (f === 2 && w === 0) return r.varint() !== 0n;
    if (f === 3 && w === 0) return Number(BigInt.asIntN(64, r.varint()));
    if (f === 4 && w === 1) return r.double();
    if (f === 5 && w === 2) {
      const arr = new Reader(r.bytes());
      const out: unknown[] = [];
      for (const [af, aw] of arr.fields())
        if (af === 1 && aw === 2) out.push(anyValue(arr.bytes()));
      return out;
    }
  }
  return undefined;
}

function keyValues(into: Record<string, unknown>, buf: Uint8Array): void {
  const r = new Reader(buf);
  let key = "";
  let value: unknown;
  for (const [f, w] of r.fields()) {
    if (f === 1 && w === 2) key = text(r.bytes());
    else if (f === 2 && w === 2) value = anyValue(r.bytes());
  }
  into[key] = value;
}

function span(buf: Uint8Array, resource: Record<string, unknown>, scope: string): ReceivedSpan {
  const r = new Reader(buf);
  const s = {
    traceId: "",
    spanId: "",
    parentSpanId: "",
    traceState: "",
    name: "",
    kind: 0,
    startNs: 0n,
    endNs: 0n,
    attributes: {} as Record<string, unknown>,
    events: [] as { name: string; timeNs: bigint }[],
    status: { code: 0, message: "" },
    resource,
    scope,
  };
  for (const [f, w] of r.fields()) {
    if (f === 1 && w === 2) s.traceId = hex(r.bytes());
    else if (f === 2 && w === 2) s.spanId = hex(r.bytes());
    else if (f === 3 && w === 2) s.traceState = text(r.bytes());
    else if (f === 4 && w === 2) s.parentSpanId = hex(r.bytes());
    else if (f === 5 && w === 2) s.name = text(r.bytes());
    else if (f === 6 && w === 0) s.kind = Number(r.varint());
    else if (f === 7 && w === 1) s.startNs = r.fixed64();
    else if (f === 8 && w === 1) s.endNs = r.fixed64();
    else if (f === 9 && w === 2) keyValues(s.attributes, r.bytes());
    else if (f === 11 && w === 2) {
      const e = new Reader(r.bytes());
      const ev = { name: "", timeNs: 0n };
      for (const [ef, ew] of e.fields()) {
        if (ef === 1 && ew === 1) ev.timeNs = e.fixed64();
        else if (ef === 2 && ew === 2) ev.name = text(e.bytes());
      }
      s.events.push(ev);
    } else if (f === 15 && w === 2) {
      const st = new Reader(r.bytes());
      for (const [sf, sw] of st.fields()) {
        if (sf === 2 && sw === 2) s.status.message = text(st.bytes());
        else if (sf === 3 && sw === 0) s.status.code = Number(st.varint());
      }
    }
  }
  return s;
}

/** ExportTraceServiceRequest (protobuf) -> spans. */
export function decodeTraceRequest(buf: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  const req = new Reader(buf);
  for (const [f, w] of req.fields()) {
    if (f !== 1 || w !== 2) continue;
    const rs = new Reader(req.bytes());
    const resource: Record<string, unknown> = {};
    const scopes: Uint8Array[] = [];
    for (const [rf, rw] of rs.fields()) {
      if (rf === 1 && rw === 2) {
        const res = new Reader(rs.bytes());
        for (const [xf, xw] of res.fields())
          if (xf === 1 && xw === 2) keyValues(resource, res.bytes());
      } else if (rf === 2 && rw === 2) scopes.push(rs.bytes());
    }
    for (const sbuf of scopes) {
      const ss = new Reader(sbuf);
      let scope = "";
      const spans: Uint8Array[] = [];
      for (const [sf, sw] of ss.fields()) {
        if (sf === 1 && sw === 2) {
          const sc = new Reader(ss.bytes());
          for (const [cf, cw] of sc.fields()) if (cf === 1 && cw === 2) scope = text(sc.bytes());
        } else if (sf === 2 && sw === 2) spans.push(ss.bytes());
      }
      for (const b of spans) out.push(span(b, resource, scope));
    }
  }
  return out;
}

/** OTLP's JSON encoding of the same request (ids in hex, as the spec's JSON mapping says). */
function decodeJsonRequest(body: unknown): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  const value = (v: Record<string, unknown>): unknown =>
    v.stringValue ??
    v.boolValue ??
    (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
    v.doubleValue ??
    (v.arrayValue
      ? ((v.arrayValue as { values?: Record<string, unknown>[] }).values ?? []).map(value)
      : undefined);
  const kv = (list: { key: string; value: Record<string, unknown> }[] | undefined) =>
    Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));
  for (const rs of (body as { resourceSpans?: unknown[] }).resourceSpans ?? []) {
    const r = rs as {
      resource?: { attributes?: { key: string; value: Record<string, unknown> }[] };
      scopeSpans?: { scope?: { name?: string }; spans?: Record<string, unknown>[] }[];
    };
    const resource = kv(r.resource?.attributes);
    for (const ss of r.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: String(s.traceId ?? ""),
          spanId: String(s.spanId ?? ""),
          parentSpanId: String(s.parentSpanId ?? ""),
          traceState: String(s.traceState ?? ""),
          name: String(s.name ?? ""),
          kind: Number(s.kind ?? 0),
          startNs: BigInt(String(s.startTimeUnixNano ?? 0)),
          endNs: BigInt(String(s.endTimeUnixNano ?? 0)),
          attributes: kv(s.attributes as never),
          events: ((s.events as { name: string; timeUnixNano: string }[]) ?? []).map((e) => ({
            name: e.name,
            timeNs: BigInt(e.timeUnixNano),
          })),
          status: {
            code: Number((s.status as { code?: number })?.code ?? 0),
            message: String((s.status as { message?: string })?.message ?? ""),
          },
          resource,
          scope: ss.scope?.name ?? "",
        });
      }
    }
  }
  return out;
}

export interface OtlpReceiver {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Content types of the exports received (the encoding the exporter chose). */
  readonly contentTypes: string[];
  stop(): void;
}

export function startOtlpReceiver(): OtlpReceiver {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (req.method !== "POST" || new URL(req.url).pathname !== "/v1/traces")
        return new Response("not found", { status: 404 });
      const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim();
      contentTypes.push(type);
      if (type === "application/x-protobuf") {
        spans.push(...decodeTraceRequest(new Uint8Array(await req.arrayBuffer())));
        // An empty ExportTraceServiceResponse: full success.
        return new Response(new Uint8Array(0), {
          headers: { "content-type": "application/x-protobuf" },
        });
      }
      if (type === "application/json") {
        spans.push(...decodeJsonRequest(await req.json()));
        return Response.json({});
      }
      return new Response("unsupported content type", { status: 415 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    spans,
    contentTypes,
    stop: () => server.stop(true),
  };
}
