/**
 * Flags of `switchyard transfer` (the worker-side transfer agent), declared once in
 * TRANSFER_OPTIONS (the table machinery every command shares, src/config/option-table.ts,
 * and its flag scanner): the help text, the defaults and the checks come from it. With no
 * flags it starts small CPU-friendly pools (64 device, 128 host, 128 disk blocks in a temp
 * file) so it can be tried at once. Every bad flag is reported in one error.
 */
import * as v from "valibot";
import {
  listOptions,
  parseOption,
  scanOptions,
  usageRows,
  type OptionDef,
  type TableValues,
} from "../config/option-table.ts";
import { MAX_BATCH_SIZE_ENV, maxTransferBatchSize } from "./batches.ts";
import type { PoolBackend } from "./pools.ts";
import { LAYOUT_KINDS, type BlockLayout } from "./types.ts";

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

/** An integer flag in [min, max]; the message quotes the text as given. */
const int = (min: number, max: number) =>
  v.pipe(
    v.string(),
    v.check(
      (s) => s.trim() !== "" && Number.isInteger(Number(s)) && Number(s) >= min && Number(s) <= max,
      (issue) => `must be an integer in ${min}..${max}, got ${JSON.stringify(issue.input)}`,
    ),
    v.transform(Number),
  );
const row = <const D extends OptionDef>(d: D): D => d;

export const TRANSFER_OPTIONS = {
  host: row({ schema: v.optional(v.string(), "127.0.0.1"), meta: "ADDR", help: "listen address" }),
  port: row({
    schema: v.optional(int(0, 65535), "8790"),
    meta: "N",
    help: "listen port, 0 = any free port",
  }),
  deviceBlocks: row({
    schema: v.optional(int(0, 2 ** 32 - 1), "64"),
    meta: "N",
    help: "device pool blocks, 0 = no pool",
  }),
  hostBlocks: row({
    schema: v.optional(int(0, 2 ** 32 - 1), "128"),
    meta: "N",
    help: "host (pinned) pool blocks, 0 = no pool",
  }),
  diskBlocks: row({
    schema: v.optional(int(0, 2 ** 32 - 1), "128"),
    meta: "N",
    help: "disk pool blocks, 0 = no pool",
  }),
  diskPath: row({
    schema: v.optional(v.string()),
    meta: "FILE",
    help: "disk pool file (default: a temp file, removed on exit)",
    defaultText: false,
  }),
  noDirectIo: row({
    schema: v.optional(
      v.pipe(
        v.picklist(["true", "false"], "takes true or false"),
        v.transform((s) => s === "true"),
      ),
      "false",
    ),
    switch: true,
    help: "never use O_DIRECT for the disk pool",
    defaultText: false,
  }),
  layout: row({
    schema: v.optional(
      v.picklist(LAYOUT_KINDS, `must be one of ${LAYOUT_KINDS.join(", ")}`),
      "fully-contiguous",
    ),
    meta: "KIND",
    help: LAYOUT_KINDS.join(" | "),
  }),
  numLayers: row({ schema: v.optional(int(1, 4096), "2"), meta: "N", help: "layers per block" }),
  outerDim: row({ schema: v.optional(int(1, 16), "2"), meta: "N", help: "2 for K/V" }),
  blockSize: row({
    schema: v.optional(int(1, 1 << 20), "16"),
    meta: "N",
    help: "tokens per block",
  }),
  innerDim: row({
    schema: v.optional(int(1, 1 << 24), "1024"),
    meta: "N",
    help: "heads x head dim",
  }),
  elemBytes: row({ schema: v.optional(int(1, 16), "2"), meta: "N", help: "bytes per element" }),
  backend: row({
    schema: v.optional(v.picklist(["auto", "cpu", "cuda"], "must be auto, cpu or cuda"), "auto"),
    meta: "B",
    help: "auto | cpu | cuda",
    defaultText: "auto: cuda when a GPU is usable",
  }),
  // Its default is the environment's (Dynamo's variable), read where the options are resolved.
  maxBatchSize: row({
    schema: v.optional(int(1, 1 << 20)),
    meta: "N",
    help: "pairs per batch",
    defaultText: `$${MAX_BATCH_SIZE_ENV} or 16`,
  }),
  adminToken: row({
    schema: v.optional(v.pipe(v.string(), v.minLength(8, "must be at least 8 characters"))),
    meta: "T",
    help: "bearer token (env SWITCHYARD_ADMIN_TOKEN)",
  }),
  worldSize: row({
    schema: v.optional(int(1, 64), "1"),
    meta: "N",
    help: "replicated mode across N local processes (with --rank and --group)",
  }),
  rank: row({
    schema: v.optional(int(0, 63), "0"),
    meta: "R",
    help: "this process's rank in the replicated group",
  }),
  group: row({
    schema: v.optional(
      v.pipe(
        v.string(),
        v.regex(/^[A-Za-z0-9._-]{1,100}$/, "must be 1..100 characters of [A-Za-z0-9._-]"),
      ),
    ),
    meta: "NAME",
    help: "the replicated group's name (needed when --world-size > 1)",
  }),
  groupTimeoutMs: row({
    schema: v.optional(int(1, 86_400_000), "30000"),
    meta: "N",
    help: "collective timeout",
  }),
} as const;

const OPTION_LIST = listOptions<OptionDef>(TRANSFER_OPTIONS);

export const TRANSFER_AGENT_USAGE = [
  "switchyard transfer [flags]",
  ...usageRows(OPTION_LIST, 24),
].join("\n");

export function parseTransferAgentArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): TransferAgentOptions {
  const scanned = scanOptions(OPTION_LIST, argv);
  const problems = [...scanned.problems];
  const values: Record<string, unknown> = {};
  for (const o of OPTION_LIST) {
    const key = o.path[0]!;
    // The admin token may come from the environment, as the router's does.
    const raw =
      scanned.values.get(o) ??
      (key === "adminToken" ? env.SWITCHYARD_ADMIN_TOKEN || undefined : undefined);
    const parsed = parseOption(o.def, raw);
    if (parsed.ok) values[key] = parsed.value;
    else {
      problems.push(`${o.flag} ${parsed.message}`);
      // Go on with the default, so the checks between flags below still run.
      const fallback = parseOption(o.def, undefined);
      values[key] = fallback.ok ? fallback.value : undefined;
    }
  }
  const t = values as TableValues<typeof TRANSFER_OPTIONS>;
  if (t.rank >= t.worldSize)
    problems.push(`--rank ${t.rank} violates 0 <= rank < world size (${t.worldSize})`);
  if (t.worldSize > 1 && !t.group) problems.push("--group is required when --world-size > 1");

  const opts: TransferAgentOptions = {
    host: t.host,
    port: t.port,
    deviceBlocks: t.deviceBlocks,
    hostBlocks: t.hostBlocks,
    diskBlocks: t.diskBlocks,
    diskPath: t.diskPath,
    directIo: !t.noDirectIo,
    layout: {
      kind: t.layout,
      numLayers: t.numLayers,
      outerDim: t.outerDim,
      pageSize: t.blockSize,
      innerDim: t.innerDim,
      elemBytes: t.elemBytes,
    },
    backend: t.backend,
    maxBatchSize: t.maxBatchSize ?? maxTransferBatchSize(env),
    adminToken: t.adminToken,
    rank: t.rank,
    worldSize: t.worldSize,
    group: t.group,
    groupTimeoutMs: t.groupTimeoutMs,
  };
  if (problems.length > 0)
    throw new Error(`switchyard transfer: ${problems.join("; ")}\n${TRANSFER_AGENT_USAGE}`);
  return opts;
}
