import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  COMPILED_WORKER_PATHS,
  defaultRecvWorkerUrl,
  recvWorkerUrlFor,
} from "../../../../../src/runtime/bun/zmq/worker-url.ts";

describe("recvWorkerUrlFor", () => {
  test("from source: recv-worker.ts beside the module, and it exists", () => {
    const url = defaultRecvWorkerUrl();
    expect(url).toEndWith("/src/runtime/bun/zmq/recv-worker.ts");
    expect(existsSync(fileURLToPath(url))).toBe(true);
  });

  test("in a compiled binary: the embedded worker for each supported build root", () => {
    const meta = "file:///$bunfs/root/switchyard";
    for (const rel of COMPILED_WORKER_PATHS) {
      const seen: string[] = [];
      const url = recvWorkerUrlFor(meta, (p) => (seen.push(p), p === `/$bunfs/root/${rel}`));
      expect(url).toBe(`file:///$bunfs/root/${rel}`);
      expect(seen.at(-1)).toBe(`/$bunfs/root/${rel}`);
    }
  });

  test("in a compiled binary without the worker: an error naming the build command", () => {
    expect(() => recvWorkerUrlFor("file:///$bunfs/root/switchyard", () => false)).toThrow(
      "src/runtime/bun/zmq/recv-worker.ts",
    );
  });
});
