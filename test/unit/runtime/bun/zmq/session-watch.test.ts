/**
 * SessionWatch: libzmq's monitor events -> the session's state, and when a session that
 * ended for good (no retry from libzmq) is replaced, with backoff.
 */
import { describe, expect, test } from "bun:test";
import {
  SessionWatch,
  ZMQ_EVENT_CONNECT_DELAYED,
  ZMQ_EVENT_CONNECT_RETRIED,
  ZMQ_EVENT_CONNECTED,
  ZMQ_EVENT_DISCONNECTED,
  ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL,
  ZMQ_EVENT_HANDSHAKE_SUCCEEDED,
} from "../../../../../src/runtime/bun/zmq/session-watch.ts";

describe("SessionWatch", () => {
  test("connecting -> connected at the handshake; disconnected at the drop", () => {
    const w = new SessionWatch(0);
    expect(w.state).toBe("connecting");
    w.event(ZMQ_EVENT_CONNECT_DELAYED, 1);
    w.event(ZMQ_EVENT_CONNECTED, 2);
    expect(w.state).toBe("connecting");
    expect(w.event(ZMQ_EVENT_HANDSHAKE_SUCCEEDED, 3)).toBe(true);
    expect(w.state).toBe("connected");
    w.event(ZMQ_EVENT_DISCONNECTED, 10);
    expect(w.state).toBe("disconnected");
  });

  test("a drop libzmq keeps retrying is not dead; one followed by silence is, after silentMs", () => {
    const w = new SessionWatch(0, { silentMs: 1_000 });
    w.event(ZMQ_EVENT_HANDSHAKE_SUCCEEDED, 0);
    w.event(ZMQ_EVENT_DISCONNECTED, 100);
    for (let t = 200; t < 5_000; t += 100) {
      w.event(ZMQ_EVENT_CONNECT_RETRIED, t); // the publisher is down; libzmq is on it
      expect(w.dead(t + 50)).toBe(false);
    }
    const dropped = new SessionWatch(0, { silentMs: 1_000 });
    dropped.event(ZMQ_EVENT_HANDSHAKE_SUCCEEDED, 0);
    dropped.event(ZMQ_EVENT_DISCONNECTED, 100); // a frame over the limit: nothing follows
    expect(dropped.dead(1_099)).toBe(false);
    expect(dropped.dead(1_100)).toBe(true);
  });

  test("new subscriptions that keep failing back off, doubling to the maximum; a handshake resets it", () => {
    const w = new SessionWatch(0, { silentMs: 10, backoffMs: 100, maxBackoffMs: 400 });
    const waits: number[] = [];
    let t = 0;
    for (let i = 0; i < 5; i++) {
      w.event(ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, t);
      let at = t;
      while (!w.dead(at)) at++;
      waits.push(at - t);
      w.resubscribed(at);
      t = at;
    }
    expect(waits).toEqual([10, 100, 200, 400, 400]);
    expect(w.resubscribes).toBe(5);
    w.event(ZMQ_EVENT_HANDSHAKE_SUCCEEDED, t + 1);
    w.event(ZMQ_EVENT_DISCONNECTED, t + 2);
    let at = t + 2;
    while (!w.dead(at)) at++;
    expect(at - (t + 2)).toBe(10); // a session got through: the next death is acted on at once again
  });
});
