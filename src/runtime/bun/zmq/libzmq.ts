/**
 * The raw bun:ffi table of libzmq.so.5 (Debian's libzmq5) and its loader. Only the calls
 * the KV event subscriber needs; the safe wrapper is zmq-socket.ts.
 *
 * Why FFI and not the `zeromq` npm package: that package crashes Bun 1.4.5 as soon as a
 * socket is used (`unsupported uv function: uv_poll_init_socket`). The blocking calls here
 * must run in a Worker (recv-worker.ts), never on the main thread.
 */
import { dlopen, FFIType, type ConvertFns, type Pointer } from "bun:ffi";

/** Socket types (zmq.h). */
export const ZMQ_PAIR = 0;
export const ZMQ_SUB = 2;
export const ZMQ_DEALER = 5;

/** Socket options (zmq.h). */
export const ZMQ_SUBSCRIBE = 6;
export const ZMQ_LINGER = 17;
/** int64: largest message accepted; a longer one (its declared size) ends the session before any allocation. */
export const ZMQ_MAXMSGSIZE = 22;
export const ZMQ_RCVHWM = 24;
export const ZMQ_RCVTIMEO = 27;

/** Send/receive flags. */
export const ZMQ_DONTWAIT = 1;
export const ZMQ_SNDMORE = 2;

/** errno values libzmq reports (Linux). ETERM is ZMQ_HAUSNUMERO + 53. */
export const EAGAIN = 11;
export const EINTR = 4;
export const ETERM = 156384712 + 53;

/** sizeof(zmq_msg_t): 64 bytes on every platform libzmq 4.x supports. */
export const ZMQ_MSG_T_SIZE = 64;

/** The default library name; SWITCHYARD_LIBZMQ overrides it (a path or another soname). */
export const LIBZMQ_DEFAULT = "libzmq.so.5";

export const LIBZMQ_SYMBOLS = {
  zmq_version: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.void },
  zmq_ctx_new: { args: [], returns: FFIType.ptr },
  zmq_ctx_term: { args: [FFIType.ptr], returns: FFIType.i32 },
  zmq_socket: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.ptr },
  zmq_close: { args: [FFIType.ptr], returns: FFIType.i32 },
  zmq_setsockopt: {
    args: [FFIType.ptr, FFIType.i32, FFIType.ptr, FFIType.u64],
    returns: FFIType.i32,
  },
  zmq_connect: { args: [FFIType.ptr, FFIType.cstring], returns: FFIType.i32 },
  zmq_socket_monitor: { args: [FFIType.ptr, FFIType.cstring, FFIType.i32], returns: FFIType.i32 },
  zmq_send: { args: [FFIType.ptr, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
  zmq_msg_init: { args: [FFIType.ptr], returns: FFIType.i32 },
  zmq_msg_recv: { args: [FFIType.ptr, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  zmq_msg_data: { args: [FFIType.ptr], returns: FFIType.ptr },
  zmq_msg_size: { args: [FFIType.ptr], returns: FFIType.u64_fast },
  zmq_msg_more: { args: [FFIType.ptr], returns: FFIType.i32 },
  zmq_msg_close: { args: [FFIType.ptr], returns: FFIType.i32 },
  zmq_errno: { args: [], returns: FFIType.i32 },
  zmq_strerror: { args: [FFIType.i32], returns: FFIType.cstring },
} as const;

export type LibZmq = ConvertFns<typeof LIBZMQ_SYMBOLS>;

export interface LoadedLibzmq {
  readonly symbols: LibZmq;
  /** "4.3.4" */
  readonly version: string;
  readonly path: string;
  close(): void;
}

/** libzmq could not be loaded; the message says what to install. */
export class LibzmqUnavailableError extends Error {
  override readonly name = "LibzmqUnavailableError";
}

export function libzmqPath(env: Record<string, string | undefined> = process.env): string {
  return env.SWITCHYARD_LIBZMQ || LIBZMQ_DEFAULT;
}

/** dlopen libzmq; throws LibzmqUnavailableError naming the package when it is absent. */
export function loadLibzmq(path: string = libzmqPath()): LoadedLibzmq {
  let lib;
  try {
    lib = dlopen(path, LIBZMQ_SYMBOLS);
  } catch (e) {
    throw new LibzmqUnavailableError(
      `cannot load ${path} (${(e as Error).message}); install ZeroMQ: apt-get install -y libzmq5 ` +
        `(or set SWITCHYARD_LIBZMQ to the library's path)`,
    );
  }
  const v = new Int32Array(3);
  lib.symbols.zmq_version(v.subarray(0, 1), v.subarray(1, 2), v.subarray(2, 3));
  if (v[0]! < 4) {
    lib.close();
    throw new LibzmqUnavailableError(`${path} is ZeroMQ ${v[0]}.${v[1]}.${v[2]}; 4.x is required`);
  }
  return {
    symbols: lib.symbols,
    version: `${v[0]}.${v[1]}.${v[2]}`,
    path,
    close: () => lib.close(),
  };
}

/** "Resource temporarily unavailable (errno 11)" */
export function zmqError(lib: LibZmq, what: string, errno: number = lib.zmq_errno()): Error {
  const text = lib.zmq_strerror(errno);
  return Object.assign(new Error(`${what}: ${String(text)} (errno ${errno})`), { errno });
}

export type { Pointer };
