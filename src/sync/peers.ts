/**
 * What this router knows of every other router (an "origin"): the requests it booked here
 * on its behalf, when it was last heard, and whether that picture is complete.
 *
 * - Events are applied as they come (as Dynamo's replica sync does: add, prefill done, free).
 * - A gap in an origin's `seq`, a new epoch (the origin restarted) or the first sight of an
 *   origin that has published before makes the picture incomplete: the origin is asked for
 *   a snapshot (`resyncDue`), and the snapshot is reconciled in one pass: requests it lacks
 *   are freed, requests it has and we lack are added.
 * - An origin silent for `deadAfterMs` is presumed dead: all its requests are freed here, so
 *   a crashed router's load does not leak (`expireSilent`).
 * No I/O and no clock: `now` is passed in. Messages from this router itself must not reach it.
 */
import type { ActiveSequenceEvent } from "../router/index.ts";
import type { SyncMessage } from "./wire.ts";

/** The part of LoadTracker that remote state is applied to. */
export interface RemoteLoadSink {
  applyRemote(ev: ActiveSequenceEvent, now: number): boolean;
  hasRemoteRequest(routerId: bigint, requestId: string): boolean;
}

export interface PeerTableOptions {
  readonly deadAfterMs: number;
  /** How long to wait for a snapshot before asking again. */
  readonly resyncRetryMs: number;
}

interface Snapshot {
  nextPart: number;
  readonly events: ActiveSequenceEvent[];
}

interface Peer {
  readonly routerId: bigint;
  readonly epoch: string;
  lastSeq: number;
  lastSeenAt: number;
  /** Requests applied here for this origin (freed when it dies). */
  readonly requests: Set<string>;
  /** Our picture may be missing events; a snapshot is wanted. */
  incomplete: boolean;
  askedAt: number;
  snapshot: Snapshot | undefined;
}

export interface PeerCounters {
  gaps: number;
  snapshotsApplied: number;
  expiredPeers: number;
  expiredRequests: number;
  restartedPeers: number;
}

export class PeerTable {
  readonly counters: PeerCounters = {
    gaps: 0,
    snapshotsApplied: 0,
    expiredPeers: 0,
    expiredRequests: 0,
    restartedPeers: 0,
  };
  readonly #peers = new Map<bigint, Peer>();

  constructor(
    readonly sink: RemoteLoadSink,
    readonly opts: PeerTableOptions,
  ) {}

  get size(): number {
    return this.#peers.size;
  }

  /** Requests currently booked here on behalf of other routers. */
  get remoteRequests(): number {
    let n = 0;
    for (const p of this.#peers.values()) n += p.requests.size;
    return n;
  }

  /** Remote request ids per origin (for tests and /debug). */
  requestsOf(routerId: bigint): ReadonlySet<string> | undefined {
    return this.#peers.get(routerId)?.requests;
  }

  /** Every router heard from and not given up on: who, when last heard (ms ago), what it has booked here. */
  list(
    now: number,
  ): { routerId: bigint; heardMsAgo: number; requests: number; complete: boolean }[] {
    return [...this.#peers.values()].map((p) => ({
      routerId: p.routerId,
      heardMsAgo: Math.max(0, now - p.lastSeenAt),
      requests: p.requests.size,
      complete: !p.incomplete,
    }));
  }

  isComplete(routerId: bigint): boolean {
    const p = this.#peers.get(routerId);
    return p !== undefined && !p.incomplete;
  }

  /** Apply one message from another router (not a resync request: those are for the outbox). */
  receive(msg: Exclude<SyncMessage, { kind: "resync" }>, now: number): void {
    let p = this.#peers.get(msg.routerId);
    if (p && p.epoch !== msg.epoch) {
      // Same id, new process: whatever the old one booked is gone with it.
      this.#freeAll(p, now);
      this.#peers.delete(p.routerId);
      this.counters.restartedPeers++;
      p = undefined;
    }
    if (!p) {
      // We have the whole history only if this is the origin's very first message.
      const complete = msg.kind === "heartbeat" ? msg.seq === 0 : msg.seq === 1;
      p = {
        routerId: msg.routerId,
        epoch: msg.epoch,
        lastSeq: msg.kind === "heartbeat" ? msg.seq : msg.seq - 1,
        lastSeenAt: now,
        requests: new Set(),
        incomplete: !complete,
        askedAt: -Infinity,
        snapshot: undefined,
      };
      this.#peers.set(p.routerId, p);
    }
    p.lastSeenAt = now;
    switch (msg.kind) {
      case "heartbeat":
        if (msg.seq > p.lastSeq) {
          this.#gap(p);
          p.lastSeq = msg.seq;
        }
        return;
      case "events":
        if (msg.seq !== p.lastSeq + 1) this.#gap(p);
        p.lastSeq = msg.seq;
        for (const ev of msg.events) this.#apply(p, ev, now);
        return;
      case "snapshot":
        this.#snapshotPart(p, msg, now);
        return;
    }
  }

  #gap(p: Peer): void {
    this.counters.gaps++;
    p.incomplete = true;
    p.askedAt = -Infinity; // ask at once
    p.snapshot = undefined;
  }

  #apply(p: Peer, ev: ActiveSequenceEvent, now: number): void {
    const applied = this.sink.applyRemote(ev, now);
    if (ev.data.type === "add_request") {
      if (applied) p.requests.add(ev.requestId);
    } else if (ev.data.type === "free") {
      p.requests.delete(ev.requestId);
    }
  }

  #snapshotPart(p: Peer, msg: Extract<SyncMessage, { kind: "snapshot" }>, now: number): void {
    const contiguous = msg.seq === p.lastSeq + 1;
    p.lastSeq = msg.seq;
    if (msg.part === 0) {
      p.snapshot = { nextPart: 0, events: [] };
    } else if (!contiguous || !p.snapshot || p.snapshot.nextPart !== msg.part) {
      // A part went missing: this snapshot is unusable; the next one will do.
      this.#gap(p);
      return;
    }
    const s = p.snapshot!;
    for (const ev of msg.events) s.events.push(ev);
    s.nextPart++;
    if (!msg.last) return;
    p.snapshot = undefined;
    this.#reconcile(p, s.events, now);
    p.incomplete = false;
    this.counters.snapshotsApplied++;
  }

  /** Make this origin's requests here exactly the snapshot's. */
  #reconcile(p: Peer, events: readonly ActiveSequenceEvent[], now: number): void {
    const adds = new Map<string, ActiveSequenceEvent>();
    const prefilled: ActiveSequenceEvent[] = [];
    for (const ev of events) {
      if (ev.data.type === "add_request") adds.set(ev.requestId, ev);
      else if (ev.data.type === "mark_prefill_completed") prefilled.push(ev);
    }
    for (const id of [...p.requests]) {
      if (adds.has(id)) continue;
      this.sink.applyRemote(freeOf(p.routerId, id), now);
      p.requests.delete(id);
    }
    for (const [id, ev] of adds) {
      if (!p.requests.has(id) && this.sink.applyRemote(ev, now)) p.requests.add(id);
    }
    // Marking twice is harmless: a request no longer prefilling is left alone.
    for (const ev of prefilled) if (p.requests.has(ev.requestId)) this.sink.applyRemote(ev, now);
  }

  /** Origins to ask for a snapshot now (each at most once per resyncRetryMs). */
  resyncDue(now: number): bigint[] {
    const out: bigint[] = [];
    for (const p of this.#peers.values()) {
      if (p.incomplete && now - p.askedAt >= this.opts.resyncRetryMs) {
        p.askedAt = now;
        out.push(p.routerId);
      }
    }
    return out;
  }

  /** Free the requests of every origin silent for longer than deadAfterMs, and forget it. */
  expireSilent(now: number): bigint[] {
    const dead: bigint[] = [];
    for (const p of [...this.#peers.values()]) {
      if (now - p.lastSeenAt <= this.opts.deadAfterMs) continue;
      this.counters.expiredRequests += this.#freeAll(p, now);
      this.counters.expiredPeers++;
      this.#peers.delete(p.routerId);
      dead.push(p.routerId);
    }
    return dead;
  }

  /** Forget ids the tracker no longer holds (expired there after 300 s, or their slot was removed). */
  prune(): number {
    let n = 0;
    for (const p of this.#peers.values()) {
      for (const id of p.requests) {
        if (!this.sink.hasRemoteRequest(p.routerId, id)) {
          p.requests.delete(id);
          n++;
        }
      }
    }
    return n;
  }

  /** Free everything (this router stops syncing: remote load would no longer be kept fresh). */
  clear(now: number): void {
    for (const p of this.#peers.values()) this.#freeAll(p, now);
    this.#peers.clear();
  }

  #freeAll(p: Peer, now: number): number {
    let n = 0;
    for (const id of p.requests) if (this.sink.applyRemote(freeOf(p.routerId, id), now)) n++;
    p.requests.clear();
    return n;
  }
}

function freeOf(routerId: bigint, requestId: string): ActiveSequenceEvent {
  // The worker is not needed to free: the tracker knows where the request was booked.
  return {
    requestId,
    worker: { workerId: 0n, dpRank: 0 },
    data: { type: "free" },
    routerId,
    loraName: null,
  };
}
