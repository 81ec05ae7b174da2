import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { computeBlockHashes } from "../../../src/core/block-hash.ts";
import { isRouterError } from "../../../src/core/errors.ts";
import { engineBlockHashes } from "../../../src/mocker/engine-hash.ts";
import { MockEngine } from "../../../src/mocker/engine.ts";
import { fillBlock } from "../../../src/mocker/kv-content.ts";
import { handoffLayout, KvHandoff } from "../../../src/mocker/kv-handoff.ts";
import { resolveMockerOptions } from "../../../src/mocker/options.ts";
import { PeerKv } from "../../../src/mocker/peer-pull.ts";
import { parseRemoteKvSource, peerRoutes } from "../../../src/mocker/peer-routes.ts";
import { NativePool } from "../../../src/transfer/pools.ts";
import { nativeLibrary } from "../transfer/native/native-lib.ts";
import { VirtualClock } from "./virtual-clock.ts";

const lib = nativeLibrary();
const BYTES = 4096;
const config = resolveMockerOptions({
  blockSize: 4,
  kvBlocks: 64,
  kvBlockBytes: BYTES,
  prefillUsPerToken: 0,
  prefillOverheadMs: 0,
  kvPeerGbps: 1e6,
  kvPullDeadlineMs: 300,
});
const tokens = Uint32Array.from({ length: 26 }, (_, i) => 100 + i); // 6 full blocks
const hashes = engineBlockHashes(computeBlockHashes(tokens, 4, {}));
const handoffs: KvHandoff[] = [];
const lines: string[] = [];
afterEach(() => {
  for (const h of handoffs.splice(0)) h.stop();
});

function side(fetchFn: typeof fetch = fetch) {
  const clock = new VirtualClock();
  const engine = new MockEngine({ config, workerId: 9n, clock });
  let h: KvHandoff | null = null;
  const peer = new PeerKv({
    engine,
    handoff: () => {
      if (h === null)
        handoffs.push(
          (h = new KvHandoff({
            lib,
            workerIdHex: "9",
            blockBytes: BYTES,
            poolBlocks: 16,
            leaseMs: 60_000,
            log: (l) => lines.push(l),
          })),
        );
      return h;
    },
    config,
    fetch: fetchFn,
    log: (l) => lines.push(l),
  });
  return { clock, engine, peer };
}

/** A fetch that serves the peer's export route in process. */
const served = (peer: PeerKv): typeof fetch => {
  const route = peerRoutes(peer).routes[0]!;
  return (async (_url: string, init: RequestInit) =>
    route.handle({
      req: {
        raw: new Request("http://peer/v1/kv/p2p/export", {
          method: "POST",
          body: init.body as string,
        }),
      },
    } as never)) as unknown as typeof fetch;
};

async function warm(s: ReturnType<typeof side>) {
  const done = s.engine.generate(
    { tokens, maxTokens: 1, dpRank: 0 },
    { start: () => {}, token: () => {} },
  );
  await s.clock.run();
  await done;
}

const src = (id: string) => ({ kvRequestId: id, host: "127.0.0.1", port: 1 });

describe("PeerKv", () => {
  test("a pull brings the blocks the puller lacks from a peer's cache, checked; the segment is gone", async () => {
    const peer = side();
    await warm(peer);
    const puller = side(served(peer.peer));
    const got = await puller.peer.importer(src("u-1"))(hashes, 2, 6);
    expect(got).toEqual({ blocks: 4, bytes: 4 * BYTES });
    expect(puller.peer.stats).toMatchObject({
      pulls: 1,
      pulledBlocks: 4,
      pullFailures: 0,
      mismatchedBlocks: 0,
    });
    expect(peer.peer.stats).toMatchObject({ exports: 1, exportedBlocks: 4 });
    expect(existsSync("/dev/shm/sy-p2p-u-1")).toBe(false);
  });

  test("a peer's exports share its link: a second export at the same instant is delivered after the first", async () => {
    const peer = side();
    await warm(peer);
    const signal = new AbortController().signal;
    const a = await peer.peer.export("w-1", hashes, signal);
    const b = await peer.peer.export("w-2", hashes, signal);
    expect(a.blocks).toBe(6);
    expect(a.wire_ms!).toBeGreaterThan(0);
    expect(b.wire_ms! / a.wire_ms!).toBeCloseTo(2, 6);
    handoffs.at(-1)!.discard("sy-p2p-w-1");
    handoffs.at(-1)!.discard("sy-p2p-w-2");
    expect(existsSync("/dev/shm/sy-p2p-w-2")).toBe(false);
  });

  test("a peer that holds nothing: 0 blocks, no segment, not a failure", async () => {
    const peer = side();
    const puller = side(served(peer.peer));
    expect(await puller.peer.importer(src("u-2"))(hashes, 0, 6)).toEqual({ blocks: 0, bytes: 0 });
    expect(puller.peer.stats.pullFailures).toBe(0);
  });

  test("a peer answering an error, or naming another segment: 0 blocks, a failure, nothing left", async () => {
    const err = side((async () => new Response("{}", { status: 500 })) as unknown as typeof fetch);
    expect(await err.peer.importer(src("u-3"))(hashes, 0, 6)).toEqual({ blocks: 0, bytes: 0 });
    expect(err.peer.stats.pullFailures).toBe(1);
    const other = side((async () =>
      Response.json({ segment: "sy-p2p-someone-else", blocks: 6 })) as unknown as typeof fetch);
    expect(await other.peer.importer(src("u-4"))(hashes, 0, 6)).toEqual({ blocks: 0, bytes: 0 });
    expect(lines.some((l) => l.includes("sy-p2p-someone-else"))).toBe(true);
  });

  test("a peer that never answers: the deadline gives 0 blocks (a timeout), and the segment it may have made is removed", async () => {
    const hang = side(((_u: string, init: RequestInit) => {
      // The peer made the segment and then hung: the puller knows its name and removes it.
      const w = NativePool.createShared(lib, {
        name: "sy-p2p-u-5",
        numBlocks: 1,
        layout: handoffLayout(BYTES),
      });
      w.close();
      return new Promise((_, reject) =>
        init.signal!.addEventListener("abort", () => reject(init.signal!.reason)),
      );
    }) as unknown as typeof fetch);
    expect(await hang.peer.importer(src("u-5"))(hashes, 0, 6)).toEqual({ blocks: 0, bytes: 0 });
    expect(hang.peer.stats).toMatchObject({ pullTimeouts: 1, pullFailures: 1 });
    expect(existsSync("/dev/shm/sy-p2p-u-5")).toBe(false);
  });

  test("a segment with a wrong block: the blocks before it count, the mismatch is counted", async () => {
    const bad = side((async () => {
      const w = NativePool.createShared(lib, {
        name: "sy-p2p-u-6",
        numBlocks: 4,
        layout: handoffLayout(BYTES),
      });
      const buf = new Uint8Array(BYTES);
      for (let k = 0; k < 4; k++) {
        fillBlock(hashes[2 + k]!, buf);
        if (k === 1) buf[7]! ^= 1;
        w.writeBlock(k, buf);
      }
      w.close();
      return Response.json({ segment: "sy-p2p-u-6", blocks: 4 });
    }) as unknown as typeof fetch);
    expect(await bad.peer.importer(src("u-6"))(hashes, 2, 6)).toEqual({ blocks: 1, bytes: BYTES });
    expect(bad.peer.stats).toMatchObject({ pulledBlocks: 1, mismatchedBlocks: 3, pullFailures: 1 });
    expect(existsSync("/dev/shm/sy-p2p-u-6")).toBe(false);
  });
});

describe("parseRemoteKvSource (llm-d's kv_transfer_params.remote_kv_source)", () => {
  test("absent is null; present is read", () => {
    expect(parseRemoteKvSource({})).toBeNull();
    expect(parseRemoteKvSource({ kv_transfer_params: { do_remote_decode: true } })).toBeNull();
    expect(
      parseRemoteKvSource({
        kv_transfer_params: {
          remote_kv_source: {
            kv_request_id: "3f0c-aa",
            remote_host: "10.0.0.7",
            remote_port: 7777,
          },
        },
      }),
    ).toEqual({
      kvRequestId: "3f0c-aa",
      host: "10.0.0.7",
      port: 7777,
    });
  });

  test("bad fields are a 400 naming the field", () => {
    const cases: [unknown, string][] = [
      ["x", "remote_kv_source: must be an object"],
      [{ kv_request_id: "a/b", remote_host: "h", remote_port: 1 }, "kv_request_id"],
      [{ kv_request_id: "a", remote_host: "h/x", remote_port: 1 }, "remote_host"],
      [{ kv_request_id: "a", remote_host: "h", remote_port: 70000 }, "remote_port"],
    ];
    for (const [v, field] of cases) {
      let err: unknown;
      try {
        parseRemoteKvSource({ kv_transfer_params: { remote_kv_source: v } });
      } catch (e) {
        err = e;
      }
      expect(isRouterError(err)).toBe(true);
      expect((err as Error).message).toContain(field);
    }
  });
});
