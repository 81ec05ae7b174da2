/**
 * Flags of `switchyard transfer` (the worker-side transfer agent). With no flags it starts
 * small CPU-friendly pools (64 device, 128 host, 128 disk blocks in a temp file) so it can be
 * tried at once. Every bad flag is reported in one error.
 */
import { parseArgs } from "node:util";
import { MAX_BATCH_SIZE_ENV, maxTransferBatchSize } from "./batches.ts";
import type { PoolBackend } from "./pools.ts";
import { LAYOUT_KINDS, type BlockLayout, type LayoutKind } from "./types.ts";

export interface TransferAgentOptions {
  readonly host: string;
  readonly port: number;
  readonly deviceBlocks: number;
  readonly hostBlocks: number;
  readonly diskBlocks: number;
  /** undefined: a file in a fresh temp directory, removed on stop. */
  readonly diskPath: string | undefined;
  readonly directIo: boolean;
  readonly layout: BlockLayout;
  readonly backend: PoolBackend;
  readonly maxBatchSize: number;
  readonly adminToken: string | undefined;
  /** Replicated mode when worldSize > 1. */
  readonly rank: number;
  readonly worldSize: number;
  readonly group: string | undefined;
  readonly groupTimeoutMs: number;
}

export const TRANSFER_AGENT_USAGE = `switchyard transfer [flags]
  --host ADDR              listen address (default 127.0.0.1)
  --port N                 listen port (default 8790; 0 = any free port)
  --device-blocks N        device pool blocks (default 64; 0 = no pool)
  --host-blocks N          host (pinned) pool blocks (default 128; 0 = no pool)
  --disk-blocks N          disk pool blocks (default 128; 0 = no pool)
  --disk-path FILE         disk pool file (default: a temp file, removed on exit)
  --no-direct-io           never use O_DIRECT for the disk pool
  --layout KIND            ${LAYOUT_KINDS.join(" | ")} (default fully-contiguous)
  --num-layers N           layers per block (default 2)
  --outer-dim N            2 for K/V (default 2)
  --block-size N           tokens per block (default 16)
  --inner-dim N            heads x head dim (default 1024)
  --elem-bytes N           bytes per element (default 2)
  --backend B              auto | cpu | cuda (default auto: cuda when a GPU is usable)
  --max-batch-size N       pairs per batch (default $${MAX_BATCH_SIZE_ENV} or 16)
  --admin-token T          bearer token (env SWITCHYARD_ADMIN_TOKEN)
  --world-size N --rank R --group NAME   replicated mode across N local processes
  --group-timeout-ms N     collective timeout (default 30000)`;

export function parseTransferAgentArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): TransferAgentOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        host: { type: "string" },
        port: { type: "string" },
        "device-blocks": { type: "string" },
        "host-blocks": { type: "string" },
        "disk-blocks": { type: "string" },
        "disk-path": { type: "string" },
        "no-direct-io": { type: "boolean" },
        layout: { type: "string" },
        "num-layers": { type: "string" },
        "outer-dim": { type: "string" },
        "block-size": { type: "string" },
        "inner-dim": { type: "string" },
        "elem-bytes": { type: "string" },
        backend: { type: "string" },
        "max-batch-size": { type: "string" },
        "admin-token": { type: "string" },
        rank: { type: "string" },
        "world-size": { type: "string" },
        group: { type: "string" },
        "group-timeout-ms": { type: "string" },
      },
    }));
  } catch (e) {
    throw new Error(`switchyard transfer: ${(e as Error).message}\n${TRANSFER_AGENT_USAGE}`);
  }
  const problems: string[] = [];
  const int = (flag: string, dflt: number, min: number, max: number): number => {
    const raw = values[flag];
    if (raw === undefined) return dflt;
    const n = Number(raw);
    if (typeof raw !== "string" || raw.trim() === "" || !Number.isInteger(n) || n < min || n > max) {
      problems.push(`--${flag} must be an integer in ${min}..${max}, got ${JSON.stringify(raw)}`);
      return dflt;
    }
    return n;
  };
  const str = (flag: string): string | undefined => values[flag] as string | undefined;

  const layoutKind = str("layout") ?? "fully-contiguous";
  if (!LAYOUT_KINDS.includes(layoutKind as LayoutKind)) problems.push(`--layout must be one of ${LAYOUT_KINDS.join(", ")}`);
  const backend = str("backend") ?? "auto";
  if (!["auto", "cpu", "cuda"].includes(backend)) problems.push("--backend must be auto, cpu or cuda");
  const adminToken = str("admin-token") ?? (env.SWITCHYARD_ADMIN_TOKEN || undefined);
  if (adminToken !== undefined && adminToken.length < 8) problems.push("--admin-token must be at least 8 characters");
  const worldSize = int("world-size", 1, 1, 64);
  const rank = int("rank", 0, 0, 63);
  if (rank >= worldSize) problems.push(`--rank ${rank} violates 0 <= rank < world size (${worldSize})`);
  const group = str("group");
  if (worldSize > 1 && !group) problems.push("--group is required when --world-size > 1");
  if (group !== undefined && !/^[A-Za-z0-9._-]{1,100}$/.test(group)) problems.push("--group must be 1..100 characters of [A-Za-z0-9._-]");

  const opts: TransferAgentOptions = {
    host: str("host") ?? "127.0.0.1",
    port: int("port", 8790, 0, 65535),
    deviceBlocks: int("device-blocks", 64, 0, 2 ** 32 - 1),
    hostBlocks: int("host-blocks", 128, 0, 2 ** 32 - 1),
    diskBlocks: int("disk-blocks", 128, 0, 2 ** 32 - 1),
    diskPath: str("disk-path"),
    directIo: values["no-direct-io"] !== true,
    layout: {
      kind: layoutKind as LayoutKind,
      numLayers: int("num-layers", 2, 1, 4096),
      outerDim: int("outer-dim", 2, 1, 16),
      pageSize: int("block-size", 16, 1, 1 << 20),
      innerDim: int("inner-dim", 1024, 1, 1 << 24),
      elemBytes: int("elem-bytes", 2, 1, 16),
    },
    backend: backend as PoolBackend,
    maxBatchSize: int("max-batch-size", maxTransferBatchSize(env), 1, 1 << 20),
    adminToken,
    rank,
    worldSize,
    group,
    groupTimeoutMs: int("group-timeout-ms", 30000, 1, 86_400_000),
  };
  if (problems.length > 0) throw new Error(`switchyard transfer: ${problems.join("; ")}\n${TRANSFER_AGENT_USAGE}`);
  return opts;
}
