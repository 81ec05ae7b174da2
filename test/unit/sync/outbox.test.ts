import { describe, expect, test } from "bun:test";
import type { ActiveSequenceEvent } from "../../../src/router/books/sequence-events.ts";
import { Outbox, type OutboxOptions } from "../../../src/sync/outbox.ts";
import { decodeMessage, type SyncMessage } from "../../../src/sync/wire.ts";
import { until } from "../../support/processes.ts";

const origin = { routerId: 5n, epoch: "ep" };

function add(requestId: string): ActiveSequenceEvent {
  return {
    requestId,
    worker: { workerId: 1n, dpRank: 0 },
    data: {
      type: "add_request",
      tokenSequence: BigUint64Array.of(7n, 8n),
      isl: 32,
      overlap: 0,
      expectedOutputTokens: null,
    },
    routerId: origin.routerId,
    loraName: null,
  };
}

/** A publisher whose sends the test resolves or rejects by hand. */
function manualPublisher() {
  const sent: { payload: string; settle: (ok: boolean) => void }[] = [];
  const publish = (payload: string) =>
    new Promise<void>((resolve, reject) =>
      sent.push({ payload, settle: (ok) => (ok ? resolve() : reject(new Error("redis down"))) }),
    );
  const decoded = (i: number): SyncMessage => decodeMessage(sent[i]!.payload)!.message;
  return { sent, publish, decoded };
}

function outbox(publish: OutboxOptions["publish"], over: Partial<OutboxOptions> = {}): Outbox {
  return new Outbox({
    origin,
    publish,
    snapshot: () => [],
    batchMs: 1,
    maxBatchEvents: 256,
    maxMessageBytes: 1 << 20,
    maxQueuedEvents: 10_000,
    ...over,
  });
}

const eventCount = (m: SyncMessage) =>
  m.kind === "events" || m.kind === "snapshot" ? m.events.length : 0;

describe("Outbox", () => {
  test("a full batch of 256 leaves without waiting for the timer; the rest wait for the message in flight, then go in order", async () => {
    const p = manualPublisher();
    const box = outbox(p.publish);
    for (let i = 0; i < 300; i++) box.push(add(`r${i}`));
    expect(p.sent.length).toBe(0); // never encoded in the caller's stack
    await Promise.resolve(); // a full batch goes at the end of the current job, no timer
    expect(p.sent.length).toBe(1); // one in flight
    expect(eventCount(p.decoded(0))).toBe(256);
    p.sent[0]!.settle(true);
    await until(() => p.sent.length === 2, "the second message");
    const second = p.decoded(1);
    expect(second.kind === "events" && second.seq).toBe(2);
    expect(second.kind === "events" && second.events[0]!.requestId).toBe("r256");
    expect(eventCount(second)).toBe(44);
    p.sent[1]!.settle(true);
    await box.drain();
    expect(box.counters).toMatchObject({ messages: 2, events: 300, droppedEvents: 0 });
  });

  test("a few events wait at most batchMs and leave together", async () => {
    const p = manualPublisher();
    const box = outbox(p.publish, { batchMs: 5 });
    box.push(add("a"));
    box.push(add("b"));
    expect(p.sent.length).toBe(0);
    await until(() => p.sent.length === 1, "the batch");
    expect(eventCount(p.decoded(0))).toBe(2);
  });

  test("messages are cut before maxMessageBytes", async () => {
    const sent: string[] = [];
    const box = outbox(async (s) => void sent.push(s), { maxMessageBytes: 400 });
    for (let i = 0; i < 10; i++) box.push(add(`r${i}`));
    await box.drain();
    expect(sent.length).toBeGreaterThan(1);
    for (const s of sent) expect(s.length).toBeLessThan(400 + 200); // events ≤ 400, plus the envelope
    const all = sent.flatMap((s) => {
      const m = decodeMessage(s)!.message;
      return m.kind === "events" ? m.events.map((e) => e.requestId) : [];
    });
    expect(all).toEqual(Array.from({ length: 10 }, (_, i) => `r${i}`));
  });

  test("a failed publish drops its events, still uses its seq, and never throws to the caller", async () => {
    const p = manualPublisher();
    const box = outbox(p.publish, { batchMs: 0 });
    box.push(add("lost"));
    await until(() => p.sent.length === 1, "first send");
    p.sent[0]!.settle(false);
    await until(() => box.counters.droppedEvents === 1, "the drop");
    box.push(add("next"));
    await until(() => p.sent.length === 2, "second send");
    const m = p.decoded(1);
    expect(m.kind === "events" && m.seq).toBe(2); // receivers see seq 1 missing
    p.sent[1]!.settle(true);
    box.heartbeat();
    await until(() => p.sent.length === 3, "heartbeat");
    expect(p.decoded(2)).toMatchObject({ kind: "heartbeat", seq: 2 });
    p.sent[2]!.settle(true);
    await box.drain();
    expect(box.counters).toMatchObject({ messages: 2, droppedMessages: 1, droppedEvents: 1 });
  });

  test("past maxQueuedEvents new events are dropped and counted", () => {
    const p = manualPublisher();
    const box = outbox(p.publish, { maxQueuedEvents: 3, maxBatchEvents: 256 });
    for (let i = 0; i < 5; i++) box.push(add(`r${i}`));
    expect(box.counters.droppedEvents).toBe(2);
    expect(box.queued).toBe(3);
    box.close();
  });

  test("a snapshot is numbered parts with consecutive seqs, the last one flagged; resync requests and heartbeats carry no events", async () => {
    const sent: string[] = [];
    const live = Array.from({ length: 600 }, (_, i) => add(`s${i}`));
    const box = outbox(async (s) => void sent.push(s), { snapshot: () => live });
    box.push(add("first"));
    await box.drain();
    box.resync(77n);
    box.requestSnapshot();
    await box.drain();
    const msgs = sent.map((s) => decodeMessage(s)!.message);
    expect(msgs.map((m) => m.kind)).toEqual([
      "events",
      "resync",
      "snapshot",
      "snapshot",
      "snapshot",
    ]);
    const parts = msgs.filter((m) => m.kind === "snapshot");
    expect(parts.map((m) => [m.seq, m.part, m.last, m.events.length])).toEqual([
      [2, 0, false, 256],
      [3, 1, false, 256],
      [4, 2, true, 88],
    ]);
    expect(msgs[1]).toMatchObject({ kind: "resync", target: 77n });
    expect(box.counters.snapshotsSent).toBe(1);
  });

  test("events pushed while a snapshot is being sent follow its last part; an empty snapshot is one last part", async () => {
    const p = manualPublisher();
    const live = Array.from({ length: 300 }, (_, i) => add(`s${i}`));
    const box = outbox(p.publish, { snapshot: () => live });
    box.requestSnapshot();
    expect(p.decoded(0)).toMatchObject({ kind: "snapshot", seq: 1, part: 0, last: false });
    box.push(add("meanwhile"));
    p.sent[0]!.settle(true);
    await until(() => p.sent.length === 2, "part 1");
    expect(p.decoded(1)).toMatchObject({ kind: "snapshot", seq: 2, part: 1, last: true });
    p.sent[1]!.settle(true);
    await until(() => p.sent.length === 3, "the event");
    const ev = p.decoded(2);
    expect(ev.kind === "events" && [ev.seq, ev.events[0]!.requestId]).toEqual([3, "meanwhile"]);
    p.sent[2]!.settle(true);

    const sent: string[] = [];
    const empty = outbox(async (x) => void sent.push(x));
    empty.requestSnapshot();
    await empty.drain();
    expect(sent.map((x) => decodeMessage(x)!.message)).toEqual([
      {
        kind: "snapshot",
        routerId: origin.routerId,
        epoch: origin.epoch,
        seq: 1,
        part: 0,
        last: true,
        events: [],
      },
    ]);
  });
});
