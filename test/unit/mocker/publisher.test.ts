import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { RouterEventBatchSchema, storedEvent } from "../../../src/core/events.ts";
import { parseJsonBigintSafe } from "../../../src/core/json.ts";
import { EventPublisher } from "../../../src/mocker/publisher.ts";

interface Call {
  url: string;
  auth: string | null;
  body: string;
}

function fakeFetch(fail: (n: number) => boolean = () => false) {
  const calls: Call[] = [];
  const f = (async (input: string | URL | Request, init?: RequestInit) => {
    const n = calls.length;
    calls.push({
      url: String(input),
      auth: new Headers(init?.headers).get("authorization"),
      body: String(init?.body),
    });
    if (fail(n)) throw new Error("connection refused");
    return new Response("ok");
  }) as typeof fetch;
  return { calls, f };
}

const ev = (id: number) =>
  storedEvent(18446744073709551615n, BigInt(id), [
    { blockHash: 2n ** 63n + BigInt(id), tokensHash: 5n },
  ]);

describe("EventPublisher", () => {
  test("batches events into one POST of a RouterEvent array, with the events token as Bearer", async () => {
    const { calls, f } = fakeFetch();
    const p = new EventPublisher({
      routerUrl: "http://router:1/",
      eventsToken: "s3cret",
      batchMs: 1000,
      fetch: f,
    });
    p.push(ev(0));
    p.push(ev(1));
    expect(calls.length).toBe(0); // still inside the batching window
    await p.flush();
    expect(calls.length).toBe(1);
    expect(calls[0]!.url).toBe("http://router:1/v1/kv/events");
    expect(calls[0]!.auth).toBe("Bearer s3cret");
    const batch = v.parse(RouterEventBatchSchema, parseJsonBigintSafe(calls[0]!.body));
    expect(batch).toEqual([ev(0), ev(1)]);
    expect(p.sentEvents).toBe(2);
  });

  test("a failed push is dropped and counted, and later events still go out in order", async () => {
    const { calls, f } = fakeFetch((n) => n === 0);
    const errors: string[] = [];
    const p = new EventPublisher({
      routerUrl: "http://router:1",
      batchMs: 1000,
      fetch: f,
      onError: (m) => errors.push(m),
    });
    p.push(ev(0));
    await p.flush();
    p.push(ev(1));
    await p.flush();
    expect(calls.length).toBe(2);
    expect(p.failedBatches).toBe(1);
    expect(p.droppedEvents).toBe(1);
    expect(errors[0]).toContain("connection refused");
    const ids = v
      .parse(RouterEventBatchSchema, parseJsonBigintSafe(calls[1]!.body))
      .map((e) => e.event.eventId);
    expect(ids).toEqual([1n]);
  });

  test("the batch window fires on its own", async () => {
    const { calls, f } = fakeFetch();
    const p = new EventPublisher({ routerUrl: "http://router:1", batchMs: 1, fetch: f });
    p.push(ev(0));
    const deadline = performance.now() + 2000;
    while (calls.length === 0 && performance.now() < deadline)
      await new Promise((r) => setTimeout(r, 2));
    expect(calls.length).toBe(1);
    await p.stop();
  });

  test("after stop, events are ignored", async () => {
    const { calls, f } = fakeFetch();
    const p = new EventPublisher({ routerUrl: "http://router:1", batchMs: 1000, fetch: f });
    await p.stop();
    p.push(ev(0));
    await p.flush();
    expect(calls.length).toBe(0);
  });
});
