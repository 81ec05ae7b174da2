/**
 * Whether a SUB socket's connection to its publisher is alive, from libzmq's socket monitor
 * events, and when to give up on it and subscribe again. Pure: events and time come in.
 *
 * Why: libzmq reconnects by itself after a dropped TCP connection (the monitor then shows
 * CONNECT_DELAYED / CONNECT_RETRIED every reconnect interval), but not after a protocol error
 * such as a frame over ZMQ_MAXMSGSIZE: the session ends with one DISCONNECTED and nothing
 * follows, for good (libzmq 4.3.4, checked with pyzmq). One bad frame ended a subscription
 * while GET /v1/workers still said connected. So: connected is what the monitor last said;
 * disconnected with no sign of libzmq retrying for `silentMs` means the session is dead, and
 * the worker closes the socket and subscribes on a new one, backing off (`backoffMs`,
 * doubling to `maxBackoffMs`) while new sockets do not get through the handshake.
 */

/** libzmq monitor events (zmq.h). */
export const ZMQ_EVENT_CONNECTED = 0x0001;
export const ZMQ_EVENT_CONNECT_DELAYED = 0x0002;
export const ZMQ_EVENT_CONNECT_RETRIED = 0x0004;
export const ZMQ_EVENT_CLOSED = 0x0080;
export const ZMQ_EVENT_DISCONNECTED = 0x0200;
export const ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL = 0x0800;
export const ZMQ_EVENT_HANDSHAKE_SUCCEEDED = 0x1000;
export const ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL = 0x2000;
export const ZMQ_EVENT_HANDSHAKE_FAILED_AUTH = 0x4000;
/** Every event above. */
export const WATCHED_EVENTS =
  ZMQ_EVENT_CONNECTED |
  ZMQ_EVENT_CONNECT_DELAYED |
  ZMQ_EVENT_CONNECT_RETRIED |
  ZMQ_EVENT_CLOSED |
  ZMQ_EVENT_DISCONNECTED |
  ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
  ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
  ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
  ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

export type SessionState = "connecting" | "connected" | "disconnected";

export interface SessionWatchOptions {
  /** Disconnected this long with no retry from libzmq: the session is dead (default 2000 ms). */
  readonly silentMs?: number;
  /** First wait before subscribing again after a dead session (default 100 ms). */
  readonly backoffMs?: number;
  /** Longest wait between new subscriptions that do not get through (default 10000 ms). */
  readonly maxBackoffMs?: number;
}

export class SessionWatch {
  state: SessionState = "connecting";
  /** Subscriptions started again after a dead session. */
  resubscribes = 0;
  /** Why the last session ended, when it did. */
  lastProblem: string | undefined;
  readonly #silentMs: number;
  readonly #backoffMs: number;
  readonly #maxBackoffMs: number;
  /** When libzmq last showed it is working on the connection (an event), ms. */
  #lastSign: number;
  #backoff: number;
  /** Not before this time may a new subscription start. */
  #notBefore = 0;

  constructor(now: number, o: SessionWatchOptions = {}) {
    this.#silentMs = o.silentMs ?? 2_000;
    this.#backoffMs = o.backoffMs ?? 100;
    this.#maxBackoffMs = o.maxBackoffMs ?? 10_000;
    this.#backoff = this.#backoffMs;
    this.#lastSign = now;
  }

  /** One monitor event. Returns true when the state changed. */
  event(ev: number, now: number): boolean {
    const before = this.state;
    this.#lastSign = now;
    switch (ev) {
      case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        this.state = "connected";
        // A session got through: the next one that dies is replaced as soon as it is seen dead.
        this.#backoff = this.#backoffMs;
        this.#notBefore = 0;
        break;
      case ZMQ_EVENT_CONNECTED:
        // TCP up; ZMTP's handshake follows (HANDSHAKE_SUCCEEDED makes it connected).
        if (this.state !== "connected") this.state = "connecting";
        break;
      case ZMQ_EVENT_CONNECT_DELAYED:
      case ZMQ_EVENT_CONNECT_RETRIED:
        if (this.state === "connected") this.state = "connecting";
        break;
      case ZMQ_EVENT_DISCONNECTED:
      case ZMQ_EVENT_CLOSED:
        this.state = "disconnected";
        this.lastProblem = ev === ZMQ_EVENT_CLOSED ? "connection closed" : "disconnected";
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
      case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
      case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        this.state = "disconnected";
        this.lastProblem = "handshake failed";
        break;
    }
    return this.state !== before;
  }

  /**
   * Time passed. True when the session is dead and a new subscription should start now: the
   * caller closes the socket, opens a new one and calls `resubscribed(now)`.
   */
  dead(now: number): boolean {
    return (
      this.state === "disconnected" &&
      now - this.#lastSign >= this.#silentMs &&
      now >= this.#notBefore
    );
  }

  /** A new socket was opened: wait for its handshake, and back off if it dies again. */
  resubscribed(now: number): void {
    this.resubscribes++;
    this.state = "connecting";
    this.#lastSign = now;
    this.#notBefore = now + this.#backoff;
    this.#backoff = Math.min(this.#maxBackoffMs, this.#backoff * 2);
  }
}
