/**
 * NativePool: one pool of the native library (device, host or disk), owning its handle.
 * close() (or `using`) destroys it; a transfer already running finishes first (the C side
 * holds a reference). Calls on a closed pool throw TransferError("closed").
 *
 * @example
 * using host = NativePool.create(lib, { kind: "host", numBlocks: 128, layout });
 * using disk = NativePool.create(lib, { kind: "disk", numBlocks: 128, layout, diskPath: "/tmp/kv.bin" });
 * host.writeBlock(3, bytes);
 * await host.copyTo(disk, Uint32Array.of(3, 7)); // host block 3 -> disk slot 7
 */
import {
  SY_BACKEND_AUTO,
  SY_BACKEND_CPU,
  SY_BACKEND_CUDA,
  SY_DISK_NO_DIRECT,
  SY_DISK_UNLINK_ON_CLOSE,
  SY_E_NOT_FOUND,
  SY_IPC_HANDLE_BYTES,
  SY_LAYOUT_FIELDS,
  SY_POOL_DEVICE,
  SY_POOL_DISK,
  SY_POOL_HOST,
  SY_POOL_INFO_FIELDS,
} from "./native/ffi.ts";
import type { NativeLibrary } from "./native/library.ts";
import { fromStatus, TransferError } from "./errors.ts";
import { awaitJob } from "./jobs.ts";
import { LAYOUT_KINDS, type BlockLayout, type PoolKind, type TransferPool } from "./types.ts";

export type PoolBackend = "auto" | "cpu" | "cuda";

export interface PoolSpec {
  readonly kind: PoolKind;
  readonly numBlocks: number;
  readonly layout: BlockLayout;
  /** auto (default): CUDA memory when a GPU is usable, else the CPU path. */
  readonly backend?: PoolBackend;
  /** Disk pools: the slot file (created or reused). */
  readonly diskPath?: string;
  /** Disk pools: delete the file on close (default false). */
  readonly unlinkOnClose?: boolean;
  /** Disk pools: allow O_DIRECT (default true; used only when the filesystem accepts it). */
  readonly directIo?: boolean;
}

const KIND_CODE: Readonly<Record<PoolKind, number>> = {
  device: SY_POOL_DEVICE,
  host: SY_POOL_HOST,
  disk: SY_POOL_DISK,
};
const BACKEND_CODE: Readonly<Record<PoolBackend, number>> = {
  auto: SY_BACKEND_AUTO,
  cpu: SY_BACKEND_CPU,
  cuda: SY_BACKEND_CUDA,
};
const EMPTY = new Uint8Array(0);

/** sy_layout as six uint32 fields; refuses a field that is not a uint32. */
function layoutBytes(l: BlockLayout): Uint32Array {
  const layout = new Uint32Array(SY_LAYOUT_FIELDS);
  const kindIndex = LAYOUT_KINDS.indexOf(l.kind);
  if (kindIndex < 0)
    throw new TransferError("invalid-argument", `unknown layout kind ${String(l.kind)}`);
  const fields = [kindIndex, l.numLayers, l.outerDim, l.pageSize, l.innerDim, l.elemBytes];
  for (const [i, f] of fields.entries()) {
    if (!Number.isInteger(f) || f < 0 || f > 0xffff_ffff)
      throw new TransferError("invalid-argument", `layout field ${i} is not a uint32: ${f}`);
    layout[i] = f;
  }
  return layout;
}

function shmSymbols(lib: NativeLibrary) {
  const shm = lib.unsafeShmSymbols;
  if (shm === null)
    throw new TransferError(
      "unavailable",
      `${lib.path} predates shared-memory pools (rebuild with \`bun run build:ffi\`)`,
    );
  return shm;
}
const utf8 = new TextEncoder();

export class NativePool implements TransferPool {
  readonly #lib: NativeLibrary;
  #handle: number | null;
  readonly kind: PoolKind;
  readonly numBlocks: number;
  readonly blockBytes: number;
  readonly layout: BlockLayout;
  /** The memory actually used: "cuda" (cudaMalloc / cudaHostAlloc) or "cpu". */
  readonly backend: "cpu" | "cuda";
  /** Disk pools: whether O_DIRECT is in use. */
  readonly directIo: boolean;
  readonly diskPath: string | undefined;
  /** Shared-memory pools: the segment's name (a host pool for transfers). */
  readonly sharedName: string | undefined;
  /** A shared-memory reader: never written, never a transfer destination. */
  readonly readOnly: boolean;

  private constructor(
    lib: NativeLibrary,
    handle: number,
    spec: PoolSpec,
    info: BigUint64Array,
    shared?: { name: string; readOnly: boolean },
  ) {
    this.#lib = lib;
    this.#handle = handle;
    this.kind = spec.kind;
    this.numBlocks = Number(info[2]);
    this.blockBytes = Number(info[3]);
    this.layout = spec.layout;
    this.backend = Number(info[1]) === SY_BACKEND_CUDA ? "cuda" : "cpu";
    this.directIo = info[10] === 1n;
    this.diskPath = spec.kind === "disk" ? spec.diskPath : undefined;
    this.sharedName = shared?.name;
    this.readOnly = shared?.readOnly ?? false;
  }

  /**
   * The one writer of shared-memory segment `name` ([A-Za-z0-9._-]): creates it (it must not
   * exist), maps it read-write. A host pool for transfers. close() unmaps, the segment stays
   * until unlinkShared.
   */
  static createShared(
    lib: NativeLibrary,
    spec: { name: string; numBlocks: number; layout: BlockLayout },
  ): NativePool {
    const shm = shmSymbols(lib);
    const name = utf8.encode(spec.name);
    const handle = shm.sy_shm_pool_create(
      name,
      name,
      layoutBytes(spec.layout),
      layoutBytes(spec.layout),
      spec.numBlocks,
    );
    if (handle < 0)
      throw fromStatus(handle, lib.lastError(), `creating shared-memory pool ${spec.name}`);
    return NativePool.#wrap(
      lib,
      handle,
      { kind: "host", numBlocks: spec.numBlocks, layout: spec.layout },
      { name: spec.name, readOnly: false },
    );
  }

  /** A reader's read-only mapping of segment `name`; its header must match `layout`. */
  static openShared(lib: NativeLibrary, spec: { name: string; layout: BlockLayout }): NativePool {
    const shm = shmSymbols(lib);
    const name = utf8.encode(spec.name);
    const handle = shm.sy_shm_pool_open(
      name,
      name,
      layoutBytes(spec.layout),
      layoutBytes(spec.layout),
    );
    if (handle < 0)
      throw fromStatus(handle, lib.lastError(), `opening shared-memory pool ${spec.name}`);
    return NativePool.#wrap(
      lib,
      handle,
      { kind: "host", numBlocks: 0, layout: spec.layout },
      { name: spec.name, readOnly: true },
    );
  }

  /** Removes segment `name` (mappings stay valid until closed). False when it was already gone. */
  static unlinkShared(lib: NativeLibrary, name: string): boolean {
    const shm = shmSymbols(lib);
    const bytes = utf8.encode(name);
    const st = shm.sy_shm_unlink(bytes, bytes);
    if (st === SY_E_NOT_FOUND) return false;
    if (st < 0) throw fromStatus(st, lib.lastError(), `removing shared-memory segment ${name}`);
    return true;
  }

  /**
   * CUDA IPC (the GPU path of a hand-off): this CUDA device pool's 64-byte memory handle, for
   * another process on the host to open with openIpc. Throws "unavailable" without a GPU.
   * Compiled and bound everywhere; never run on the machines this project was tested on.
   */
  ipcHandle(): Uint8Array {
    const out = new Uint8Array(SY_IPC_HANDLE_BYTES);
    const st = shmSymbols(this.#lib).sy_pool_ipc_handle(this.#live("ipcHandle"), out, out);
    if (st < 0) throw fromStatus(st, this.#lib.lastError(), "exporting the pool's CUDA IPC handle");
    return out;
  }

  /** A device pool over another process's memory (its ipcHandle); device -> device pulls from it are allowed. */
  static openIpc(
    lib: NativeLibrary,
    spec: { handle: Uint8Array; numBlocks: number; layout: BlockLayout },
  ): NativePool {
    const layout = layoutBytes(spec.layout);
    const handle = shmSymbols(lib).sy_pool_open_ipc(
      spec.handle,
      spec.handle,
      layout,
      layout,
      spec.numBlocks,
    );
    if (handle < 0) throw fromStatus(handle, lib.lastError(), "opening a CUDA IPC pool");
    return NativePool.#wrap(
      lib,
      handle,
      { kind: "device", numBlocks: spec.numBlocks, layout: spec.layout },
      { name: "cuda-ipc", readOnly: false },
    );
  }

  static #wrap(
    lib: NativeLibrary,
    handle: number,
    spec: PoolSpec,
    shared: { name: string; readOnly: boolean },
  ): NativePool {
    const info = new BigUint64Array(SY_POOL_INFO_FIELDS);
    const st = lib.unsafeSymbols.sy_pool_info(handle, info, info);
    if (st < 0) {
      lib.unsafeSymbols.sy_pool_destroy(handle);
      throw fromStatus(st, lib.lastError(), "reading pool info");
    }
    return new NativePool(lib, handle, spec, info, shared);
  }

  static create(lib: NativeLibrary, spec: PoolSpec): NativePool {
    const layout = layoutBytes(spec.layout);
    if (!Number.isSafeInteger(spec.numBlocks) || spec.numBlocks < 0) {
      throw new TransferError(
        "invalid-argument",
        `numBlocks must be a non-negative integer, got ${spec.numBlocks}`,
      );
    }
    const kind = KIND_CODE[spec.kind];
    const backend = BACKEND_CODE[spec.backend ?? "auto"];
    if (kind === undefined || backend === undefined)
      throw new TransferError("invalid-argument", `unknown pool kind or backend`);
    const path =
      spec.kind === "disk" && spec.diskPath !== undefined ? utf8.encode(spec.diskPath) : EMPTY;
    const flags =
      (spec.unlinkOnClose ? SY_DISK_UNLINK_ON_CLOSE : 0) |
      (spec.directIo === false ? SY_DISK_NO_DIRECT : 0);
    const sym = lib.unsafeSymbols;
    const handle = sym.sy_pool_create(
      kind,
      backend,
      layout,
      layout,
      spec.numBlocks,
      path,
      path,
      flags,
    );
    if (handle < 0) throw fromStatus(handle, lib.lastError(), `creating the ${spec.kind} pool`);
    const info = new BigUint64Array(SY_POOL_INFO_FIELDS);
    const st = sym.sy_pool_info(handle, info, info);
    if (st < 0) {
      sym.sy_pool_destroy(handle);
      throw fromStatus(st, lib.lastError(), "reading pool info");
    }
    return new NativePool(lib, handle, spec, info);
  }

  get closed(): boolean {
    return this.#handle === null;
  }

  /** **UNSAFE**: the raw handle, for code that calls the C functions directly (tests, bench). */
  get unsafeHandle(): number {
    return this.#handle ?? 0;
  }

  #live(what: string): number {
    if (this.#handle === null)
      throw new TransferError("closed", `${what}: the ${this.kind} pool is closed`);
    return this.#handle;
  }

  /** Block `index` in logical order ([layer][K/V][token][element]). */
  readBlock(index: number, into: Uint8Array = new Uint8Array(this.blockBytes)): Uint8Array {
    const h = this.#live("readBlock");
    const st = this.#lib.unsafeSymbols.sy_pool_read_block(h, index, into, into);
    if (st < 0) throw fromStatus(st, this.#lib.lastError(), `reading ${this.kind} block ${index}`);
    return into;
  }

  writeBlock(index: number, data: Uint8Array): void {
    const h = this.#live("writeBlock");
    const st = this.#lib.unsafeSymbols.sy_pool_write_block(h, index, data, data);
    if (st < 0) throw fromStatus(st, this.#lib.lastError(), `writing ${this.kind} block ${index}`);
  }

  /** Copies on the library's threads; the event loop stays free meanwhile. */
  async copyTo(dst: TransferPool, pairs: Uint32Array): Promise<void> {
    const [src, to] = this.#endpoints(dst, "copyTo");
    const what = `transfer ${this.kind} -> ${dst.kind}`;
    await awaitJob(
      this.#lib,
      this.#lib.unsafeSymbols.sy_transfer_submit(src, to, pairs, pairs),
      what,
    );
  }

  /** Copies on the calling thread (plus the library's helpers); blocks until done. */
  copyToSync(dst: TransferPool, pairs: Uint32Array): void {
    const [src, to] = this.#endpoints(dst, "copyToSync");
    const st = this.#lib.unsafeSymbols.sy_transfer(src, to, pairs, pairs);
    if (st < 0) throw fromStatus(st, this.#lib.lastError(), `transfer ${this.kind} -> ${dst.kind}`);
  }

  #endpoints(dst: TransferPool, what: string): [number, number] {
    if (!(dst instanceof NativePool))
      throw new TransferError("invalid-argument", `${what}: the destination is not a native pool`);
    if (dst.#lib !== this.#lib)
      throw new TransferError(
        "invalid-argument",
        `${what}: the pools belong to different libraries`,
      );
    return [this.#live(what), dst.#live(what)];
  }

  close(): void {
    if (this.#handle === null) return;
    const h = this.#handle;
    this.#handle = null;
    const st = this.#lib.unsafeSymbols.sy_pool_destroy(h);
    if (st < 0) throw fromStatus(st, this.#lib.lastError(), `closing the ${this.kind} pool`);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
