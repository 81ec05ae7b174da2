/**
 * The publishing side: local events are queued on the request path (O(1), never throws),
 * then sent in batches of up to `maxBatchEvents` (Dynamo's MAX_REPLICA_BATCH_EVENTS = 256)
 * after at most `batchMs` (MAX_REPLICA_BATCH_DURATION = 1 ms), one message in flight at a
 * time so messages leave in order. While one is in flight the next batch fills up, so a
 * busy router sends fuller messages, not more of them.
 *
 * Every events or snapshot message takes the next `seq`, whether or not it gets through:
 * a message that fails is dropped (counted) and the receivers see the gap and ask for a
 * snapshot. The queue is bounded; past it new events are dropped (counted) too.
 * Events are encoded here, off the request path, one string each so a message can be cut
 * before `maxMessageBytes` (Redis disconnects pub/sub readers with too much unread output).
 */
import type { ActiveSequenceEvent } from "../router/index.ts";
import {
  encodeEvent,
  encodeEventsMessage,
  encodeHeartbeat,
  encodeResync,
  encodeSnapshotMessage,
} from "./wire.ts";

export interface OutboxOptions {
  readonly origin: { readonly routerId: bigint; readonly epoch: string };
  /** Send one message; a rejection drops it. */
  readonly publish: (payload: string) => Promise<void>;
  /** This router's live requests, as add (+ prefill-done) events, for a snapshot. */
  readonly snapshot: () => readonly ActiveSequenceEvent[];
  readonly batchMs: number;
  readonly maxBatchEvents: number;
  readonly maxMessageBytes: number;
  readonly maxQueuedEvents: number;
  /** Called with each publish failure (for logging state changes; must not throw). */
  readonly onPublishResult?: (error: unknown) => void;
}

export interface OutboxCounters {
  messages: number;
  events: number;
  droppedMessages: number;
  droppedEvents: number;
  /** Events that could not be encoded (never expected). */
  unencodable: number;
  snapshotsSent: number;
  heartbeats: number;
  resyncsSent: number;
}

/** Start a compaction of the queue array once this many sent events sit at its front. */
const COMPACT_AFTER = 4096;

export class Outbox {
  readonly counters: OutboxCounters = {
    messages: 0,
    events: 0,
    droppedMessages: 0,
    droppedEvents: 0,
    unencodable: 0,
    snapshotsSent: 0,
    heartbeats: 0,
    resyncsSent: 0,
  };
  #queue: ActiveSequenceEvent[] = [];
  #head = 0;
  /** The queue head, already encoded, that did not fit in the previous message. */
  #carry: string | undefined;
  /** The snapshot being sent: its parts go before anything else, so their seqs are consecutive. */
  #snapshot:
    | { readonly events: readonly ActiveSequenceEvent[]; index: number; part: number }
    | undefined;
  readonly #resyncTargets = new Set<bigint>();
  #snapshotWanted = false;
  #heartbeatWanted = false;
  #seq = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #pumping = false;
  #kickQueued = false;
  #closed = false;
  readonly #idleWaiters: (() => void)[] = [];

  constructor(readonly opts: OutboxOptions) {}

  /** The last seq assigned. */
  get seq(): number {
    return this.#seq;
  }

  get queued(): number {
    return this.#queue.length - this.#head + (this.#carry === undefined ? 0 : 1);
  }

  /** Queue one local event. Called on the request path: cheap and never throws. */
  push(ev: ActiveSequenceEvent): void {
    if (this.#closed) return;
    if (this.#queue.length - this.#head >= this.opts.maxQueuedEvents) {
      this.counters.droppedEvents++;
      return;
    }
    this.#queue.push(ev);
    if (this.#pumping || this.#kickQueued) return; // the pump takes it after the message in flight
    if (this.opts.batchMs <= 0 || this.#queue.length - this.#head >= this.opts.maxBatchEvents) {
      // Send soon, but not inside the caller's stack: encoding a batch is the pump's cost,
      // not this request's. Events pushed by the same job still join this batch.
      this.#kickQueued = true;
      queueMicrotask(() => {
        this.#kickQueued = false;
        this.#kick();
      });
    } else {
      this.#timer ??= setTimeout(() => this.#kick(), this.opts.batchMs);
    }
  }

  heartbeat(): void {
    this.#heartbeatWanted = true;
    this.#kick();
  }

  /** Ask `target` for a snapshot of its requests. */
  resync(target: bigint): void {
    this.#resyncTargets.add(target);
    this.#kick();
  }

  /** Publish a snapshot of this router's requests (requests that arrive meanwhile are coalesced). */
  requestSnapshot(): void {
    this.#snapshotWanted = true;
    this.#kick();
  }

  /** Resolves once everything queued so far has been sent or dropped. */
  drain(): Promise<void> {
    this.#kick();
    if (!this.#pumping) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Stop sending; whatever is still queued is dropped. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.counters.droppedEvents +=
      this.#queue.length - this.#head + (this.#carry === undefined ? 0 : 1);
    this.#queue = [];
    this.#head = 0;
    this.#carry = undefined;
  }

  #kick(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pumping || this.#closed) return;
    this.#pumping = true;
    void this.#pump();
  }

  async #pump(): Promise<void> {
    try {
      for (;;) {
        if (this.#closed) break;
        const next = this.#next();
        if (next === undefined) break;
        try {
          await this.opts.publish(next.payload);
          this.counters.messages++;
          this.counters.events += next.events;
          this.opts.onPublishResult?.(undefined);
        } catch (e) {
          this.counters.droppedMessages++;
          this.counters.droppedEvents += next.events;
          this.opts.onPublishResult?.(e);
        }
      }
    } finally {
      // Synchronous with the loop's last check: a push after this point starts a new pump.
      this.#pumping = false;
      for (const w of this.#idleWaiters.splice(0)) w();
    }
  }

  /** The next message to send, in priority order; undefined when there is nothing to send. */
  #next(): { payload: string; events: number } | undefined {
    if (this.#snapshot) return this.#nextSnapshotPart(this.#snapshot);
    if (this.#carry !== undefined || this.#head < this.#queue.length) return this.#nextEvents();
    const [target] = this.#resyncTargets;
    if (target !== undefined) {
      this.#resyncTargets.delete(target);
      this.counters.resyncsSent++;
      return { payload: encodeResync(this.opts.origin, target), events: 0 };
    }
    if (this.#snapshotWanted) {
      // Taken now, with every earlier event already sent: the snapshot is the state as of
      // this point of our stream, and later events follow it. Parts are encoded one at a
      // time, so a large snapshot never stalls the loop for longer than one message.
      this.#snapshotWanted = false;
      this.counters.snapshotsSent++;
      this.#snapshot = { events: this.opts.snapshot(), index: 0, part: 0 };
      return this.#nextSnapshotPart(this.#snapshot);
    }
    if (this.#heartbeatWanted) {
      this.#heartbeatWanted = false;
      this.counters.heartbeats++;
      return { payload: encodeHeartbeat(this.opts.origin, this.#seq), events: 0 };
    }
    return undefined;
  }

  #nextSnapshotPart(s: {
    readonly events: readonly ActiveSequenceEvent[];
    index: number;
    part: number;
  }): { payload: string; events: number } {
    const encoded: string[] = [];
    let bytes = 0;
    while (s.index < s.events.length && encoded.length < this.opts.maxBatchEvents) {
      const text = this.#encode(s.events[s.index]!);
      if (
        text !== undefined &&
        encoded.length > 0 &&
        bytes + text.length > this.opts.maxMessageBytes
      )
        break; // re-encoded next part
      s.index++;
      if (text === undefined) continue;
      encoded.push(text);
      bytes += text.length;
    }
    const last = s.index >= s.events.length;
    if (last) this.#snapshot = undefined;
    return {
      payload: encodeSnapshotMessage(this.opts.origin, ++this.#seq, s.part++, last, encoded),
      events: 0,
    };
  }

  #nextEvents(): { payload: string; events: number } | undefined {
    const encoded: string[] = [];
    let bytes = 0;
    while (encoded.length < this.opts.maxBatchEvents) {
      let s = this.#carry;
      this.#carry = undefined;
      if (s === undefined) {
        if (this.#head >= this.#queue.length) break;
        s = this.#encode(this.#queue[this.#head++]!);
        if (s === undefined) continue;
      }
      if (encoded.length > 0 && bytes + s.length > this.opts.maxMessageBytes) {
        this.#carry = s;
        break;
      }
      encoded.push(s);
      bytes += s.length;
    }
    this.#compact();
    if (encoded.length === 0) return undefined;
    return {
      payload: encodeEventsMessage(this.opts.origin, ++this.#seq, encoded),
      events: encoded.length,
    };
  }

  #compact(): void {
    if (this.#head === this.#queue.length) {
      this.#queue.length = 0;
      this.#head = 0;
    } else if (this.#head >= COMPACT_AFTER && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  #encode(ev: ActiveSequenceEvent): string | undefined {
    try {
      return encodeEvent(ev);
    } catch {
      this.counters.unencodable++;
      return undefined;
    }
  }
}
