/**
 * BlockTransferRequest on the wire (valibot): the leader's JSON (serde names:
 * `from_pool: "Device" | "Host" | "Disk"`, `blocks: [[from, to], ...]`, optional
 * `connector_req`) and the agent's HTTP body (the same, pool names in any case). Parsing
 * yields the typed request or a TransferError("invalid-argument") naming the bad field.
 * Strict: a pair is exactly [from, to] and an unknown field is refused by name, never
 * ignored ([a, b, c] was taken as [a, b], and a misspelt field silently meant its default).
 */
import * as v from "valibot";
import { TransferError } from "./errors.ts";
import type { BlockTransferRequest, LeaderTransferRequest, PoolKind } from "./types.ts";

/** Larger requests are refused outright: they are a mistake, not a workload. */
export const MAX_BLOCKS_PER_REQUEST = 1 << 20;

const PoolName = v.pipe(
  v.string(),
  v.transform((s) => s.toLowerCase()),
  v.picklist(["device", "host", "disk"], "must be one of device, host, disk"),
);

const BlockIndex = v.pipe(
  v.number(),
  v.integer("must be an integer"),
  v.minValue(0, "must be >= 0"),
  v.maxValue(0xffff_ffff, "must fit in uint32"),
);

const LeaderRequestSchema = v.strictObject(
  {
    request_id: v.string(),
    uuid: v.string(),
    requirement: v.optional(v.unknown()),
    request_type: v.optional(v.unknown()),
  },
  "unknown field (accepted: request_id, uuid, requirement, request_type)",
);

export const TransferRequestSchema = v.strictObject(
  {
    from_pool: PoolName,
    to_pool: PoolName,
    blocks: v.pipe(
      v.array(
        v.strictTuple(
          [BlockIndex, BlockIndex],
          "must be a [from, to] pair (exactly two block indexes)",
        ),
        "must be an array of [from, to] pairs",
      ),
      v.maxLength(MAX_BLOCKS_PER_REQUEST, `must hold at most ${MAX_BLOCKS_PER_REQUEST} pairs`),
    ),
    connector_req: v.optional(v.nullable(LeaderRequestSchema)),
  },
  "unknown field (accepted: from_pool, to_pool, blocks, connector_req)",
);

export type TransferRequestWire = v.InferInput<typeof TransferRequestSchema>;

/** A parsed JSON value -> request, or TransferError naming the first bad field. */
export function parseTransferRequest(value: unknown): BlockTransferRequest {
  const r = v.safeParse(TransferRequestSchema, value);
  if (!r.success) {
    const issue = r.issues[0];
    const path = v.getDotPath(issue) ?? "body";
    throw new TransferError(
      "invalid-argument",
      `invalid transfer request: ${path} ${issue.message}`,
    );
  }
  const o = r.output;
  const c = o.connector_req;
  const connectorReq: LeaderTransferRequest | undefined = c
    ? {
        requestId: c.request_id,
        uuid: c.uuid,
        requirement: c.requirement,
        requestType: c.request_type,
      }
    : undefined;
  return {
    fromPool: o.from_pool as PoolKind,
    toPool: o.to_pool as PoolKind,
    blocks: o.blocks,
    ...(connectorReq ? { connectorReq } : {}),
  };
}

/** The leader's JSON bytes -> request. */
export function parseWireRequest(data: Uint8Array): BlockTransferRequest {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(data));
  } catch (e) {
    throw new TransferError(
      "invalid-argument",
      `transfer request is not JSON: ${(e as Error).message}`,
    );
  }
  return parseTransferRequest(value);
}
