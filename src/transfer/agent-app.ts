/**
 * The transfer agent's HTTP routes (Hono). All of them need the admin token when one is set
 * (`Authorization: Bearer <token>`, 401 without it), else a loopback peer — the same rule
 * and error body as the router's admin endpoints.
 *   POST /v1/transfer                    {from_pool, to_pool, blocks: [[from, to], ...]}
 *   GET  /v1/transfer/pools              pools, mode, runtime path (GPU or CPU)
 *   GET  /v1/transfer/pools/:pool/blocks/:index   one block, raw bytes (logical order)
 *   PUT  /v1/transfer/pools/:pool/blocks/:index   write one block (exactly block_bytes)
 * It builds nothing: the handler, pools and library are injected.
 */
import { Hono, type Context } from "hono";
import { agentAdminAuth, errorResponse, type PeerAddress } from "./agent-edge.ts";
import type { NativeLibrary } from "./native/library.ts";
import { HTTP_STATUS_BY_CODE, isTransferError, TransferError } from "./errors.ts";
import type { BlockTransferHandler } from "./handler.ts";
import type { NativePool } from "./pools.ts";
import { parseTransferRequest } from "./request.ts";
import { POOL_KINDS, type PoolKind } from "./types.ts";

export interface TransferAppDeps {
  readonly handler: BlockTransferHandler;
  readonly pools: Readonly<Partial<Record<PoolKind, NativePool>>>;
  readonly library: NativeLibrary;
  readonly adminToken: string | undefined;
  readonly peer: PeerAddress;
  readonly rank: number;
  readonly worldSize: number;
  /** Wall clock for elapsed_ms (injected so tests need not rely on it). */
  readonly now?: () => number;
}

function fail(e: unknown): Response {
  if (isTransferError(e)) return errorResponse(HTTP_STATUS_BY_CODE[e.code], e.code, e.message);
  const message = e instanceof Error ? e.message.split("\n")[0]! : String(e);
  return errorResponse(500, "internal", `internal error: ${message}`);
}

function poolParam(c: Context, deps: TransferAppDeps): NativePool {
  const kind = c.req.param("pool") ?? "";
  if (!POOL_KINDS.includes(kind as PoolKind))
    throw new TransferError("invalid-argument", `unknown pool ${JSON.stringify(kind)}`);
  const pool = deps.pools[kind as PoolKind];
  if (!pool)
    throw new TransferError(
      "pool-not-initialized",
      `the ${kind} pool is not initialized on this agent`,
    );
  return pool;
}

function indexParam(c: Context): number {
  const raw = c.req.param("index") ?? "";
  const n = /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n))
    throw new TransferError(
      "invalid-argument",
      `block index must be a non-negative integer, got ${JSON.stringify(raw)}`,
    );
  return n;
}

export function createTransferApp(deps: TransferAppDeps): Hono {
  const now = deps.now ?? (() => performance.now());
  const app = new Hono();
  const auth = agentAdminAuth(deps.adminToken, deps.peer);
  app.use("/v1/transfer", auth);
  app.use("/v1/transfer/*", auth);

  app.post("/v1/transfer", async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return errorResponse(400, "invalid-argument", "the body is not valid JSON");
    }
    try {
      const request = parseTransferRequest(body);
      const t0 = now();
      const summary = await deps.handler.executeTransfer(request);
      const blockBytes = deps.pools[request.fromPool]?.blockBytes ?? 0;
      return c.json({
        ok: true,
        from_pool: request.fromPool,
        to_pool: request.toPool,
        blocks: summary.blocks,
        batches: summary.batches,
        mode: summary.mode,
        bytes: summary.blocks * blockBytes,
        elapsed_ms: Math.round((now() - t0) * 1000) / 1000,
      });
    } catch (e) {
      return fail(e);
    }
  });

  app.get("/v1/transfer/pools", (c) => {
    const lib = deps.library;
    const pools: Record<string, unknown> = {};
    for (const kind of POOL_KINDS) {
      const p = deps.pools[kind];
      pools[kind] = p
        ? {
            num_blocks: p.numBlocks,
            block_bytes: p.blockBytes,
            backend: p.backend,
            layout: {
              kind: p.layout.kind,
              num_layers: p.layout.numLayers,
              outer_dim: p.layout.outerDim,
              page_size: p.layout.pageSize,
              inner_dim: p.layout.innerDim,
              elem_bytes: p.layout.elemBytes,
            },
            ...(kind === "disk" ? { path: p.diskPath, direct_io: p.directIo } : {}),
          }
        : null;
    }
    return c.json({
      mode: deps.handler.transferMode,
      rank: deps.rank,
      world_size: deps.worldSize,
      max_batch_size: deps.handler.maxBatchSize,
      gpu: lib.gpuUsable,
      runtime_status: lib.runtimeStatus.split("\n"),
      pools,
    });
  });

  app.get("/v1/transfer/pools/:pool/blocks/:index", (c) => {
    try {
      const bytes = poolParam(c, deps).readBlock(indexParam(c));
      return new Response(bytes, { headers: { "content-type": "application/octet-stream" } });
    } catch (e) {
      return fail(e);
    }
  });

  app.put("/v1/transfer/pools/:pool/blocks/:index", async (c) => {
    try {
      const pool = poolParam(c, deps);
      const index = indexParam(c);
      const bytes = new Uint8Array(await c.req.arrayBuffer());
      if (bytes.length !== pool.blockBytes) {
        throw new TransferError(
          "invalid-argument",
          `the body is ${bytes.length} bytes; a block is ${pool.blockBytes}`,
        );
      }
      pool.writeBlock(index, bytes);
      return c.json({ ok: true, bytes: bytes.length });
    } catch (e) {
      return fail(e);
    }
  });

  return app;
}
