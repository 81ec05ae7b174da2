/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and
 * `tracestate` headers, parsed and written. Pure string work, no tracer: the router checks
 * and forwards a client's context even when it exports no spans, so an engine that traces
 * still joins the client's trace.
 */

export const TRACEPARENT_HEADER = "traceparent";
export const TRACESTATE_HEADER = "tracestate";

export interface TraceParent {
  /** 32 lower-case hex digits, not all zero. */
  readonly traceId: string;
  /** The caller's span: 16 lower-case hex digits, not all zero. */
  readonly spanId: string;
  /** The sampled flag (bit 0 of trace-flags). */
  readonly sampled: boolean;
}

const HEX = /^[0-9a-f]+$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

/**
 * The header's context, or undefined when it is malformed (then the spec says: start a new
 * trace). Version 00 must be exactly 55 characters; a later version may append fields after
 * a dash, which we ignore, as the spec asks of a version-00 parser.
 */
export function parseTraceparent(header: string | null | undefined): TraceParent | undefined {
  if (header === null || header === undefined) return undefined;
  const h = header.trim();
  if (h.length < 55) return undefined;
  const version = h.slice(0, 2);
  if (!HEX.test(version) || version === "ff") return undefined;
  if (version === "00" ? h.length !== 55 : h.length > 55 && h[55] !== "-") return undefined;
  if (h[2] !== "-" || h[35] !== "-" || h[52] !== "-") return undefined;
  const traceId = h.slice(3, 35);
  const spanId = h.slice(36, 52);
  const flags = h.slice(53, 55);
  if (!HEX.test(traceId) || !HEX.test(spanId) || !HEX.test(flags)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

export function formatTraceparent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? "01" : "00"}`;
}

/** At most 32 members, each `key=value`, 512 characters in all (the spec's limits). */
const MAX_TRACESTATE_LENGTH = 512;
const MAX_TRACESTATE_MEMBERS = 32;
/** simple-key or tenant@system key; value: printable ASCII without ',' and '=', no trailing space. */
const MEMBER =
  /^[a-z0-9][_0-9a-z\-*/]{0,255}(@[a-z][_0-9a-z\-*/]{0,13})?=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/** The header as it may be passed on, or undefined when it breaks the spec's grammar (then it is dropped). */
export function validTracestate(header: string | null | undefined): string | undefined {
  if (header === null || header === undefined) return undefined;
  const h = header.trim();
  if (h.length === 0 || h.length > MAX_TRACESTATE_LENGTH) return undefined;
  const members = h
    .split(",")
    .map((m) => m.trim())
    .filter((m) => m !== "");
  if (members.length === 0 || members.length > MAX_TRACESTATE_MEMBERS) return undefined;
  return members.every((m) => MEMBER.test(m)) ? members.join(",") : undefined;
}

function randomHex(bytes: number): string {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  let s = "";
  for (let i = 0; i < b.length; i++) s += b[i]!.toString(16).padStart(2, "0");
  return s;
}

/** A fresh context (random trace and span ids, never all zero in practice), for a trace nobody started. */
export function newTraceParent(sampled: boolean): TraceParent {
  return { traceId: randomHex(16), spanId: randomHex(8), sampled };
}
