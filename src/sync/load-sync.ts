/**
 * Active load shared between routers over Redis (Dynamo's replica sync of active sequences, with
 * Redis in place of NATS; as there, output-block growth is not replicated). Each router publishes
 * the add / prefill-done / free events of its LoadTracker and applies everyone else's, so every
 * replica's scheduler sees the whole cluster's load.
 *
 * - Out: tracker.onLocalEvent → LocalMirror (for snapshots) + Outbox (batched, ordered,
 *   seq-numbered, dropped with a counter while Redis is away).
 * - In: transport → decode → PeerTable → tracker.applyRemote. A gap in an origin's seq, or
 *   a first sight of an origin that has published before (this router started late, or
 *   was cut off), asks that origin for a snapshot, which is then reconciled.
 * - Liveness: a heartbeat every heartbeatMs (it carries the last seq, so trailing losses are
 *   seen too); an origin silent for deadAfterMs has its requests freed here.
 * Nothing here throws into the request path: the tracker hook only queues.
 */
import type { Logger } from "../core/logger.ts";
import type { RouterId } from "../core/ids.ts";
import type { ActiveSequenceEvent, LoadTracker } from "../router/index.ts";
import { DEFAULT_PROBE_TIMEOUT_MS } from "./redis-guard.ts";
import { LocalMirror } from "./local-mirror.ts";
import { Outbox } from "./outbox.ts";
import { PeerTable } from "./peers.ts";
import { openSyncTransport } from "./open-transport.ts";
import type { PubSubOpener, SyncTransport } from "./transport.ts";
import { decodeMessage, originPrefix } from "./wire.ts";

export const DEFAULT_SYNC_CHANNEL = "switchyard:active_sequences";
/** Dynamo's MAX_REPLICA_BATCH_EVENTS. */
export const MAX_REPLICA_BATCH_EVENTS = 256;
/**
 * The sync's Redis commands (publish, stream poll) are off the request path: one message is in
 * flight and the next batch fills meanwhile, so a slow answer costs no request anything. A
 * timeout here is not free as it is for a lookup: the message is dropped, the guard marks the
 * connection down so the batches behind it are dropped too, and every peer asks for a snapshot.
 * So the sync gets the probe's deadline (1 s, a hang), not a request's 50 ms budget, which a
 * merely busy machine (or a distant Upstash region) overruns.
 */
export const DEFAULT_SYNC_COMMAND_TIMEOUT_MS = DEFAULT_PROBE_TIMEOUT_MS;

export interface LoadSyncOptions {
  /** redis://, rediss:// (pub/sub) or https:// (Upstash REST, a polled stream; needs `token`). */
  readonly url: string;
  readonly token?: string;
  /** How to open redis:// URLs (Bun: `openPubSubTransport`); see transport.ts. */
  readonly pubsub?: PubSubOpener;
  readonly tracker: LoadTracker;
  /** This router's identity (core/ids.ts RouterId, drawn once by the composition root); must equal tracker.routerId. */
  readonly routerId: RouterId;
  /** Milliseconds; the tracker's clock. Heartbeat ages are measured on it too. */
  readonly now: () => number;
  /** Pub/sub channel, or stream key (default "switchyard:active_sequences"). */
  readonly channel?: string;
  /** Default 1000. */
  readonly heartbeatMs?: number;
  /** An origin silent this long is presumed dead and its requests freed here (default 10000; at least 2 heartbeats). */
  readonly deadAfterMs?: number;
  /** Longest wait before a batch leaves (default 1). */
  readonly batchMs?: number;
  /** Events per message, 1–256 (default 256). */
  readonly maxBatchEvents?: number;
  /** A message is cut before this many characters (default 1 MiB); a bigger single event still goes alone. */
  readonly maxMessageBytes?: number;
  /** Events waiting to be sent, past which new ones are dropped (default 65536). */
  readonly maxQueuedEvents?: number;
  /** Stream reader pause between empty polls (https:// only, default 5). */
  readonly pollMs?: number;
  /** Stream length kept, approximately (https:// only, default 1000). */
  readonly streamMaxLen?: number;
  /**
   * Per Redis command of the sync (default DEFAULT_SYNC_COMMAND_TIMEOUT_MS, 1 s); one that times
   * out drops its message and marks Redis down until a probe answers (redis-guard.ts).
   */
  readonly commandTimeoutMs?: number;
  readonly log?: Pick<Logger, "info" | "warn">;
}

export interface LoadSyncStats {
  readonly transport: "pubsub" | "stream";
  /** The receiving side is connected (subscribed, or the last poll answered). */
  readonly receiving: boolean;
  /** The last publish succeeded (true before the first). */
  readonly publishing: boolean;
  readonly publishedMessages: number;
  readonly publishedEvents: number;
  readonly droppedMessages: number;
  readonly droppedEvents: number;
  readonly queuedEvents: number;
  readonly receivedMessages: number;
  /** Messages that were not sync messages at all. */
  readonly invalidMessages: number;
  /** Events inside valid messages that were malformed or claimed another origin. */
  readonly invalidEvents: number;
  readonly peers: number;
  /** Requests booked here on behalf of other routers. */
  readonly remoteRequests: number;
  /** This router's own live requests, as known to the snapshot mirror. */
  readonly localRequests: number;
  readonly gaps: number;
  readonly resyncsSent: number;
  readonly snapshotsSent: number;
  readonly snapshotsApplied: number;
  readonly heartbeats: number;
  readonly expiredPeers: number;
  readonly expiredRequests: number;
  readonly restartedPeers: number;
  readonly reconnects: number;
  readonly receiveErrors: number;
  /** Heartbeat ticks run so far (tests wait on it). */
  readonly ticks: number;
}

export interface LoadSync {
  /** Stop publishing and receiving. Own requests are not freed on the replicas (they expire there); remote load booked here is freed. */
  stop(): Promise<void>;
  stats(): LoadSyncStats;
  /** Other routers heard from and not yet given up on (stats().peers, without building the rest). */
  peerCount(): number;
  /** Those routers: id, ms since last heard, requests they booked here, whether that picture is complete. */
  peers(): { routerId: bigint; heardMsAgo: number; requests: number; complete: boolean }[];
}

function randomEpoch(): string {
  const b = crypto.getRandomValues(new Uint8Array(8));
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

/** Every this many heartbeats, ids the tracker dropped on its own are forgotten. */
const PRUNE_EVERY_TICKS = 30;

export async function startLoadSync(opts: LoadSyncOptions): Promise<LoadSync> {
  const { tracker, routerId } = opts;
  const heartbeatMs = opts.heartbeatMs ?? 1_000;
  const deadAfterMs = opts.deadAfterMs ?? 10_000;
  const maxBatchEvents = opts.maxBatchEvents ?? MAX_REPLICA_BATCH_EVENTS;
  if (routerId !== tracker.routerId) {
    throw new Error(
      `load sync router id ${routerId} differs from the tracker's (${tracker.routerId}); build the tracker with { routerId }`,
    );
  }
  if (!(heartbeatMs > 0) || !(deadAfterMs >= 2 * heartbeatMs)) {
    throw new Error(
      `load sync needs heartbeatMs > 0 and deadAfterMs >= 2 × heartbeatMs (got ${heartbeatMs}, ${deadAfterMs})`,
    );
  }
  if (!(maxBatchEvents >= 1 && maxBatchEvents <= MAX_REPLICA_BATCH_EVENTS)) {
    throw new Error(
      `load sync maxBatchEvents must be 1–${MAX_REPLICA_BATCH_EVENTS}, got ${maxBatchEvents}`,
    );
  }

  const transport: SyncTransport = await openSyncTransport({
    url: opts.url,
    channel: opts.channel ?? DEFAULT_SYNC_CHANNEL,
    token: opts.token,
    pubsub: opts.pubsub,
    commandTimeoutMs: opts.commandTimeoutMs ?? DEFAULT_SYNC_COMMAND_TIMEOUT_MS,
    pollMs: opts.pollMs ?? 5,
    streamMaxLen: opts.streamMaxLen ?? 1_000,
  });
  const sync = new RunningLoadSync(opts, transport, { heartbeatMs, deadAfterMs, maxBatchEvents });
  await transport.start((payload) => sync.receive(payload));
  sync.begin();
  return sync;
}

/**
 * One router's load sync once its transport is open: local load events recorded and published
 * (the tracker's hook), peers' messages applied, and a heartbeat that announces this router,
 * gives up on silent peers, asks for resyncs and prunes.
 */
class RunningLoadSync implements LoadSync {
  readonly #o: LoadSyncOptions;
  readonly #transport: SyncTransport;
  readonly #heartbeatMs: number;
  readonly #deadAfterMs: number;
  readonly #mirror = new LocalMirror();
  readonly #peers: PeerTable;
  readonly #outbox: Outbox;
  readonly #own: string;
  readonly #previousHook: LoadTracker["onLocalEvent"];
  readonly #hook: (ev: ActiveSequenceEvent) => void;
  #publishing = true;
  #receivedMessages = 0;
  #invalidMessages = 0;
  #invalidEvents = 0;
  #ticks = 0;
  #running = true;
  #wasReceiving = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  #stopped: Promise<void> | undefined;

  constructor(
    opts: LoadSyncOptions,
    transport: SyncTransport,
    t: { heartbeatMs: number; deadAfterMs: number; maxBatchEvents: number },
  ) {
    const { tracker, routerId } = opts;
    this.#o = opts;
    this.#transport = transport;
    this.#heartbeatMs = t.heartbeatMs;
    this.#deadAfterMs = t.deadAfterMs;
    this.#peers = new PeerTable(tracker, {
      deadAfterMs: t.deadAfterMs,
      resyncRetryMs: t.heartbeatMs,
    });
    this.#outbox = new Outbox({
      origin: { routerId, epoch: randomEpoch() },
      publish: (payload) => transport.publish(payload),
      snapshot: () => this.#mirror.snapshot((id) => tracker.hasRequest(id)),
      batchMs: opts.batchMs ?? 1,
      maxBatchEvents: t.maxBatchEvents,
      maxMessageBytes: opts.maxMessageBytes ?? 1 << 20,
      maxQueuedEvents: opts.maxQueuedEvents ?? 65_536,
      onPublishResult: (error) => this.#published(error),
    });
    this.#own = originPrefix(routerId);
    this.#previousHook = tracker.onLocalEvent;
    this.#hook = (ev) => {
      this.#previousHook?.(ev);
      try {
        this.#mirror.record(ev);
        this.#outbox.push(ev);
      } catch {
        // Never into the request path; the peers' gap detection repairs what was not sent.
      }
    };
    tracker.onLocalEvent = this.#hook;
  }

  /** Log the state change, not every dropped message. */
  #published(error: unknown): void {
    const log = this.#o.log;
    if (error !== undefined && this.#publishing) {
      this.#publishing = false;
      log?.warn("load sync: cannot publish to Redis; dropping load events until it is back", {
        error: String(error),
      });
    } else if (error === undefined && !this.#publishing) {
      this.#publishing = true;
      log?.info("load sync: publishing to Redis again");
    }
  }

  /** A message from the channel (our own echo included). */
  receive(payload: string): void {
    if (!this.#running || payload.startsWith(this.#own)) return; // stopped, or our own echo
    this.#receivedMessages++;
    try {
      const decoded = decodeMessage(payload);
      if (!decoded) {
        this.#invalidMessages++;
        return;
      }
      this.#invalidEvents += decoded.invalidEvents;
      const m = decoded.message;
      if (m.kind === "resync") {
        if (m.target === this.#o.routerId) this.#outbox.requestSnapshot();
        return;
      }
      const now = this.#o.now;
      const t = now();
      this.#peers.receive(m, t);
      for (const target of this.#peers.resyncDue(t)) this.#outbox.resync(target);
    } catch (e) {
      this.#invalidMessages++;
      this.#o.log?.warn("load sync: could not apply a message", { error: String(e) });
    }
  }

  /** Receiving has started: announce ourselves and start the heartbeat. */
  begin(): void {
    // Announce ourselves at once: peers that see seq 0 know they have our whole history.
    this.#outbox.heartbeat();
    this.#wasReceiving = this.#transport.receiving;
    if (!this.#wasReceiving)
      this.#o.log?.warn("load sync: Redis is not reachable yet; retrying in the background", {
        url: this.#o.url,
      });
    this.#timer = setInterval(() => this.#tick(), this.#heartbeatMs);
  }

  #tick(): void {
    const { log, now, tracker } = this.#o;
    const peers = this.#peers;
    try {
      this.#ticks++;
      const t = now();
      this.#outbox.heartbeat();
      const freedBefore = peers.counters.expiredRequests;
      for (const id of peers.expireSilent(t)) {
        log?.warn(
          `load sync: router ${id} silent for over ${this.#deadAfterMs} ms; its requests were freed here`,
          {
            freed: peers.counters.expiredRequests - freedBefore,
          },
        );
      }
      for (const target of peers.resyncDue(t)) this.#outbox.resync(target);
      if (this.#ticks % PRUNE_EVERY_TICKS === 0) {
        peers.prune();
        this.#mirror.prune((id) => tracker.hasRequest(id));
      }
      if (this.#transport.receiving !== this.#wasReceiving) {
        this.#wasReceiving = this.#transport.receiving;
        if (this.#wasReceiving) log?.info("load sync: receiving from Redis again");
        else
          log?.warn(
            "load sync: lost the Redis subscription; peers' load goes stale until it is back",
          );
      }
    } catch (e) {
      log?.warn("load sync: heartbeat tick failed", { error: String(e) });
    }
  }

  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      const { tracker, now } = this.#o;
      this.#running = false;
      clearInterval(this.#timer);
      if (tracker.onLocalEvent === this.#hook) tracker.onLocalEvent = this.#previousHook;
      await this.#outbox.drain();
      this.#outbox.close();
      await this.#transport.close();
      // Remote load would no longer be kept fresh: drop it rather than let it leak.
      this.#peers.clear(now());
    })();
    return this.#stopped;
  }

  peerCount(): number {
    return this.#peers.size;
  }

  peers(): { routerId: bigint; heardMsAgo: number; requests: number; complete: boolean }[] {
    return this.#peers.list(this.#o.now());
  }

  stats(): LoadSyncStats {
    const o = this.#outbox.counters;
    const p = this.#peers.counters;
    const transport = this.#transport;
    return {
      transport: transport.kind,
      receiving: transport.receiving,
      publishing: this.#publishing,
      publishedMessages: o.messages,
      publishedEvents: o.events,
      droppedMessages: o.droppedMessages,
      droppedEvents: o.droppedEvents,
      queuedEvents: this.#outbox.queued,
      receivedMessages: this.#receivedMessages,
      invalidMessages: this.#invalidMessages,
      invalidEvents: this.#invalidEvents,
      peers: this.#peers.size,
      remoteRequests: this.#peers.remoteRequests,
      localRequests: this.#mirror.size,
      gaps: p.gaps,
      resyncsSent: o.resyncsSent,
      snapshotsSent: o.snapshotsSent,
      snapshotsApplied: p.snapshotsApplied,
      heartbeats: o.heartbeats,
      expiredPeers: p.expiredPeers,
      expiredRequests: p.expiredRequests,
      restartedPeers: p.restartedPeers,
      reconnects: transport.counters.reconnects,
      receiveErrors: transport.counters.receiveErrors,
      ticks: this.#ticks,
    };
  }
}
