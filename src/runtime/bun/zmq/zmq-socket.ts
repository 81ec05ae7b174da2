/**
 * A minimal safe wrapper over libzmq's context and sockets (libzmq.ts): connect, options,
 * multipart receive into a reusable staging buffer, multipart send, close. Blocking calls:
 * use it from a Worker only (recv-worker.ts). Not thread-safe, like ZeroMQ sockets.
 */
import { read, toArrayBuffer, type Pointer } from "bun:ffi";
import {
  EAGAIN,
  EINTR,
  ZMQ_DONTWAIT,
  ZMQ_LINGER,
  ZMQ_MSG_T_SIZE,
  ZMQ_SNDMORE,
  zmqError,
  type LibZmq,
} from "./libzmq.ts";

/** Frames of one message, staged in `bytes` at `offsets[i]`, `lengths[i]`. */
export interface StagedMessage {
  frames: number;
  bytes: Uint8Array;
  readonly offsets: number[];
  readonly lengths: number[];
}

export class ZmqContext {
  #ctx: Pointer | null;
  readonly lib: LibZmq;

  constructor(lib: LibZmq) {
    this.lib = lib;
    const ctx = lib.zmq_ctx_new() as Pointer | null;
    if (ctx === null) throw zmqError(lib, "zmq_ctx_new");
    this.#ctx = ctx;
  }

  socket(type: number): ZmqSocket {
    if (this.#ctx === null) throw new Error("ZeroMQ context is terminated");
    const s = this.lib.zmq_socket(this.#ctx, type) as Pointer | null;
    if (s === null) throw zmqError(this.lib, "zmq_socket");
    const sock = new ZmqSocket(this.lib, s);
    sock.setInt(ZMQ_LINGER, 0); // never block close/term on unsent messages
    return sock;
  }

  /** Terminate; every socket must be closed first (LINGER 0 keeps this quick). */
  term(): void {
    if (this.#ctx === null) return;
    const ctx = this.#ctx;
    this.#ctx = null;
    while (this.lib.zmq_ctx_term(ctx) !== 0 && this.lib.zmq_errno() === EINTR) {
      // retry: interrupted by a signal
    }
  }
}

export class ZmqSocket {
  #sock: Pointer | null;
  readonly #lib: LibZmq;
  /** One zmq_msg_t, 8-byte aligned, reused for every frame. */
  readonly #msg = new BigUint64Array(ZMQ_MSG_T_SIZE / 8);
  readonly #int = new Int32Array(1);
  readonly #enc = new TextEncoder();

  constructor(lib: LibZmq, sock: Pointer) {
    this.#lib = lib;
    this.#sock = sock;
  }

  private get sock(): Pointer {
    if (this.#sock === null) throw new Error("ZeroMQ socket is closed");
    return this.#sock;
  }

  setInt(option: number, value: number): void {
    this.#int[0] = value;
    if (this.#lib.zmq_setsockopt(this.sock, option, this.#int, 4) !== 0)
      throw zmqError(this.#lib, `zmq_setsockopt(${option})`);
  }

  setInt64(option: number, value: number): void {
    const v = new BigInt64Array([BigInt(value)]);
    if (this.#lib.zmq_setsockopt(this.sock, option, v, 8) !== 0)
      throw zmqError(this.#lib, `zmq_setsockopt(${option})`);
  }

  /** Publish this socket's monitor events (`events` mask) on an inproc PAIR endpoint. */
  monitor(endpoint: string, events: number): void {
    const c = this.#enc.encode(endpoint + "\0");
    if (this.#lib.zmq_socket_monitor(this.sock, c, events) !== 0)
      throw zmqError(this.#lib, `zmq_socket_monitor(${endpoint})`);
  }

  setBytes(option: number, value: Uint8Array): void {
    // A zero-length view still needs a valid pointer: pass a 1-byte buffer with length 0.
    const buf = value.length > 0 ? value : new Uint8Array(1);
    if (this.#lib.zmq_setsockopt(this.sock, option, buf, value.length) !== 0)
      throw zmqError(this.#lib, `zmq_setsockopt(${option})`);
  }

  connect(endpoint: string): void {
    const c = this.#enc.encode(endpoint + "\0");
    if (this.#lib.zmq_connect(this.sock, c) !== 0)
      throw zmqError(this.#lib, `zmq_connect(${endpoint})`);
  }

  /**
   * Receive one whole multipart message into `into` (growing its buffer as needed).
   * Returns false when nothing arrived (EAGAIN: non-blocking, or the receive timeout ran
   * out) or a signal interrupted the wait. Frames of one message arrive together, so only
   * the first frame can time out.
   */
  recvMessage(into: StagedMessage, flags: number): boolean {
    const lib = this.#lib;
    const msg = this.#msg;
    into.frames = 0;
    let used = 0;
    for (;;) {
      lib.zmq_msg_init(msg);
      const n = lib.zmq_msg_recv(msg, this.sock, into.frames === 0 ? flags : 0);
      if (n < 0) {
        const errno = lib.zmq_errno();
        lib.zmq_msg_close(msg);
        if (into.frames === 0 && (errno === EAGAIN || errno === EINTR)) return false;
        throw zmqError(lib, "zmq_msg_recv", errno);
      }
      if (used + n > into.bytes.length) into.bytes = grow(into.bytes, used, used + n);
      if (n > 0) {
        const p = lib.zmq_msg_data(msg) as Pointer | null;
        if (p === null) throw new Error("zmq_msg_data returned NULL");
        into.bytes.set(n <= 8 ? smallFrame(p, n) : new Uint8Array(toArrayBuffer(p, 0, n)), used);
      }
      into.offsets[into.frames] = used;
      into.lengths[into.frames] = n;
      into.frames++;
      used += n;
      const more = lib.zmq_msg_more(msg);
      lib.zmq_msg_close(msg);
      if (more === 0) return true;
    }
  }

  /** Send a multipart message; throws on any error (the sockets used here never block long). */
  sendMultipart(frames: readonly Uint8Array[]): void {
    for (let i = 0; i < frames.length; i++) {
      const f = frames[i]!;
      const buf = f.length > 0 ? f : new Uint8Array(1);
      const flags = i < frames.length - 1 ? ZMQ_SNDMORE : 0;
      if (this.#lib.zmq_send(this.sock, buf, f.length, flags | ZMQ_DONTWAIT) < 0)
        throw zmqError(this.#lib, "zmq_send");
    }
  }

  close(): void {
    if (this.#sock === null) return;
    this.#lib.zmq_close(this.#sock);
    this.#sock = null;
  }
}

export function stagedMessage(capacity = 1 << 16): StagedMessage {
  return { frames: 0, bytes: new Uint8Array(capacity), offsets: [], lengths: [] };
}

function grow(buf: Uint8Array, keep: number, need: number): Uint8Array {
  let cap = buf.length * 2;
  while (cap < need) cap *= 2;
  const out = new Uint8Array(cap);
  out.set(buf.subarray(0, keep));
  return out;
}

const small = new Uint8Array(8);
/** Frames of up to 8 bytes (topic, seq) are read without creating an ArrayBuffer. */
function smallFrame(p: Pointer, n: number): Uint8Array {
  for (let i = 0; i < n; i++) small[i] = read.u8(p, i);
  return small.subarray(0, n);
}
