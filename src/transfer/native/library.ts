/**
 * Finds, loads and checks the native library. One library (ffi/build/libswitchyard.so)
 * serves the batch hasher and the transfer stack.
 *
 * Lookup order: SWITCHYARD_FFI_LIB (when set, only that path), then ffi/build/ next to this
 * source tree, under the working directory, and next to a compiled binary. Importing this
 * module never throws: `loadNativeLibrary()` returns `{ ok: false, reason: "not-built" }`
 * when there is no library, so callers (the router's hasher) fall back to portable code.
 *
 * @example
 * const r = loadNativeLibrary();
 * const hasher = r.ok ? createNativeBlockHasher(r.library) : portableBatchHasher;
 */
import { dlopen } from "bun:ffi";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  SY_ABI_VERSION,
  SY_CAP_GPU,
  SY_SHM_SYMBOLS,
  SY_SYMBOLS,
  SY_VERSION_SYMBOLS,
  type SwitchyardShmSymbols,
  type SwitchyardSymbols,
} from "./ffi.ts";

export const FFI_LIB_ENV = "SWITCHYARD_FFI_LIB";
export const LIBRARY_FILE = "libswitchyard.so";

export interface NativeLibrary {
  /** Absolute path of the loaded library. */
  readonly path: string;
  /**
   * **UNSAFE**: the raw functions. Wrong handles or sizes are refused by the C side, but
   * prefer the wrappers (hasher.ts, src/transfer/pools.ts), which own their handles.
   */
  readonly unsafeSymbols: SwitchyardSymbols;
  /** **UNSAFE**: shared-memory pools and CUDA IPC; null when the library predates them. */
  readonly unsafeShmSymbols: SwitchyardShmSymbols | null;
  /** SY_CAP_* bit mask: what the run-time probe found (CUDA runtime, GPU, kernels, NCCL). */
  readonly capabilities: number;
  /** True when the GPU path is live (a CUDA device is usable). */
  readonly gpuUsable: boolean;
  /** The probe's report, one line per component, e.g. "cuda device: none (... error 35 ...)". */
  readonly runtimeStatus: string;
  /** The message of the last failed call on this thread. */
  lastError(): string;
}

export type NativeLoadFailure = {
  readonly ok: false;
  /** not-built: no file; abi-mismatch: a library of another ABI; load-failed: dlopen refused it. */
  readonly reason: "not-built" | "abi-mismatch" | "load-failed";
  readonly message: string;
  readonly path?: string;
};
export type NativeLoadResult =
  | { readonly ok: true; readonly library: NativeLibrary }
  | NativeLoadFailure;

export interface LoadOptions {
  /** Use this file instead of searching. */
  readonly path?: string;
  /** Environment to read SWITCHYARD_FFI_LIB from (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Where the library may be, in lookup order (the env override alone when set). */
export function libraryCandidates(
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  const override = env[FFI_LIB_ENV];
  if (override) return [resolve(override)];
  const rel = join("ffi", "build", LIBRARY_FILE);
  const found = [
    join(import.meta.dir, "..", "..", "..", rel),
    join(process.cwd(), rel),
    join(dirname(process.execPath), rel),
  ].map((p) => resolve(p));
  return [...new Set(found)];
}

const cache = new Map<string, NativeLoadResult>();

/** Loads (once per path) and checks the library; never throws. */
export function loadNativeLibrary(opts: LoadOptions = {}): NativeLoadResult {
  const candidates = opts.path ? [resolve(opts.path)] : libraryCandidates(opts.env);
  const path = candidates.find((p) => existsSync(p));
  if (path === undefined) {
    return {
      ok: false,
      reason: "not-built",
      message: `native library not built: none of ${candidates.join(", ")} exists (run \`bun run build:ffi\`, or set ${FFI_LIB_ENV})`,
    };
  }
  let result = cache.get(path);
  if (result === undefined) {
    result = open(path);
    cache.set(path, result);
  }
  return result;
}

/** The library, or an Error saying why there is none (for callers that cannot fall back). */
export function requireNativeLibrary(opts: LoadOptions = {}): NativeLibrary {
  const r = loadNativeLibrary(opts);
  if (!r.ok) throw new Error(r.message);
  return r.library;
}

function open(path: string): NativeLoadResult {
  // Probe the version with a one-symbol table first: a library of another ABI may lack
  // (or have different) symbols, and binding those is exactly what must not happen.
  let version: number;
  try {
    const probe = dlopen(path, SY_VERSION_SYMBOLS);
    version = probe.symbols.sy_abi_version();
    probe.close();
  } catch (e) {
    return {
      ok: false,
      reason: "load-failed",
      path,
      message: `cannot load ${path}: ${(e as Error).message}`,
    };
  }
  if (version !== SY_ABI_VERSION) {
    return {
      ok: false,
      reason: "abi-mismatch",
      path,
      message: `${path} has ABI version ${version}, this build needs ${SY_ABI_VERSION} (rebuild with \`bun run build:ffi\`)`,
    };
  }
  let symbols: SwitchyardSymbols;
  try {
    // Never closed: the library's worker threads live as long as the process.
    symbols = dlopen(path, SY_SYMBOLS).symbols;
  } catch (e) {
    return {
      ok: false,
      reason: "load-failed",
      path,
      message: `cannot bind ${path}: ${(e as Error).message}`,
    };
  }
  let shm: SwitchyardShmSymbols | null = null;
  try {
    shm = dlopen(path, SY_SHM_SYMBOLS).symbols;
  } catch {
    shm = null; // an older build: everything but the P/D hand-off still works
  }
  // The GPU probe (dlopen of libcudart, cudaGetDeviceCount) runs on first use of these
  // getters, so a process that only hashes (the router) never pays for it.
  const library: NativeLibrary = {
    path,
    unsafeSymbols: symbols,
    unsafeShmSymbols: shm,
    get capabilities() {
      return symbols.sy_capabilities();
    },
    get gpuUsable() {
      return (symbols.sy_capabilities() & SY_CAP_GPU) !== 0;
    },
    get runtimeStatus() {
      return String(symbols.sy_runtime_status() ?? "");
    },
    lastError: () => String(symbols.sy_last_error() ?? ""),
  };
  return { ok: true, library };
}
