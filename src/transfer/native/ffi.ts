/**
 * The raw bun:ffi table of the native library: one entry per function of
 * ffi/include/switchyard.h, and the header's constants. Nothing else lives here — finding,
 * loading and checking the library is library.ts; safe wrappers are hasher.ts and
 * src/transfer/. Keep this file and the header in step (and bump SY_ABI_VERSION in both).
 *
 * Buffers travel as `buffer` + `buffer_length`: Bun passes the view's pointer and its byte
 * length read from the same object at call time, so the C side always knows the true size.
 */
import { FFIType, type FFIFunction, type Library } from "bun:ffi";

export const SY_ABI_VERSION = 1;

/** Status codes (int32): 0 ok, 1 pending, negative errors. */
export const SY_OK = 0;
export const SY_PENDING = 1;
export const SY_STATUS_NAMES: Readonly<Record<number, string>> = {
  [-1]: "SY_E_INVALID",
  [-2]: "SY_E_HANDLE",
  [-3]: "SY_E_RANGE",
  [-4]: "SY_E_DIRECTION",
  [-5]: "SY_E_LAYOUT",
  [-6]: "SY_E_NOMEM",
  [-7]: "SY_E_IO",
  [-8]: "SY_E_CUDA",
  [-9]: "SY_E_UNAVAILABLE",
  [-10]: "SY_E_TIMEOUT",
  [-11]: "SY_E_BUSY",
  [-12]: "SY_E_COLLECTIVE",
  [-13]: "SY_E_NCCL",
  [-14]: "SY_E_NOT_FOUND",
  [-15]: "SY_E_READ_ONLY",
};

export const SY_POOL_DEVICE = 0;
export const SY_POOL_HOST = 1;
export const SY_POOL_DISK = 2;
export const SY_POOL_SHM = 3;
export const SY_E_NOT_FOUND = -14;
export const SY_IPC_HANDLE_BYTES = 64;

export const SY_BACKEND_AUTO = 0;
export const SY_BACKEND_CPU = 1;
export const SY_BACKEND_CUDA = 2;

export const SY_LAYOUT_FULLY_CONTIGUOUS = 0;
export const SY_LAYOUT_LAYER_SEPARATE = 1;
export const SY_LAYOUT_LAYER_SEPARATE_OUTER = 2;

export const SY_DISK_UNLINK_ON_CLOSE = 1;
export const SY_DISK_NO_DIRECT = 2;

/** sy_layout: six uint32 fields (kind, layers, outer, page, inner, elem bytes). */
export const SY_LAYOUT_FIELDS = 6;
/** sy_pool_info fills this many uint64 values. */
export const SY_POOL_INFO_FIELDS = 12;

export const SY_CAP_CUDART = 1;
export const SY_CAP_GPU = 2;
export const SY_CAP_KERNELS = 4;
export const SY_CAP_NCCL = 8;

export const SY_GROUP_CPU_ONLY = 1;

export const SY_SYMBOLS = {
  sy_abi_version: { args: [], returns: "u32" },
  sy_last_error: { args: [], returns: "cstring" },
  sy_capabilities: { args: [], returns: "u32" },
  sy_runtime_status: { args: [], returns: "cstring" },
  // (tokens, n_tokens, block_size, seed, out, out_cap) -> blocks, or SIZE_MAX on error
  sy_hash_blocks: {
    args: ["buffer", "u64", "u32", "u64", "buffer", "u64"],
    returns: FFIType.u64_fast,
  },
  // (kind, backend, layout, layout_bytes, num_blocks, path, path_len, flags) -> handle | status
  sy_pool_create: {
    args: ["u32", "u32", "buffer", "buffer_length", "u64", "buffer", "buffer_length", "u32"],
    returns: "i32",
  },
  sy_pool_destroy: { args: ["i32"], returns: "i32" },
  sy_pool_info: { args: ["i32", "buffer", "buffer_length"], returns: "i32" },
  sy_pool_write_block: { args: ["i32", "u64", "buffer", "buffer_length"], returns: "i32" },
  sy_pool_read_block: { args: ["i32", "u64", "buffer", "buffer_length"], returns: "i32" },
  // (src, dst, pairs u32[2n], pairs_bytes) -> status | job handle
  sy_transfer: { args: ["i32", "i32", "buffer", "buffer_length"], returns: "i32" },
  sy_transfer_submit: { args: ["i32", "i32", "buffer", "buffer_length"], returns: "i32" },
  sy_job_wait: { args: ["i32", "i64"], returns: "i32" },
  // (name, name_len, rank, world, timeout_ms, flags) -> handle | status
  sy_group_create: {
    args: ["buffer", "buffer_length", "i32", "i32", "i64", "u32"],
    returns: "i32",
  },
  sy_group_destroy: { args: ["i32"], returns: "i32" },
  sy_group_uses_nccl: { args: ["i32"], returns: "i32" },
  sy_group_barrier: { args: ["i32"], returns: "i32" },
  sy_group_bcast: { args: ["i32", "i32", "buffer", "buffer_length"], returns: "i32" },
  sy_group_bcast_submit: { args: ["i32", "i32", "buffer", "buffer_length"], returns: "i32" },
} as const satisfies Record<string, FFIFunction>;

/**
 * Functions added after ABI version 1 without a version bump (no existing signature
 * changed). A library built before them lacks them, so they are bound on their own, and a
 * binding that cannot find them falls back to portable code instead of refusing the library.
 */
export const SY_SEQ_SYMBOLS = {
  // (blocks, n, out, out_cap) -> n, or SIZE_MAX on error; out may be blocks (in place)
  sy_hash_seq: { args: ["buffer", "u64", "buffer", "u64"], returns: FFIType.u64_fast },
} as const satisfies Record<string, FFIFunction>;

/**
 * Shared-memory pools and CUDA IPC (disaggregated prefill/decode), also added after ABI
 * version 1 without a bump: bound on their own; a library without them has no P/D transfers.
 */
export const SY_SHM_SYMBOLS = {
  // (name, name_len, layout, layout_bytes, num_blocks) -> handle | status (the one writer)
  sy_shm_pool_create: {
    args: ["buffer", "buffer_length", "buffer", "buffer_length", "u64"],
    returns: "i32",
  },
  // (name, name_len, layout, layout_bytes) -> handle | status (read-only)
  sy_shm_pool_open: {
    args: ["buffer", "buffer_length", "buffer", "buffer_length"],
    returns: "i32",
  },
  sy_shm_unlink: { args: ["buffer", "buffer_length"], returns: "i32" },
  sy_pool_ipc_handle: { args: ["i32", "buffer", "buffer_length"], returns: "i32" },
  sy_pool_open_ipc: {
    args: ["buffer", "buffer_length", "buffer", "buffer_length", "u64"],
    returns: "i32",
  },
} as const satisfies Record<string, FFIFunction>;
export type SwitchyardShmSymbols = Library<typeof SY_SHM_SYMBOLS>["symbols"];

/** The bound functions, as bun:ffi types them. */
export type SwitchyardSymbols = Library<typeof SY_SYMBOLS>["symbols"];

/** Only the version probe: opened first, so a mismatched library is refused before binding. */
export const SY_VERSION_SYMBOLS = {
  sy_abi_version: { args: [], returns: "u32" },
} as const satisfies Record<string, FFIFunction>;
