/**
 * Where the receive worker's code is. From source it sits next to this file. In a binary
 * from `bun build --compile src/main.ts src/runtime/bun/zmq/recv-worker.ts …`, each entrypoint
 * is embedded under the binary's virtual root (`/$bunfs/root/`) at its path relative to the
 * build's root folder, as `.js`, while `import.meta.url` of bundled code is the binary's own
 * path there: so the worker is looked up under that root for the usual build roots (`--root src`
 * as `bun run compile` has it, the repository, or `--root src/runtime/bun/zmq`) instead of
 * relying on one `--root`. Callers can skip all this with `recvWorkerUrl`.
 */
import { existsSync } from "node:fs";

/** The worker's path relative to the compiled binary's root, for each build root we support. */
export const COMPILED_WORKER_PATHS = [
  "runtime/bun/zmq/recv-worker.js",
  "src/runtime/bun/zmq/recv-worker.js",
  "recv-worker.js",
] as const;

/** Bun's virtual folder of a compiled binary's embedded files. */
const BUNFS_MARK = "/$bunfs/";

/**
 * The receive worker's URL for code whose `import.meta.url` is `metaUrl`; `exists` checks a
 * file path (injected for tests). In a compiled binary without the worker embedded, throws
 * an error naming the build command, rather than letting the Worker fail obscurely.
 */
export function recvWorkerUrlFor(
  metaUrl: string,
  exists: (path: string) => boolean = existsSync,
): string {
  const beside = new URL("./recv-worker.ts", metaUrl);
  if (!decodeURIComponent(beside.pathname).includes(BUNFS_MARK)) return beside.href;
  const root = new URL(".", metaUrl);
  for (const rel of COMPILED_WORKER_PATHS) {
    const candidate = new URL(rel, root);
    if (exists(decodeURIComponent(candidate.pathname))) return candidate.href;
  }
  throw new Error(
    "this binary has no embedded ZMQ receive worker: build it with `bun build --compile src/main.ts src/runtime/bun/zmq/recv-worker.ts --outfile …` " +
      `(looked for ${COMPILED_WORKER_PATHS.map((p) => new URL(p, root).pathname).join(", ")})`,
  );
}

/** The receive worker's URL for this build (source tree or compiled binary). */
export function defaultRecvWorkerUrl(): string {
  return recvWorkerUrlFor(import.meta.url);
}
