/**
 * The hang guard over a fake connection whose commands hang until released: a command that
 * times out marks Redis down, later commands fail at once (no wait), one probe at a time
 * asks PING, and the first PING that answers brings it back. The probe timer is driven by
 * hand; command deadlines are real (tens of ms).
 */
import { describe, expect, test } from "bun:test";
import type { RedisConnection } from "../../../src/sync/redis-connection.ts";
import { until } from "../../support/processes.ts";
import {
  HangGuardConnection,
  RedisTimeoutError,
  RedisUnavailableError,
  withDeadline,
} from "../../../src/sync/redis-guard.ts";

/** A connection that answers "OK" (or hangs while `hung`, or fails with `error`). */
class FakeRedis implements RedisConnection {
  readonly kind = "resp" as const;
  hung = false;
  error: Error | undefined;
  readonly sent: string[][] = [];
  readonly #parked: (() => void)[] = [];

  command(args: readonly string[]): Promise<unknown> {
    this.sent.push([...args]);
    if (this.error) return Promise.reject(this.error);
    if (!this.hung) return Promise.resolve(args[0] === "PING" ? "PONG" : "OK");
    return new Promise((resolve) => this.#parked.push(() => resolve("late")));
  }
  eval(): Promise<unknown> {
    return this.command(["EVAL"]);
  }
  evalsha(): Promise<unknown> {
    return this.command(["EVALSHA"]);
  }
  async close(): Promise<void> {}
  /** SIGCONT: everything parked answers. */
  resume(): void {
    this.hung = false;
    for (const f of this.#parked.splice(0)) f();
  }
}

function guarded(inner: FakeRedis) {
  const timers: { ms: number; fn: () => void }[] = [];
  const changes: boolean[] = [];
  const guard = new HangGuardConnection(inner, {
    timeoutMs: 30,
    probeTimeoutMs: 30,
    probeIntervalMs: 100,
    after: (ms, fn) => timers.push({ ms, fn }),
    onChange: (up) => changes.push(up),
  });
  return { guard, timers, changes };
}

async function elapsed(p: Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const t0 = performance.now();
  let error: unknown;
  await p.catch((e: unknown) => (error = e));
  return { ms: performance.now() - t0, error };
}

describe("HangGuardConnection", () => {
  test("a hung Redis costs one bounded wait, then commands fail at once until a probe answers", async () => {
    const inner = new FakeRedis();
    const { guard, timers, changes } = guarded(inner);
    expect(await guard.command(["GET", "k"])).toBe("OK");

    inner.hung = true;
    const first = await elapsed(guard.command(["GET", "k"]));
    expect(first.error).toBeInstanceOf(RedisTimeoutError);
    expect(first.ms).toBeGreaterThanOrEqual(25);
    expect(guard.up).toBe(false);
    expect(changes).toEqual([false]);

    const sentBefore = inner.sent.length;
    const second = await elapsed(guard.evalsha("sha", [], []));
    expect(second.error).toBeInstanceOf(RedisUnavailableError);
    expect(second.ms).toBeLessThan(10);
    expect(inner.sent.length).toBe(sentBefore); // refused without reaching Redis

    // One probe is scheduled; while Redis still hangs it times out and schedules the next, later.
    expect(timers.map((t) => t.ms)).toEqual([100]);
    timers.shift()!.fn();
    await Bun.sleep(0);
    expect(inner.sent.at(-1)).toEqual(["PING"]);
    await until(() => timers.length === 1, "the next probe to be scheduled", 2_000, 1);
    expect(timers[0]!.ms).toBe(200);
    expect(guard.up).toBe(false);

    inner.resume();
    timers.shift()!.fn();
    await until(() => guard.up, "the probe to bring Redis back", 2_000, 1);
    expect(changes).toEqual([false, true]);
    expect(await guard.command(["GET", "k"])).toBe("OK");
    expect(guard.stats()).toMatchObject({ up: true, trips: 1, timeouts: 1, refused: 1 });
  });

  test("errors that come back in time (a reply error, a refused connection) pass through and trip nothing", async () => {
    const inner = new FakeRedis();
    const { guard, timers } = guarded(inner);
    inner.error = new Error("NOSCRIPT No matching script");
    await expect(guard.evalsha("sha", [], [])).rejects.toThrow("NOSCRIPT");
    inner.error = new Error("Connection closed");
    await expect(guard.command(["GET", "k"])).rejects.toThrow("Connection closed");
    expect(guard.up).toBe(true);
    expect(timers).toEqual([]);
  });

  test("commands already waiting when Redis hangs are each cut at the deadline", async () => {
    const inner = new FakeRedis();
    inner.hung = true;
    const { guard } = guarded(inner);
    const waits = await Promise.all(
      Array.from({ length: 5 }, () => elapsed(guard.command(["GET", "k"]))),
    );
    for (const w of waits) {
      expect(w.error).toBeInstanceOf(RedisTimeoutError);
      expect(w.ms).toBeLessThan(200);
    }
    expect(guard.stats().trips).toBe(1);
  });
});

describe("withDeadline", () => {
  test("a late timer (this process was busy) gets one more period before it fails", async () => {
    let answer!: (v: string) => void;
    const p = withDeadline(new Promise<string>((r) => (answer = r)), 20, "cmd");
    const busyUntil = performance.now() + 60; // the event loop is blocked past the deadline
    while (performance.now() < busyUntil) {}
    setTimeout(() => answer("PONG"), 0); // the reply that was waiting in the socket
    expect(await p).toBe("PONG");
  });

  test("a timer on time fails with RedisTimeoutError", async () => {
    await expect(withDeadline(new Promise(() => {}), 10, "redis GET")).rejects.toBeInstanceOf(
      RedisTimeoutError,
    );
  });
});
