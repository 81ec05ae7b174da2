/**
 * The worker-side transfer agent behind `switchyard transfer`: creates this rank's pools
 * (and its replication group), wraps them in a BlockTransferHandler and serves the HTTP
 * routes of agent-app.ts with Bun.serve. stop() ends the server, then closes the group and
 * the pools, and removes a temp disk file it created; drain() first lets transfers in flight
 * finish (GET /health answers 503 "draining" meanwhile; GET /livez is liveness).
 *
 * @example
 * const agent = await runTransferAgent(["--port", "0", "--disk-blocks", "256"]);
 * // POST http://127.0.0.1:${agent.port}/v1/transfer {"from_pool":"host","to_pool":"disk","blocks":[[0,0]]}
 * await agent.stop();
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requireNativeLibrary } from "./native/library.ts";
import { createTransferApp } from "./agent-app.ts";
import { errorResponse } from "./agent-edge.ts";
import { parseTransferAgentArgs } from "./agent-options.ts";
import { NativeReplicationGroup } from "./group.ts";
import { BlockTransferHandler } from "./handler.ts";
import { NativePool } from "./pools.ts";
import type { PoolKind } from "./types.ts";

export interface TransferAgent {
  readonly port: number;
  /** Refuse new requests (503), let those in flight finish (up to timeoutMs), then stop(). Resolves whether all finished. */
  drain(timeoutMs: number): Promise<boolean>;
  stop(): Promise<void>;
}

/** How long a SIGTERM-ed agent lets transfers in flight finish. */
export const TRANSFER_DRAIN_MS = 30_000;

export interface TransferAgentDeps {
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly log?: (line: string) => void;
}

export async function runTransferAgent(
  argv: string[],
  deps: TransferAgentDeps = {},
): Promise<TransferAgent> {
  const env = deps.env ?? process.env;
  const log = deps.log ?? ((line: string) => console.error(line));
  const opts = parseTransferAgentArgs(argv, env);
  const lib = requireNativeLibrary({ env });

  const pools: Partial<Record<PoolKind, NativePool>> = {};
  let group: NativeReplicationGroup | undefined;
  let tempDir: string | undefined;
  const cleanup = () => {
    group?.close();
    for (const p of Object.values(pools)) p?.close();
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  };
  try {
    const make = (kind: PoolKind, numBlocks: number, diskPath?: string) => {
      if (numBlocks > 0)
        pools[kind] = NativePool.create(lib, {
          kind,
          numBlocks,
          layout: opts.layout,
          backend: opts.backend,
          diskPath,
          directIo: opts.directIo,
        });
    };
    make("device", opts.deviceBlocks);
    make("host", opts.hostBlocks);
    if (opts.diskBlocks > 0) {
      let path = opts.diskPath;
      if (path === undefined) {
        tempDir = mkdtempSync(join(tmpdir(), "switchyard-transfer-"));
        path = join(tempDir, "disk-pool.bin");
      }
      make("disk", opts.diskBlocks, path);
    }
    if (opts.worldSize > 1) {
      group = NativeReplicationGroup.join(lib, {
        name: opts.group!,
        rank: opts.rank,
        worldSize: opts.worldSize,
        timeoutMs: opts.groupTimeoutMs,
      });
    }
  } catch (e) {
    cleanup();
    throw e;
  }

  const handler = new BlockTransferHandler({
    ...pools,
    maxBatchSize: opts.maxBatchSize,
    replication: group,
  });
  let server: ReturnType<typeof Bun.serve> | undefined;
  let draining = false;
  const app = createTransferApp({
    handler,
    pools,
    library: lib,
    adminToken: opts.adminToken,
    peer: (req) => server?.requestIP(req)?.address,
    rank: opts.rank,
    worldSize: opts.worldSize,
  });
  try {
    server = Bun.serve({
      hostname: opts.host,
      port: opts.port,
      fetch: (req) => {
        const path = new URL(req.url).pathname;
        if (req.method === "GET" && path === "/livez") return Response.json({ status: "ok" });
        if (draining && req.method === "GET" && path === "/health")
          return Response.json({ status: "draining" }, { status: 503 });
        if (draining) return errorResponse(503, "draining", "the transfer agent is shutting down");
        return app.fetch(req);
      },
    });
  } catch (e) {
    cleanup();
    throw e;
  }
  const port = server.port ?? opts.port;
  const sizes = (Object.entries(pools) as [PoolKind, NativePool][])
    .map(([k, p]) => `${k} ${p.numBlocks}x${p.blockBytes}B`)
    .join(", ");
  const path = lib.gpuUsable ? "gpu" : "cpu";
  log(
    `switchyard transfer: listening on http://${opts.host}:${port} (${path} path; ${handler.transferMode}; pools: ${sizes || "none"})`,
  );

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await server!.stop(true);
    cleanup();
  };
  return {
    port,
    async drain(timeoutMs) {
      draining = true;
      // Still listening: /health says 503 "draining", new transfers get 503; those in flight finish.
      const end = performance.now() + timeoutMs;
      while (server!.pendingRequests > 0 && performance.now() < end) await Bun.sleep(25);
      const finished = server!.pendingRequests === 0;
      await stop();
      return finished;
    },
    stop,
  };
}
