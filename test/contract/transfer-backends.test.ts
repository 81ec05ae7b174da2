/**
 * The transfer backend contract against every backend that can run here: the CPU path
 * always; the CUDA path only where a GPU is usable (skipped otherwise, with the reason).
 */
import { describe, expect, test } from "bun:test";
import { NativePool, type PoolBackend } from "../../src/transfer/pools.ts";
import { nativeLibrary } from "../unit/transfer/native/native-lib.ts";
import { runTransferBackendContract, smallLayout } from "./transfer-backend.contract.ts";

const lib = nativeLibrary();

function backend(b: PoolBackend) {
  return (
    kind: "device" | "host" | "disk",
    numBlocks: number,
    layout: ReturnType<typeof smallLayout>,
    diskPath?: string,
  ) =>
    NativePool.create(lib, { kind, numBlocks, layout, backend: b, diskPath, unlinkOnClose: true });
}

runTransferBackendContract("cpu", backend("cpu"));

const lines = lib.runtimeStatus.split("\n");
const noGpu =
  lines.find((l) => l.startsWith("cuda device")) ??
  lines.find((l) => l.startsWith("cuda runtime")) ??
  "no CUDA runtime";
describe.skipIf(!lib.gpuUsable)(`cuda backend (skipped without a usable GPU: ${noGpu})`, () => {
  runTransferBackendContract("cuda", backend("cuda"));
});

test("the cpu backend really is host memory, and cuda is refused without a GPU", () => {
  using p = NativePool.create(lib, {
    kind: "device",
    numBlocks: 2,
    layout: smallLayout("fully-contiguous"),
    backend: "cpu",
  });
  expect(p.backend).toBe("cpu");
  if (!lib.gpuUsable) {
    expect(() =>
      NativePool.create(lib, {
        kind: "device",
        numBlocks: 2,
        layout: smallLayout("fully-contiguous"),
        backend: "cuda",
      }),
    ).toThrow(/not usable/);
  }
});
