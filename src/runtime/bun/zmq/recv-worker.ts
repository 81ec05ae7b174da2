/**
 * The Worker that owns the ZeroMQ sockets of one vLLM publisher: a SUB on the live
 * endpoint and, when configured, a DEALER on the replay endpoint (the engine's ROUTER socket,
 * which resends the batches it still buffers from a given seq on).
 *
 * It blocks in zmq_msg_recv with a receive timeout (so it sees the stop flag), drains
 * whatever else is queued without blocking, orders the batches by seq with the Sequencer
 * (replaying gaps synchronously on the DEALER) and posts them to the main thread in
 * hand-offs of up to maxBatch messages: one postMessage per message costs ~100 µs of
 * scheduling, one per 512 amortizes it. When the main thread falls behind by maxInflight
 * hand-offs the worker waits, so memory stays bounded and ZeroMQ's high-water mark
 * (then vLLM's replay buffer) absorbs the burst instead.
 *
 * It decodes nothing: payloads go to the main thread as bytes.
 *
 * The live socket is bounded (ZMQ_MAXMSGSIZE: a frame declaring 2^40 bytes, or 512 MB, is
 * refused before any allocation; one of 512 MB cost 470 MB before) and watched: libzmq's
 * socket monitor says whether the session is up (session-watch.ts), the main thread is told,
 * and a session that ended for good (a protocol error, which libzmq does not recover from)
 * is replaced by a new socket, with backoff. Batches missed meanwhile are a seq gap, replayed
 * like any other.
 */
import {
  loadLibzmq,
  ZMQ_DEALER,
  ZMQ_DONTWAIT,
  ZMQ_MAXMSGSIZE,
  ZMQ_PAIR,
  ZMQ_RCVHWM,
  ZMQ_RCVTIMEO,
  ZMQ_SUB,
  ZMQ_SUBSCRIBE,
} from "./libzmq.ts";
import { SessionWatch, WATCHED_EVENTS } from "./session-watch.ts";
import { Sequencer, type SeqMessage, type SequencedMessage } from "./sequencer.ts";
import {
  CONTROL_INFLIGHT,
  CONTROL_STOP,
  FLAG_REPLAYED,
  FLAG_RESTART,
  type WorkerBatch,
  type WorkerCounters,
  type WorkerStart,
  type WorkerToMain,
} from "./worker-protocol.ts";
import { stagedMessage, ZmqContext, type StagedMessage, type ZmqSocket } from "./zmq-socket.ts";

declare const self: Worker;

function post(msg: WorkerToMain, transfer?: ArrayBuffer[]): void {
  self.postMessage(msg, transfer ?? []);
}

self.onmessage = (e: MessageEvent<WorkerStart>) => {
  if (e.data?.type !== "start") return;
  try {
    run(e.data);
  } catch (err) {
    post({ type: "fatal", message: (err as Error).message });
  }
};

/** Big-endian u64 of an 8-byte frame, as a number (exact below 2^53). */
function seqOf(b: Uint8Array, at: number): number {
  const hi = ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
  const lo = ((b[at + 4]! << 24) | (b[at + 5]! << 16) | (b[at + 6]! << 8) | b[at + 7]!) >>> 0;
  return hi * 4294967296 + lo;
}

function u64be(n: number): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n));
  return out;
}

/** Accumulates delivered messages and posts them in hand-offs. */
class HandOff {
  private count = 0;
  private seqs: Float64Array;
  private flags: Uint8Array;
  private lost: Float64Array;
  private offsets: Uint32Array;
  private bytes: Uint8Array;
  private used = 0;

  constructor(
    private readonly max: number,
    private readonly control: Int32Array,
    private readonly maxInflight: number,
    private readonly counters: () => WorkerCounters,
  ) {
    this.seqs = new Float64Array(max);
    this.flags = new Uint8Array(max);
    this.lost = new Float64Array(max);
    this.offsets = new Uint32Array(max + 1);
    this.bytes = new Uint8Array(1 << 18);
  }

  get size(): number {
    return this.count;
  }

  add(m: SequencedMessage): void {
    const n = m.payload.length;
    if (this.used + n > this.bytes.length) {
      let cap = this.bytes.length * 2;
      while (cap < this.used + n) cap *= 2;
      const bigger = new Uint8Array(cap);
      bigger.set(this.bytes.subarray(0, this.used));
      this.bytes = bigger;
    }
    this.bytes.set(m.payload, this.used);
    const i = this.count++;
    this.seqs[i] = m.seq;
    this.flags[i] = (m.replayed ? FLAG_REPLAYED : 0) | (m.restart ? FLAG_RESTART : 0);
    this.lost[i] = m.lostBefore;
    this.offsets[i] = this.used;
    this.used += n;
    this.offsets[i + 1] = this.used;
    if (this.count === this.max) this.flush();
  }

  flush(): void {
    if (this.count === 0) return;
    // Backpressure: wait (bounded) while the main thread is maxInflight hand-offs behind.
    while (
      Atomics.load(this.control, CONTROL_INFLIGHT) >= this.maxInflight &&
      Atomics.load(this.control, CONTROL_STOP) === 0
    ) {
      Atomics.wait(
        this.control,
        CONTROL_INFLIGHT,
        Atomics.load(this.control, CONTROL_INFLIGHT),
        50,
      );
    }
    Atomics.add(this.control, CONTROL_INFLIGHT, 1);
    const c = this.count;
    const msg: WorkerBatch = {
      type: "batch",
      count: c,
      seqs: this.seqs.slice(0, c),
      flags: this.flags.slice(0, c),
      lost: this.lost.slice(0, c),
      offsets: this.offsets.slice(0, c + 1),
      bytes: this.bytes.subarray(0, this.used),
      counters: this.counters(),
    };
    post(msg, [this.bytes.buffer as ArrayBuffer]);
    this.bytes = new Uint8Array(Math.max(1 << 18, this.bytes.length));
    this.count = 0;
    this.used = 0;
  }
}

function run(cfg: WorkerStart): void {
  const lib = loadLibzmq(cfg.libzmqPath);
  const control = new Int32Array(cfg.control);
  const ctx = new ZmqContext(lib.symbols);
  const session = new LiveSession(ctx, cfg);
  let malformedFrames = 0;
  const replay =
    cfg.replayEndpoint === undefined
      ? undefined
      : new ReplayClient(ctx, cfg, cfg.replayEndpoint, control, () => malformedFrames++);
  const sequencer = new Sequencer(
    replay === undefined ? undefined : (start) => replay.replay(start),
  );
  const counters = (): WorkerCounters => ({ ...sequencer.stats, malformedFrames });
  const out = new HandOff(cfg.maxBatch, control, cfg.maxInflight, counters);
  const deliver = (m: SequencedMessage) => out.add(m);
  const live = stagedMessage();

  const handle = (m: StagedMessage) => {
    if (m.frames !== 3 || m.lengths[1] !== 8) {
      malformedFrames++;
      return;
    }
    const at = m.offsets[2]!;
    sequencer.push(
      { seq: seqOf(m.bytes, m.offsets[1]!), payload: m.bytes.subarray(at, at + m.lengths[2]!) },
      deliver,
    );
  };

  post({ type: "ready", version: lib.version });
  try {
    while (Atomics.load(control, CONTROL_STOP) === 0) {
      const got = session.sub.recvMessage(live, 0); // false: the receive timeout, to look at the stop flag
      if (got) {
        handle(live);
        while (out.size < cfg.maxBatch && session.sub.recvMessage(live, ZMQ_DONTWAIT)) handle(live);
        out.flush();
      }
      session.look();
    }
    out.flush();
  } finally {
    session.close();
    replay?.close();
    ctx.term();
    post({ type: "stopped", counters: counters() });
  }
}

/**
 * The live SUB socket, watched through the PAIR socket its monitor events arrive on; a
 * session that ended for good is replaced by a new pair of sockets.
 */
class LiveSession {
  sub: ZmqSocket;
  #mon: ZmqSocket;
  #monitors = 0;
  readonly #watch: SessionWatch;
  readonly #monStaged = stagedMessage(64);

  constructor(
    private readonly ctx: ZmqContext,
    private readonly cfg: WorkerStart,
  ) {
    ({ sub: this.sub, mon: this.#mon } = this.#open());
    this.#watch = new SessionWatch(performance.now(), { silentMs: cfg.deadSessionMs });
  }

  #open(): { sub: ZmqSocket; mon: ZmqSocket } {
    const { ctx, cfg } = this;
    const sub = ctx.socket(ZMQ_SUB);
    sub.setInt(ZMQ_RCVHWM, cfg.rcvHwm);
    sub.setInt(ZMQ_RCVTIMEO, cfg.pollMs);
    sub.setInt64(ZMQ_MAXMSGSIZE, cfg.maxMessageBytes);
    sub.setBytes(ZMQ_SUBSCRIBE, new TextEncoder().encode(cfg.topic));
    const endpoint = `inproc://switchyard-session-${this.#monitors++}`;
    sub.monitor(endpoint, WATCHED_EVENTS);
    const mon = ctx.socket(ZMQ_PAIR);
    mon.connect(endpoint);
    sub.connect(cfg.endpoint);
    return { sub, mon };
  }

  /** Read every monitor event queued; then replace a dead session. The main thread hears of any change. */
  look(): void {
    const watch = this.#watch;
    const monStaged = this.#monStaged;
    let changed = false;
    while (this.#mon.recvMessage(monStaged, ZMQ_DONTWAIT)) {
      // Frame 1: u16 event id and u32 value, native (little-endian) order; frame 2: the endpoint.
      if (monStaged.frames < 1 || monStaged.lengths[0]! < 6) continue;
      const at = monStaged.offsets[0]!;
      const ev = monStaged.bytes[at]! | (monStaged.bytes[at + 1]! << 8);
      if (watch.event(ev, performance.now())) changed = true;
    }
    const now = performance.now();
    if (watch.dead(now)) {
      post({
        type: "log",
        level: "warn",
        message: `KV event session ended for good (${watch.lastProblem ?? "no answer"}; a frame over ${this.cfg.maxMessageBytes} bytes ends it too): subscribing again`,
      });
      this.close();
      ({ sub: this.sub, mon: this.#mon } = this.#open());
      watch.resubscribed(now);
      changed = true;
    }
    if (changed) post({ type: "session", state: watch.state, resubscribes: watch.resubscribes });
  }

  close(): void {
    this.sub.close();
    this.#mon.close();
  }
}

/** The DEALER on the engine's replay endpoint, opened on the first replay and dropped after an unfinished one. */
class ReplayClient {
  #dealer: ZmqSocket | undefined;
  readonly #staged = stagedMessage();

  constructor(
    private readonly ctx: ZmqContext,
    private readonly cfg: WorkerStart,
    private readonly endpoint: string,
    private readonly control: Int32Array,
    private readonly onMalformed: () => void,
  ) {}

  /**
   * One replay request, vLLM's protocol: send ["", start] (8-byte big-endian seq); read
   * ["", seq, payload] until an empty payload ends it. A start older than the engine's buffer
   * gets no error, just what is left, so the caller checks the seqs it got.
   */
  *replay(start: number): Generator<SeqMessage> {
    const { cfg } = this;
    if (this.#dealer === undefined) {
      this.#dealer = this.ctx.socket(ZMQ_DEALER);
      this.#dealer.setInt(ZMQ_RCVTIMEO, cfg.replayTimeoutMs);
      this.#dealer.setInt64(ZMQ_MAXMSGSIZE, cfg.maxMessageBytes);
      this.#dealer.connect(this.endpoint);
    }
    const d = this.#dealer;
    let finished = false;
    try {
      d.sendMultipart([new Uint8Array(0), u64be(start)]);
      for (;;) {
        if (Atomics.load(this.control, CONTROL_STOP) !== 0) return;
        if (!d.recvMessage(this.#staged, 0)) {
          post({
            type: "log",
            level: "warn",
            message: `replay from seq ${start}: no answer within ${cfg.replayTimeoutMs} ms`,
          });
          return;
        }
        const m = this.#staged;
        if (m.frames < 3 || m.lengths[1] !== 8) {
          this.onMalformed();
          continue;
        }
        if (m.lengths[2] === 0) {
          finished = true;
          return;
        }
        yield {
          seq: seqOf(m.bytes, m.offsets[1]!),
          payload: m.bytes.subarray(m.offsets[2]!, m.offsets[2]! + m.lengths[2]!),
        };
      }
    } finally {
      // An unfinished answer would be read by the next request: drop the socket instead.
      if (!finished) {
        d.close();
        this.#dealer = undefined;
      }
    }
  }

  close(): void {
    this.#dealer?.close();
  }
}
