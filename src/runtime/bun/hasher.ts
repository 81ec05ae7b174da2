/** Bun's block hasher for request block hashes: the C library's over bun:ffi when it loads, else TypeScript. */
import type { Logger } from "../../core/logger.ts";
import { portableBatchHasher, type BatchBlockHasher } from "../../core/block-hash.ts";
import { createNativeBlockHasher } from "./ffi-hasher.ts";
import { loadNativeLibrary } from "../../transfer/native/library.ts";

export function chooseHasher(log: Logger): BatchBlockHasher {
  const lib = loadNativeLibrary();
  if (lib.ok) {
    log.info("block hasher: native", { library: lib.library.path });
    return createNativeBlockHasher(lib.library);
  }
  log.info(`block hasher: portable TypeScript (native library ${lib.reason})`, {
    detail: lib.message,
  });
  return portableBatchHasher;
}
