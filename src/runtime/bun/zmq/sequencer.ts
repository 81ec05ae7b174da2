/**
 * Orders one vLLM publisher's batches by their ZMQ sequence number and fills gaps from the replay
 * socket, as Dynamo's standalone listener does. Pure: the replay is an injected synchronous
 * function (the receive worker does the blocking I/O), so this runs and is tested without sockets.
 *
 * Per live batch, with `last` the last seq delivered:
 * - nothing delivered yet and seq > 0: replay [0, seq) first (what the buffer still holds);
 * - seq == last + 1: deliver;
 * - seq > last + 1 (a gap): replay [last+1, seq), deliver what came back in order, then the
 *   live batch; batches still missing are reported as `lostBefore` on the next delivery;
 * - seq <= last: vLLM's seq begins at 0 per publisher process and a PUB→SUB pipe never
 *   reorders or duplicates, so this is a restarted engine. Start over from "before seq 0"
 *   (replay [0, seq)); the first delivery after it carries `restart` (its cache was empty
 *   at seq 0). A restart whose new seqs already passed the old ones cannot be seen here.
 * Without a replay function gaps are only reported. Seqs are numbers: exact below 2^53.
 */

export interface SeqMessage {
  readonly seq: number;
  readonly payload: Uint8Array;
}

export interface SequencedMessage extends SeqMessage {
  /** Came from the replay socket, not the live stream. */
  readonly replayed: boolean;
  /** Batches known to be missing right before this one (could not be replayed). */
  readonly lostBefore: number;
  /** The publisher restarted before this batch: its previous state is gone. */
  readonly restart: boolean;
}

/**
 * Ask the publisher for every buffered batch with seq >= start, in order; undefined when
 * no replay endpoint is configured or the request failed. The sequencer stops reading at
 * the first seq >= the live batch's.
 */
export type ReplayFn = (start: number) => Iterable<SeqMessage> | undefined;

export interface SequencerStats {
  live: number;
  replayed: number;
  gaps: number;
  lostBatches: number;
  restarts: number;
  replayRequests: number;
  replayFailures: number;
  /** Seq of the last batch delivered; -1 before the first. */
  lastSeq: number;
}

export class Sequencer {
  private last: number | undefined;
  private restartPending = false;
  readonly stats: SequencerStats = {
    live: 0,
    replayed: 0,
    gaps: 0,
    lostBatches: 0,
    restarts: 0,
    replayRequests: 0,
    replayFailures: 0,
    lastSeq: -1,
  };

  constructor(private readonly replay?: ReplayFn) {}

  /** Take one live batch; `deliver` gets it and any replayed ones before it, in seq order. */
  push(msg: SeqMessage, deliver: (m: SequencedMessage) => void): void {
    this.stats.live++;
    const seq = msg.seq;
    if (this.last !== undefined && seq <= this.last) {
      // The new process's batches before this one belong to its new state: missing ones
      // are losses, so count from "before seq 0" rather than from "never seen".
      this.stats.restarts++;
      this.last = -1;
      this.restartPending = true;
    }
    if (this.last === undefined) {
      if (seq > 0) this.replayBefore(0, seq, deliver);
    } else if (seq > this.last + 1) {
      this.stats.gaps++;
      this.replayBefore(this.last + 1, seq, deliver);
    }
    this.emit(msg, false, deliver);
  }

  private replayBefore(start: number, end: number, deliver: (m: SequencedMessage) => void): void {
    if (this.replay === undefined) return;
    this.stats.replayRequests++;
    let got: Iterable<SeqMessage> | undefined;
    try {
      got = this.replay(start);
    } catch {
      got = undefined;
    }
    if (got === undefined) {
      this.stats.replayFailures++;
      return;
    }
    for (const m of got) {
      if (m.seq >= end) break;
      if (this.last !== undefined && m.seq <= this.last) continue;
      this.emit(m, true, deliver);
    }
  }

  private emit(m: SeqMessage, replayed: boolean, deliver: (m: SequencedMessage) => void): void {
    // Holes before the very first batch are not losses: they predate this subscriber.
    const lostBefore = this.last === undefined ? 0 : m.seq - this.last - 1;
    const restart = this.restartPending;
    this.restartPending = false;
    this.last = m.seq;
    this.stats.lastSeq = m.seq;
    this.stats.lostBatches += lostBefore;
    if (replayed) this.stats.replayed++;
    deliver({ seq: m.seq, payload: m.payload, replayed, lostBefore, restart });
  }
}
