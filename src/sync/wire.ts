/**
 * The replica-sync envelope around Dynamo's ActiveSequenceEvent wire form (spec §1.6).
 * One Redis message is one JSON object:
 *   {"router_id":"17","epoch":"9f…","kind":"events","seq":42,"events":[<§1.6 event>, …]}
 *   {"router_id":"17","epoch":"9f…","kind":"snapshot","seq":43,"part":0,"parts":2,"events":[…]}
 *   {"router_id":"17","epoch":"9f…","kind":"heartbeat","seq":43}
 *   {"router_id":"21","epoch":"c0…","kind":"resync","target":"17"}
 * `router_id` comes first, as a string, so a router can drop its own messages (pub/sub
 * echoes them back) by a prefix check, without parsing them. `epoch` is random per process
 * start: a router restarted with the same id is a new origin. `seq` counts the origin's
 * events and snapshot messages (1, 2, …) so a receiver sees what it missed; a heartbeat
 * repeats the last one. Events are written with the scheduler's writer (one string each,
 * so the outbox can cap message sizes) and read back with its valibot schema.
 */
import * as v from "valibot";
import { parseJsonBigintSafe, stringifyBigint } from "../core/json.ts";
import {
  ActiveSequenceEventSchema,
  activeSequenceEventToWire,
  type ActiveSequenceEvent,
} from "../scheduler/sequence-events.ts";

interface Origin {
  readonly routerId: bigint;
  readonly epoch: string;
}

export type SyncMessage =
  | (Origin & { readonly kind: "events"; readonly seq: number; readonly events: readonly ActiveSequenceEvent[] })
  | (Origin & {
      readonly kind: "snapshot";
      readonly seq: number;
      readonly part: number;
      readonly parts: number;
      readonly events: readonly ActiveSequenceEvent[];
    })
  | (Origin & { readonly kind: "heartbeat"; readonly seq: number })
  | (Origin & { readonly kind: "resync"; readonly target: bigint });

/** The start of every message this router writes; messages starting with it are our own echo. */
export function originPrefix(routerId: bigint): string {
  return `{"router_id":"${routerId}",`;
}

/** One event in Dynamo's JSON wire form (bigints exact). */
export function encodeEvent(e: ActiveSequenceEvent): string {
  return stringifyBigint(activeSequenceEventToWire(e));
}

function head(o: Origin, kind: SyncMessage["kind"]): string {
  return `${originPrefix(o.routerId)}"epoch":${JSON.stringify(o.epoch)},"kind":"${kind}"`;
}

/** An events message from events already encoded with encodeEvent. */
export function encodeEventsMessage(o: Origin, seq: number, encodedEvents: readonly string[]): string {
  return `${head(o, "events")},"seq":${seq},"events":[${encodedEvents.join(",")}]}`;
}

export function encodeSnapshotMessage(o: Origin, seq: number, part: number, parts: number, encodedEvents: readonly string[]): string {
  return `${head(o, "snapshot")},"seq":${seq},"part":${part},"parts":${parts},"events":[${encodedEvents.join(",")}]}`;
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
  v.object({ kind: v.literal("events"), router_id: U64_STRING, epoch: v.string(), seq: SEQ, events: v.array(v.unknown()) }),
  v.object({
    kind: v.literal("snapshot"),
    router_id: U64_STRING,
    epoch: v.string(),
    seq: SEQ,
    part: SEQ,
    parts: v.pipe(v.number(), v.integer(), v.minValue(1)),
    events: v.array(v.unknown()),
  }),
  v.object({ kind: v.literal("heartbeat"), router_id: U64_STRING, epoch: v.string(), seq: SEQ }),
  v.object({ kind: v.literal("resync"), router_id: U64_STRING, epoch: v.string(), target: U64_STRING }),
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
  if (m.kind === "heartbeat") return { message: { ...origin, kind: "heartbeat", seq: m.seq }, invalidEvents: 0 };
  if (m.kind === "resync") return { message: { ...origin, kind: "resync", target: m.target }, invalidEvents: 0 };
  const events: ActiveSequenceEvent[] = [];
  let invalid = 0;
  for (const raw of m.events) {
    const e = v.safeParse(ActiveSequenceEventSchema, raw);
    // An event must come from the router that sent the message: a receiver frees an
    // origin's requests when it dies, so a request booked under another id would leak.
    if (e.success && e.output.routerId === m.router_id) events.push(e.output);
    else invalid++;
  }
  const message: SyncMessage =
    m.kind === "events"
      ? { ...origin, kind: "events", seq: m.seq, events }
      : { ...origin, kind: "snapshot", seq: m.seq, part: m.part, parts: m.parts, events };
  return { message, invalidEvents: invalid };
}
