/** Bun's block hasher for request block hashes: the C library's over bun:ffi when it loads, else TypeScript. */
import type { Logger } from "../../app/log.ts";
import { portableBatchHasher, type BatchBlockHasher } from "../../core/hashing.ts";
import { createNativeBlockHasher } from "../../native/hasher.ts";
import { loadNativeLibrary } from "../../native/library.ts";

export function chooseHasher(log: Logger): BatchBlockHasher {
  const lib = loadNativeLibrary();
  if (lib.ok) {
    log.info("block hasher: native", { library: lib.library.path });
    return createNativeBlockHasher(lib.library);
  }
  log.info(`block hasher: portable TypeScript (native library ${lib.reason})`, { detail: lib.message });
  return portableBatchHasher;
}
