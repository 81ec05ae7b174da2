/**
 * Load-sync propagation: how long from router A's addRequest until router B has applied
 * it, over RESP pub/sub and over the Upstash REST path (a polled stream, through the test
 * bridge in front of the same redis-server). Both routers live in this process, so the
 * figures include one shared event loop but no network beyond loopback.
 *   bun bench/sync/latency.ts [--n 2000] [--burst 10000] [--blocks 256]
 * Prints p50/p99/max per transport and setting, a burst throughput, and encode/decode cost.
 */
import { worker } from "../../src/core/ids.ts";
import { LoadTracker } from "../../src/router/books/load-tracker.ts";
import type { ActiveSequenceEvent } from "../../src/router/books/sequence-events.ts";
import { startLoadSync, type LoadSync, type LoadSyncOptions } from "../../src/sync/load-sync.ts";
import { openPubSubTransport } from "../../src/runtime/bun/pubsub-transport.ts";
import { decodeMessage, encodeEvent, encodeEventsMessage } from "../../src/sync/wire.ts";
import { startRedisServer } from "../../test/support/redis-server.ts";
import { startUpstashBridge } from "../../test/support/upstash-bridge.ts";

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}
const N = arg("n", 2000);
const BURST = arg("burst", 10_000);
const BLOCKS = arg("blocks", 256); // a 4k-token prompt at block size 16
const W = worker(1n);

function hashes(i: number, n: number): BigUint64Array {
  const out = new BigUint64Array(n);
  for (let j = 0; j < n; j++)
    out[j] = BigInt.asUintN(
      64,
      BigInt(i) * 0x9e3779b97f4a7c15n + BigInt(j) * 0xbf58476d1ce4e5b9n + 0x123456789abcdefn,
    );
  return out;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface Pair {
  a: LoadTracker;
  b: LoadTracker;
  syncs: LoadSync[];
  /** Resolves when B has applied the add of this request id. */
  seen(requestId: string): Promise<void>;
}

async function pair(
  url: string,
  token: string | undefined,
  extra: Partial<LoadSyncOptions>,
): Promise<Pair> {
  const channel = `bench:load-sync:${crypto.randomUUID()}`;
  const now = () => performance.now();
  const a = new LoadTracker({ blockSize: 16, routerId: 1n });
  const b = new LoadTracker({ blockSize: 16, routerId: 2n });
  a.updateWorkers([W]);
  b.updateWorkers([W]);
  const waiters = new Map<string, () => void>();
  const apply = b.applyRemote.bind(b);
  b.applyRemote = (ev: ActiveSequenceEvent, t: number) => {
    const r = apply(ev, t);
    if (ev.data.type === "add_request") waiters.get(ev.requestId)?.();
    return r;
  };
  const common = { url, token, pubsub: openPubSubTransport, now, channel, ...extra };
  const syncs = [
    await startLoadSync({ ...common, tracker: a, routerId: 1n }),
    await startLoadSync({ ...common, tracker: b, routerId: 2n }),
  ];
  return {
    a,
    b,
    syncs,
    seen: (id) =>
      new Promise<void>((resolve) => waiters.set(id, () => (waiters.delete(id), resolve()))),
  };
}

async function latency(
  label: string,
  url: string,
  token: string | undefined,
  extra: Partial<LoadSyncOptions>,
): Promise<void> {
  const p = await pair(url, token, extra);
  const lat: number[] = [];
  for (let i = 0; i < N + 100; i++) {
    const id = `lat-${i}`;
    const seen = p.seen(id);
    const t0 = performance.now();
    p.a.addRequest(
      { requestId: id, worker: W, seqHashes: hashes(i, 32), isl: 512, overlap: 0 },
      t0,
    );
    await seen;
    if (i >= 100) lat.push(performance.now() - t0); // first 100: warm-up
    p.a.free(id, performance.now());
  }
  lat.sort((x, y) => x - y);
  console.log(
    `${label.padEnd(44)} p50 ${pct(lat, 50).toFixed(3)} ms  p99 ${pct(lat, 99).toFixed(3)} ms  max ${lat[lat.length - 1]!.toFixed(3)} ms  (n=${N})`,
  );
  await Promise.all(p.syncs.map((s) => s.stop()));
}

async function burst(
  label: string,
  url: string,
  token: string | undefined,
  extra: Partial<LoadSyncOptions>,
): Promise<void> {
  const p = await pair(url, token, { maxQueuedEvents: BURST * 2, ...extra });
  const seqs = Array.from({ length: BURST }, (_, i) => hashes(i + 1_000_000, BLOCKS));
  const last = p.seen(`burst-${BURST - 1}`);
  const t0 = performance.now();
  for (let i = 0; i < BURST; i++)
    p.a.addRequest(
      { requestId: `burst-${i}`, worker: W, seqHashes: seqs[i]!, isl: BLOCKS * 16, overlap: 0 },
      t0,
    );
  await last;
  const ms = performance.now() - t0;
  const s = p.syncs[0]!.stats();
  console.log(
    `${label.padEnd(44)} ${BURST} adds × ${BLOCKS} blocks: all applied on B in ${ms.toFixed(0)} ms = ${((BURST / ms) * 1000).toFixed(0)} adds/s; ` +
      `${s.publishedMessages} messages, dropped ${s.droppedEvents} (both trackers' own work included)`,
  );
  await Promise.all(p.syncs.map((s) => s.stop()));
}

function codec(): void {
  const ev: ActiveSequenceEvent = {
    requestId: "req-0123456789",
    worker: W,
    data: {
      type: "add_request",
      tokenSequence: hashes(1, BLOCKS),
      isl: BLOCKS * 16,
      overlap: 0,
      expectedOutputTokens: null,
    },
    routerId: 1n,
    loraName: null,
  };
  const origin = { routerId: 1n, epoch: "e" };
  const reps = 2000;
  for (let i = 0; i < 200; i++) decodeMessage(encodeEventsMessage(origin, 1, [encodeEvent(ev)]));
  let t = performance.now();
  let text = "";
  for (let i = 0; i < reps; i++) text = encodeEvent(ev);
  const enc = ((performance.now() - t) / reps) * 1000;
  const msg = encodeEventsMessage(origin, 1, [text]);
  t = performance.now();
  for (let i = 0; i < reps; i++) decodeMessage(msg);
  const dec = ((performance.now() - t) / reps) * 1000;
  console.log(
    `codec: one add with ${BLOCKS} hashes (${text.length} chars): encode ${enc.toFixed(1)} µs, decode ${dec.toFixed(1)} µs`,
  );
}

/** What the sync hook adds to the request path: add + prefill + free with and without it. */
async function hookCost(url: string): Promise<void> {
  const reps = 200_000;
  const run = (t: LoadTracker, tag: string) => {
    const seqHashes = hashes(7, 4);
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) {
      const id = `${tag}-${i}`;
      t.addRequest({ requestId: id, worker: W, seqHashes, isl: 64, overlap: 0 }, 0);
      t.markPrefillCompleted(id, 0);
      t.free(id, 0);
    }
    return ((performance.now() - t0) / reps) * 1000;
  };
  const bare = new LoadTracker({ blockSize: 16, routerId: 1n });
  bare.updateWorkers([W]);
  run(bare, "warm");
  const without = run(bare, "bare");
  const synced = new LoadTracker({ blockSize: 16, routerId: 1n });
  synced.updateWorkers([W]);
  const sync = await startLoadSync({
    url,
    pubsub: openPubSubTransport,
    tracker: synced,
    routerId: 1n,
    now: () => 0,
    channel: `bench:hook:${crypto.randomUUID()}`,
    maxQueuedEvents: 4 * reps,
  });
  run(synced, "warm");
  const withSync = run(synced, "sync");
  await sync.stop();
  console.log(
    `request path: add+prefill+free ${without.toFixed(2)} µs bare, ${withSync.toFixed(2)} µs with the sync hook (queue only; encoding happens after)`,
  );
}

const redis = await startRedisServer();
const bridge = await startUpstashBridge({ redisPort: redis.port });
try {
  console.log(`bun ${Bun.version}; redis-server on loopback; both routers in one process`);
  codec();
  await hookCost(redis.url);
  await latency("RESP pub/sub, batchMs 1 (default)", redis.url, undefined, {});
  await latency("RESP pub/sub, batchMs 0", redis.url, undefined, { batchMs: 0 });
  await latency("REST stream, pollMs 5 (default), batchMs 1", bridge.url, bridge.token, {});
  await latency("REST stream, pollMs 1, batchMs 0", bridge.url, bridge.token, {
    pollMs: 1,
    batchMs: 0,
  });
  await burst("RESP pub/sub burst", redis.url, undefined, {});
  await burst("REST stream burst", bridge.url, bridge.token, {});
} finally {
  await bridge.stop();
  await redis.stop();
}
