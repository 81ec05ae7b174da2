/**
 * The replica-sync envelope around Dynamo's ActiveSequenceEvent wire form
 * (src/router/books/sequence-events.ts: AddRequest / MarkPrefillCompleted / Free per request).
 * One Redis message is one JSON object:
 *   {"router_id":"17","epoch":"9f…","kind":"events","seq":42,"events":[<ActiveSequenceEvent>, …]}
 *   {"router_id":"17","epoch":"9f…","kind":"snapshot","seq":43,"part":0,"last":false,"events":[…]}
 *   {"router_id":"17","epoch":"9f…","kind":"heartbeat","seq":43}
 *   {"router_id":"21","epoch":"c0…","kind":"resync","target":"17"}
 * `router_id` comes first, as a string, so a router can drop its own messages (pub/sub
 * echoes them back) by a prefix check, without parsing them. `epoch` is random per process
 * start: a router restarted with the same id is a new origin. `seq` counts the origin's
 * events and snapshot messages (1, 2, …) so a receiver sees what it missed; a heartbeat
 * repeats the last one. Events are one string each (so the outbox can cap message sizes)
 * in exactly the scheduler's wire form (test/unit/sync/wire.test.ts checks byte equality),
 * and are read back with its valibot schema. Sequence hashes are the bulk of an add, so
 * both directions treat them apart: written with BigUint64Array's own join (3× faster than
 * the generic bigint stringify) and read with one tight loop instead of a valibot pipe per
 * hash (5× faster); bench/sync/latency.ts measures both.
 */
import * as v from "valibot";
import { parseJsonBigintSafe, stringifyBigint } from "../core/json.ts";
import {
  ActiveSequenceEventSchema,
  activeSequenceEventToWire,
  type ActiveSequenceEvent,
} from "../router/index.ts";

interface Origin {
  readonly routerId: bigint;
  readonly epoch: string;
}

export type SyncMessage =
  | (Origin & {
      readonly kind: "events";
      readonly seq: number;
      readonly events: readonly ActiveSequenceEvent[];
    })
  | (Origin & {
      readonly kind: "snapshot";
      readonly seq: number;
      readonly part: number;
      /** The snapshot's final part: apply it now. */
      readonly last: boolean;
      readonly events: readonly ActiveSequenceEvent[];
    })
  | (Origin & { readonly kind: "heartbeat"; readonly seq: number })
  | (Origin & { readonly kind: "resync"; readonly target: bigint });

/** The start of every message this router writes; messages starting with it are our own echo. */
export function originPrefix(routerId: bigint): string {
  return `{"router_id":"${routerId}",`;
}

/** One event in Dynamo's JSON wire form (bigints exact); the same text as stringifyBigint(activeSequenceEventToWire(e)). */
export function encodeEvent(e: ActiveSequenceEvent): string {
  const d = e.data;
  if (d.type !== "add_request") return stringifyBigint(activeSequenceEventToWire(e));
  const tokens = d.tokenSequence ? `[${d.tokenSequence.join(",")}]` : "null";
  return (
    `{"request_id":${JSON.stringify(e.requestId)},"worker":{"worker_id":${e.worker.workerId},"dp_rank":${e.worker.dpRank}},` +
    `"data":{"AddRequest":{"token_sequence":${tokens},"isl":${d.isl},"overlap":${d.overlap},` +
    `"expected_output_tokens":${d.expectedOutputTokens ?? "null"}}},"router_id":${e.routerId},"lora_name":${JSON.stringify(e.loraName)}}`
  );
}

function head(o: Origin, kind: SyncMessage["kind"]): string {
  return `${originPrefix(o.routerId)}"epoch":${JSON.stringify(o.epoch)},"kind":"${kind}"`;
}

/** An events message from events already encoded with encodeEvent. */
export function encodeEventsMessage(
  o: Origin,
  seq: number,
  encodedEvents: readonly string[],
): string {
  return `${head(o, "events")},"seq":${seq},"events":[${encodedEvents.join(",")}]}`;
}

export function encodeSnapshotMessage(
  o: Origin,
  seq: number,
  part: number,
  last: boolean,
  encodedEvents: readonly string[],
): string {
  return `${head(o, "snapshot")},"seq":${seq},"part":${part},"last":${last},"events":[${encodedEvents.join(",")}]}`;
}

export function encodeHeartbeat(o: Origin, seq: number): string {
  return `${head(o, "heartbeat")},"seq":${seq}}`;
}

export function encodeResync(o: Origin, target: bigint): string {
  return `${head(o, "resync")},"target":"${target}"}`;
}

const U64_STRING = v.pipe(
  v.string(),
  v.regex(/^\d{1,20}$/),
  v.transform((s) => BigInt(s)),
  v.check((n) => n < 1n << 64n),
);
const SEQ = v.pipe(v.number(), v.integer(), v.minValue(0));

const Envelope = v.variant("kind", [
  v.object({
    kind: v.literal("events"),
    router_id: U64_STRING,
    epoch: v.string(),
    seq: SEQ,
    events: v.array(v.unknown()),
  }),
  v.object({
    kind: v.literal("snapshot"),
    router_id: U64_STRING,
    epoch: v.string(),
    seq: SEQ,
    part: SEQ,
    last: v.boolean(),
    events: v.array(v.unknown()),
  }),
  v.object({ kind: v.literal("heartbeat"), router_id: U64_STRING, epoch: v.string(), seq: SEQ }),
  v.object({
    kind: v.literal("resync"),
    router_id: U64_STRING,
    epoch: v.string(),
    target: U64_STRING,
  }),
]);

export interface Decoded {
  readonly message: SyncMessage;
  /** Events in the message that were malformed or claimed another origin; they are left out. */
  readonly invalidEvents: number;
}

/** Parse one message; undefined when it is not a sync message at all. Never throws. */
export function decodeMessage(text: string): Decoded | undefined {
  let raw: unknown;
  try {
    raw = parseJsonBigintSafe(text);
  } catch {
    return undefined;
  }
  const env = v.safeParse(Envelope, raw);
  if (!env.success) return undefined;
  const m = env.output;
  const origin = { routerId: m.router_id, epoch: m.epoch };
  if (m.kind === "heartbeat")
    return { message: { ...origin, kind: "heartbeat", seq: m.seq }, invalidEvents: 0 };
  if (m.kind === "resync")
    return { message: { ...origin, kind: "resync", target: m.target }, invalidEvents: 0 };
  const events: ActiveSequenceEvent[] = [];
  let invalid = 0;
  for (const raw of m.events) {
    const e = decodeEvent(raw);
    // An event must come from the router that sent the message: a receiver frees an
    // origin's requests when it dies, so a request booked under another id would leak.
    if (e && e.routerId === m.router_id) events.push(e);
    else invalid++;
  }
  const message: SyncMessage =
    m.kind === "events"
      ? { ...origin, kind: "events", seq: m.seq, events }
      : { ...origin, kind: "snapshot", seq: m.seq, part: m.part, last: m.last, events };
  return { message, invalidEvents: invalid };
}

/** One ActiveSequenceEvent; the sequence hashes are taken out, read in one loop, and put back. */
function decodeEvent(raw: unknown): ActiveSequenceEvent | undefined {
  const add = (raw as { data?: { AddRequest?: { token_sequence?: unknown } } } | null)?.data
    ?.AddRequest;
  let tokens: BigUint64Array | null = null;
  if (add && typeof add === "object" && Array.isArray(add.token_sequence)) {
    const read = readU64Array(add.token_sequence);
    if (!read) return undefined;
    tokens = read;
    add.token_sequence = null;
  }
  const e = v.safeParse(ActiveSequenceEventSchema, raw);
  if (!e.success) return undefined;
  if (tokens === null || e.output.data.type !== "add_request") return e.output;
  return { ...e.output, data: { ...e.output.data, tokenSequence: tokens } };
}

const TWO_64 = 1n << 64n;

/** Decimal strings (as parseJsonBigintSafe leaves long integers) or safe integers, each a u64. */
function readU64Array(items: readonly unknown[]): BigUint64Array | undefined {
  const out = new BigUint64Array(items.length);
  for (let i = 0; i < items.length; i++) {
    const x = items[i];
    if (typeof x === "number") {
      if (!Number.isSafeInteger(x) || x < 0) return undefined;
      out[i] = BigInt(x);
    } else if (typeof x === "string") {
      if (x.length === 0 || x.length > 20) return undefined;
      for (let j = 0; j < x.length; j++) {
        const c = x.charCodeAt(j);
        if (c < 48 || c > 57) return undefined;
      }
      const n = BigInt(x);
      if (n >= TWO_64) return undefined;
      out[i] = n;
    } else {
      return undefined;
    }
  }
  return out;
}
