/**
 * Transfer errors: a closed set of codes, one mapping from the C library's status codes,
 * and (for the agent) one mapping to HTTP statuses.
 */
import { SY_STATUS_NAMES } from "./native/ffi.ts";

export type TransferErrorCode =
  | "invalid-argument" // a bad value: size, enum, layout, index type
  | "closed" // a pool or group handle that is closed (or never existed)
  | "out-of-range" // a block index outside its pool
  | "invalid-direction" // not one of the five directions
  | "layout-mismatch" // the two pools' block geometry differs
  | "pool-not-initialized" // the handler has no pool of that kind
  | "out-of-memory"
  | "io" // disk open / read / write
  | "cuda"
  | "nccl"
  | "unavailable" // the backend asked for cannot run here (no GPU)
  | "timeout" // a collective peer did not arrive
  | "busy"
  | "collective" // ranks disagree, or the group was aborted
  | "unsupported" // e.g. a scheduler decision other than execute
  | "not-found" // a shared-memory segment that does not exist (any more)
  | "read-only" // a write into a pool mapped read-only
  | "internal";

export class TransferError extends Error {
  override readonly name = "TransferError";
  constructor(
    readonly code: TransferErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export function isTransferError(e: unknown): e is TransferError {
  return e instanceof TransferError;
}

const CODE_BY_STATUS: Readonly<Record<number, TransferErrorCode>> = {
  [-1]: "invalid-argument",
  [-2]: "closed",
  [-3]: "out-of-range",
  [-4]: "invalid-direction",
  [-5]: "layout-mismatch",
  [-6]: "out-of-memory",
  [-7]: "io",
  [-8]: "cuda",
  [-9]: "unavailable",
  [-10]: "timeout",
  [-11]: "busy",
  [-12]: "collective",
  [-13]: "nccl",
  [-14]: "not-found",
  [-15]: "read-only",
};

/** The error for a negative status from the C library, with its message. */
export function fromStatus(status: number, message: string, what: string): TransferError {
  const code = CODE_BY_STATUS[status] ?? "internal";
  const name = SY_STATUS_NAMES[status] ?? `status ${status}`;
  return new TransferError(code, `${what}: ${message || name} (${name})`);
}

export const HTTP_STATUS_BY_CODE: Readonly<Record<TransferErrorCode, number>> = {
  "invalid-argument": 400,
  closed: 409,
  "out-of-range": 400,
  "invalid-direction": 400,
  "layout-mismatch": 400,
  "pool-not-initialized": 409,
  "out-of-memory": 507,
  io: 500,
  cuda: 500,
  nccl: 500,
  unavailable: 503,
  timeout: 504,
  busy: 503,
  collective: 500,
  unsupported: 400,
  "not-found": 404,
  "read-only": 400,
  internal: 500,
};
