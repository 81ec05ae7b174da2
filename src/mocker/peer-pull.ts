/**
 * Peer pulls, following llm-d's P2P source contract: the router (llm-d's p2p-source-producer)
 * names the engine holding the most of a prompt's prefix in the `x-kv-cache-source-host-port`
 * header, and its routing sidecar rewrites the request the chosen engine gets to carry
 * `kv_transfer_params.remote_kv_source = {kv_request_id, remote_host, remote_port}`
 * (llm-d/llm-d-router pkg/sidecar/proxy/connector_p2p.go @0545789098a6, p2pSourceParams and
 * decodeWithP2PSource; the field names from its proxy's constants). As in vLLM's
 * OffloadingConnector P2P tier, no block list travels in the request: the puller derives the
 * prompt's block hashes itself (both engines share block size and hash seed) and asks the peer
 * for those.
 *
 * The transport is this project's, as the P/D hand-off's (kv-handoff.ts): the puller POSTs the
 * hashes it lacks to `http://remote_host:remote_port/v1/kv/p2p/export`; the peer writes the
 * leading ones it holds (GPU cache or host tier) into shared-memory segment
 * `sy-p2p-<kv_request_id>` and answers its name; the puller waits the modelled wire time, copies
 * host -> device with the block handler, checks every block and removes the segment. The
 * peer's exports share its one link: it answers when its link delivers this one (`wire_ms`).
 *
 * Nothing is left behind: the puller removes the segment whatever happens (it knows the name
 * before the peer answers, so a peer killed mid-export leaves nothing either); a puller killed
 * mid-pull leaves it to the peer's lease (--kv-lease-ms). A pull that fails or passes
 * --kv-pull-deadline-ms gives 0 blocks: the engine computes the prefix, the request succeeds.
 */
import type { ImportedKv, MockEngine } from "./engine.ts";
import { fillBlock } from "./kv-content.ts";
import { type KvHandoff, peerSegmentName } from "./kv-handoff.ts";
import type { MockerConfig } from "./options.ts";
import { tierLoadMs } from "./timing.ts";

/** Where to pull from: `kv_transfer_params.remote_kv_source`. */
export interface RemoteKvSource {
  readonly kvRequestId: string;
  readonly host: string;
  readonly port: number;
}

export interface PeerStats {
  /** Peer side: exports answered, blocks written, exports waiting for a rank. */
  exports: number;
  exportedBlocks: number;
  exportsWaiting: number;
  /** Puller side. */
  pulls: number;
  pulledBlocks: number;
  /** Pulls that gave nothing or less than the peer offered (peer down, bad bytes, deadline). */
  pullFailures: number;
  pullTimeouts: number;
  /** Pulled blocks whose bytes were not their tokens' content (must stay 0). */
  mismatchedBlocks: number;
}

export interface PeerKvOptions {
  readonly engine: MockEngine;
  /** The native side, made on first use: an engine that never pulls or serves never loads the library. */
  readonly handoff: () => KvHandoff;
  readonly config: Pick<
    MockerConfig,
    "blockSize" | "kvPeerGbps" | "kvBytesPerToken" | "speedup" | "kvPullDeadlineMs"
  >;
  readonly fetch: typeof fetch;
  readonly log: (line: string) => void;
}

/** The most block hashes one export may name (a 1M-token prompt at 16 tokens per block). */
export const MAX_EXPORT_BLOCKS = 65_536;

export class PeerKv {
  readonly stats: PeerStats = {
    exports: 0,
    exportedBlocks: 0,
    exportsWaiting: 0,
    pulls: 0,
    pulledBlocks: 0,
    pullFailures: 0,
    pullTimeouts: 0,
    mismatchedBlocks: 0,
  };
  readonly #o: PeerKvOptions;
  /**
   * When this engine's peer link is free again (engine clock, ms): the exports it serves share
   * one NIC, so a burst of pulls from it queues on the wire instead of each getting the link alone.
   */
  #linkFreeAt = -Infinity;

  constructor(o: PeerKvOptions) {
    this.#o = o;
  }

  /**
   * Peer side: the leading blocks of `hashes` this engine holds on one rank (its GPU cache, then
   * its host tier), written to `sy-p2p-<kvRequestId>`. Null segment when it holds none.
   */
  async export(
    kvRequestId: string,
    hashes: BigUint64Array,
    signal: AbortSignal,
  ): Promise<{ segment: string | null; blocks: number; wire_ms?: number }> {
    const name = peerSegmentName(kvRequestId);
    if (name === null) throw new RangeError("kv_request_id: 1 to 64 letters, digits or '-'");
    const eng = this.#o.engine;
    const held = (r: number) => {
      const rank = eng.ranks[r]!;
      let n = 0;
      while (
        n < hashes.length &&
        (rank.kv.cache.has(hashes[n]!) || rank.tiers?.host.has(hashes[n]!) === true)
      )
        n++;
      return n;
    };
    let best = 0;
    for (let r = 1; r < eng.ranks.length; r++) if (held(r) > held(best)) best = r;
    if (held(best) === 0) return { segment: null, blocks: 0 };
    const rank = eng.ranks[best]!;
    const write = () => {
      const n = held(best); // again: the cache may have changed while waiting
      if (n === 0) return { segment: null, blocks: 0 };
      const exported = this.#o.handoff().exportNamed(name, n, (i, buf) => {
        if (!rank.kv.cache.has(hashes[i]!) && rank.tiers?.readHeld(hashes[i]!, buf)) return;
        fillBlock(hashes[i]!, buf); // a GPU block's content (what the device pool holds)
      });
      if (signal.aborted) {
        this.#o.handoff().discard(name); // the puller left: nobody will fetch it
        return { segment: null, blocks: 0 };
      }
      this.stats.exports++;
      this.stats.exportedBlocks += n;
      // The bytes leave once the link has sent what earlier exports put on it.
      const c = this.#o.config;
      const now = eng.now();
      const start = Math.max(now, this.#linkFreeAt);
      this.#linkFreeAt = start + tierLoadMs(n * c.blockSize, c.kvPeerGbps, c);
      return { segment: exported.segment, blocks: n, wire_ms: this.#linkFreeAt - now };
    };
    // The host tier is read on its lane (never mid-copy); on the FIFO scheduler the export
    // also waits for the rank's prefill lane, as a transfer competes with its compute.
    const fifo = rank.steps === undefined;
    this.stats.exportsWaiting++;
    try {
      if (fifo) await rank.prefill.acquire(signal);
    } finally {
      this.stats.exportsWaiting--;
    }
    try {
      return rank.tiers !== null ? await rank.tiers.exclusive(write) : write();
    } finally {
      if (fifo) rank.prefill.release();
    }
  }

  /** Puller side: the engine's importKv for a request naming `src`. Never rejects. */
  importer(
    src: RemoteKvSource,
  ): (hashes: BigUint64Array, from: number, to: number) => Promise<ImportedKv> {
    return async (hashes, from, to) => {
      const name = peerSegmentName(src.kvRequestId);
      if (name === null) return { blocks: 0, bytes: 0 };
      const c = this.#o.config;
      const handoff = this.#o.handoff();
      const deadline = AbortSignal.timeout(c.kvPullDeadlineMs);
      this.stats.pulls++;
      try {
        const host =
          src.host.includes(":") && !src.host.startsWith("[") ? `[${src.host}]` : src.host;
        const res = await this.#o.fetch(`http://${host}:${src.port}/v1/kv/p2p/export`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            kv_request_id: src.kvRequestId,
            block_hashes: Array.from(hashes.subarray(from, to), String),
          }),
          signal: deadline,
        });
        if (!res.ok) throw new Error(`peer ${host}:${src.port} answered ${res.status}`);
        const ans = (await res.json()) as {
          segment?: unknown;
          blocks?: unknown;
          wire_ms?: unknown;
        };
        const blocks =
          typeof ans.blocks === "number" && Number.isInteger(ans.blocks)
            ? Math.min(ans.blocks, to - from)
            : 0;
        if (blocks <= 0) return { blocks: 0, bytes: 0 };
        if (ans.segment !== name)
          throw new Error(
            `peer answered segment ${JSON.stringify(ans.segment)?.slice(0, 80)}, not ${name}`,
          );
        // The wire time of the modelled model's KV, then the bytes land: at this engine's link
        // speed, or later when the peer's shared link delivers them later (its `wire_ms`).
        const own = tierLoadMs(blocks * c.blockSize, c.kvPeerGbps, c);
        const wire =
          typeof ans.wire_ms === "number" && Number.isFinite(ans.wire_ms) && ans.wire_ms >= 0
            ? Math.max(own, Math.min(ans.wire_ms, c.kvPullDeadlineMs))
            : own;
        await sleepUnlessAborted(wire, deadline);
        const wrongBefore = handoff.stats.mismatchedBlocks;
        const got = await handoff.importBlocks(name, hashes, from, from + blocks, from);
        this.stats.mismatchedBlocks += handoff.stats.mismatchedBlocks - wrongBefore;
        if (got.blocks < blocks) this.stats.pullFailures++;
        this.stats.pulledBlocks += got.blocks;
        return { blocks: got.blocks, bytes: got.bytes };
      } catch (e) {
        if (deadline.aborted) this.stats.pullTimeouts++;
        this.stats.pullFailures++;
        this.#o.log(
          `kv pull from ${src.host}:${src.port}: ${deadline.aborted ? `no blocks within ${c.kvPullDeadlineMs} ms` : e instanceof Error ? e.message : String(e)}; computing the prefix here`,
        );
        return { blocks: 0, bytes: 0 };
      } finally {
        handoff.discard(name);
      }
    };
  }
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  if (ms < 1) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
