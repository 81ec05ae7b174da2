/**
 * Throughput of the ZeroMQ KV event subscriber (src/events/zmq/) fed by the python
 * stand-in for vLLM's publisher (test/support/vllm_kv_publisher.py).
 *
 *   bun bench/events/zmq.ts [--batches N] [--json FILE]
 *
 * For each case the publisher sends N pre-encoded KVEventBatch messages as fast as it can
 * (vLLM's format: [topic, seq, msgpack]); the clock runs from the command until the
 * subscriber has delivered the last seq. Reported: messages/s, events/s, blocks/s through
 * the subscriber (receive worker → hand-off → msgpack decode → tokens_hash → onEvents), the
 * publisher's own send rate (when the two are equal the publisher was the limit), replays
 * and losses. `sink=index` applies every event to the precise RadixTree as main.ts would.
 * Also measured alone, on the main thread: decodeVllmBatch over the same payloads (the
 * ceiling of the decode stage). Everything shares the machine's cores (publisher, worker,
 * main thread), so figures are lower bounds of what a router with a remote engine sees.
 *
 * Needs: apt-get install -y libzmq5 python3-zmq python3-msgpack.
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { RouterEvent } from "../../src/core/events.ts";
import { createIndexer } from "../../src/router/kv-index/indexer.ts";
import { startVllmKvSubscriber } from "../../src/runtime/bun/zmq/subscriber.ts";
import { decodeVllmBatch, newVllmDecodeCounters } from "../../src/runtime/bun/zmq/vllm-decode.ts";
import { pythonZmqProblem, VllmPublisherProcess } from "../../test/support/vllm-kv-publisher.ts";

const { values } = parseArgs({
  options: { batches: { type: "string" }, json: { type: "string" } },
});
const N = Number(values.batches ?? 100_000);
const BS = 16;

interface Case {
  name: string;
  eventsPerBatch: number;
  blocksPerEvent: number;
  sink: "none" | "index";
  format: "array" | "map";
  batches: number;
}

const CASES: Case[] = [
  {
    name: "1 event x 1 block",
    eventsPerBatch: 1,
    blocksPerEvent: 1,
    sink: "none",
    format: "array",
    batches: N,
  },
  {
    name: "1 event x 1 block, map form",
    eventsPerBatch: 1,
    blocksPerEvent: 1,
    sink: "none",
    format: "map",
    batches: N,
  },
  {
    name: "8 events x 4 blocks",
    eventsPerBatch: 8,
    blocksPerEvent: 4,
    sink: "none",
    format: "array",
    batches: Math.ceil(N / 4),
  },
  {
    name: "8 events x 4 blocks -> RadixTree",
    eventsPerBatch: 8,
    blocksPerEvent: 4,
    sink: "index",
    format: "array",
    batches: Math.ceil(N / 4),
  },
  {
    name: "1 event x 64 blocks (1024 tokens)",
    eventsPerBatch: 1,
    blocksPerEvent: 64,
    sink: "none",
    format: "array",
    batches: Math.ceil(N / 10),
  },
];

interface Result {
  case: string;
  batches: number;
  seconds: number;
  msgsPerSec: number;
  eventsPerSec: number;
  blocksPerSec: number;
  publisherMsgsPerSec: number;
  payloadBytes: number;
  handoffs: number;
  replayed: number;
  lostBatches: number;
  decodeOnlyMsgsPerSec: number;
}

async function runCase(c: Case): Promise<Result> {
  const pub = await VllmPublisherProcess.start();
  const index = createIndexer("precise");
  let events = 0,
    blocks = 0;
  const sinkNone = (evs: RouterEvent[]) => {
    events += evs.length;
    for (const e of evs) if (e.event.data.type === "stored") blocks += e.event.data.blocks.length;
  };
  const sinkIndex = (evs: RouterEvent[]) => {
    sinkNone(evs);
    for (const e of evs) index.applyEvent(e);
  };
  const sub = await startVllmKvSubscriber({
    endpoint: pub.pub,
    replayEndpoint: pub.replay,
    workerId: 1n,
    blockSize: BS,
    onEvents: c.sink === "index" ? sinkIndex : sinkNone,
  });
  try {
    await pub.waitSubscriber();
    const t0 = performance.now();
    const reply = await pub.bench({
      batches: c.batches,
      eventsPerBatch: c.eventsPerBatch,
      blocksPerEvent: c.blocksPerEvent,
      blockSize: BS,
      format: c.format,
    });
    const deadline = performance.now() + 120_000;
    while (sub.stats().lastSeq < reply.last_seq) {
      if (performance.now() > deadline)
        throw new Error(`subscriber stuck at seq ${sub.stats().lastSeq} of ${reply.last_seq}`);
      await Bun.sleep(1);
    }
    const seconds = (performance.now() - t0) / 1000;
    const s = sub.stats();
    return {
      case: c.name,
      batches: c.batches,
      seconds,
      msgsPerSec: s.batches / seconds,
      eventsPerSec: events / seconds,
      blocksPerSec: blocks / seconds,
      publisherMsgsPerSec: c.batches / reply.seconds,
      payloadBytes: reply.payload_bytes,
      handoffs: s.handoffs,
      replayed: s.replayed,
      lostBatches: s.lostBatches,
      decodeOnlyMsgsPerSec: 0,
    };
  } finally {
    await sub.stop();
    await pub.stop();
  }
}

/** decodeVllmBatch alone over payloads like the case's (built here, msgspec-compatible). */
function decodeOnly(c: Case): number {
  const payloads: Uint8Array[] = [];
  for (let v = 0; v < 64; v++) payloads.push(encodeBatch(c, v));
  const counters = newVllmDecodeCounters();
  const iters = Math.min(c.batches, 50_000);
  let id = 0n;
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) {
    const d = decodeVllmBatch(
      payloads[i & 63]!,
      { workerId: 1n, blockSize: BS, firstEventId: id },
      counters,
    );
    id += BigInt(d.events.length);
  }
  return iters / ((performance.now() - t0) / 1000);
}

/** A positional KVEventBatch like the publisher's bench payloads (same sizes and shapes). */
function encodeBatch(c: Case, v: number): Uint8Array {
  const out: number[] = [];
  const u8 = (b: number) => out.push(b);
  const arr = (n: number) => (n < 16 ? u8(0x90 | n) : (u8(0xdc), u8(n >> 8), u8(n & 0xff)));
  const str = (s: string) => (u8(0xa0 | s.length), [...s].forEach((ch) => u8(ch.charCodeAt(0))));
  const uint = (x: number) => {
    if (x < 128) u8(x);
    else if (x < 256) u8(0xcc), u8(x);
    else if (x < 65536) u8(0xcd), u8(x >> 8), u8(x & 0xff);
    else u8(0xce), u8((x >>> 24) & 0xff), u8((x >>> 16) & 0xff), u8((x >>> 8) & 0xff), u8(x & 0xff);
  };
  const u64 = (x: bigint) => {
    u8(0xcf);
    for (let i = 7; i >= 0; i--) u8(Number((x >> BigInt(8 * i)) & 0xffn));
  };
  arr(3);
  u8(0xcb);
  for (const b of [0x3f, 0xf0, 0, 0, 0, 0, 0, 0]) u8(b);
  arr(c.eventsPerBatch);
  for (let e = 0; e < c.eventsPerBatch; e++) {
    const base = (v * c.eventsPerBatch + e) * c.blocksPerEvent;
    arr(12);
    str("BlockStored");
    arr(c.blocksPerEvent);
    for (let i = 0; i < c.blocksPerEvent; i++)
      u64(((BigInt(base + i) * 0x9e3779b97f4a7c15n) % 2n ** 64n) | (2n ** 63n));
    u8(0xc0);
    arr(c.blocksPerEvent * BS);
    for (let t = base * BS; t < (base + c.blocksPerEvent) * BS; t++) uint(t);
    uint(BS);
    u8(0xc0);
    str("GPU");
    for (let k = 0; k < 5; k++) u8(0xc0);
  }
  u8(0xc0);
  return Uint8Array.from(out);
}

const problem = pythonZmqProblem();
if (problem !== undefined) {
  console.error(problem);
  process.exit(2);
}

const results: Result[] = [];
for (const c of CASES) {
  const r = await runCase(c);
  r.decodeOnlyMsgsPerSec = decodeOnly(c);
  results.push(r);
  const k = (x: number) => `${(x / 1000).toFixed(1)}k`;
  console.log(
    `${c.name.padEnd(36)} ${k(r.msgsPerSec).padStart(7)} msg/s ${k(r.eventsPerSec).padStart(8)} events/s ${k(r.blocksPerSec).padStart(8)} blocks/s` +
      ` | publisher ${k(r.publisherMsgsPerSec)} msg/s, ${r.payloadBytes} B/msg | decode alone ${k(r.decodeOnlyMsgsPerSec)} msg/s` +
      ` | ${r.handoffs} hand-offs, replayed ${r.replayed}, lost ${r.lostBatches}`,
  );
}
if (values.json) writeFileSync(values.json, JSON.stringify(results, null, 2));
