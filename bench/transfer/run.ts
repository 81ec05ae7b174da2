/**
 * Transfer benchmark of the native library's CPU path.
 *
 *   bun bench/transfer/run.ts [--json FILE] [--mib N]
 *
 * - Memory: device <-> host pools (both host memory on the CPU path) moving N MiB of 2 MiB
 *   blocks (32 layers x K/V x 16 tokens x 1024 x 2 bytes), beside plain single-threaded
 *   memcpy over the same working set, measured by a tiny C program built by this script
 *   (bench/transfer/memcpy-bench.c) running as a co-process: one memcpy right after each
 *   of our runs, so both see the same (shared, noisy) machine. Target: >= 0.9x memcpy.
 * - Disk: host -> disk (write) and disk -> device (read) through a disk pool file, beside
 *   `dd` with the same block size (O_DIRECT on both sides when the pool uses it).
 * - FFI overhead of a 1-block (4 KiB) transfer: raw call, the blocking wrapper, and the
 *   async job (submit + poll), beside a bare FFI call and a 4 KiB memcpy in C.
 * The GPU path is compiled (when nvcc exists) but only runs where a GPU is usable.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadNativeLibrary, type NativeLibrary } from "../../src/transfer/native/library.ts";
import { NativePool } from "../../src/transfer/pools.ts";
import type { BlockLayout } from "../../src/transfer/types.ts";
import { median } from "../replay/stats.ts";

const ROOT = join(import.meta.dir, "..", "..");
const MIB = 1 << 20;

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
}

function sh(cmd: string[], what: string): { stdout: string; stderr: string } {
  const r = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe", cwd: ROOT });
  if (r.exitCode !== 0)
    throw new Error(
      `${what} failed (${cmd.join(" ")}):\n${r.stdout.toString()}${r.stderr.toString()}`,
    );
  return { stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** Pairs i -> n-1-i over n blocks (every block moves; indices matter). */
function reversed(n: number): Uint32Array {
  const p = new Uint32Array(2 * n);
  for (let i = 0; i < n; i++) (p[2 * i] = i), (p[2 * i + 1] = n - 1 - i);
  return p;
}

function gbps(bytes: number, ms: number): number {
  return bytes / (ms / 1000) / 1e9;
}

async function timeMs(fn: () => unknown | Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

type LineSource = { read(): Promise<{ done: boolean; value?: Uint8Array }> };

/** The C reference as a co-process: one timed memcpy per request, interleaved with ours. */
class MemcpyReference {
  readonly #proc: ReturnType<typeof Bun.spawn>;
  readonly #reader: LineSource;
  #buf = "";

  constructor(bin: string, totalBytes: number, blockBytes: number, smallBytes: number) {
    this.#proc = Bun.spawn([bin, String(totalBytes), String(blockBytes), String(smallBytes)], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "inherit",
    });
    this.#reader = (
      this.#proc.stdout as ReadableStream<Uint8Array>
    ).getReader() as unknown as LineSource;
  }

  async ask(what: "whole" | "blocks" | "small"): Promise<number> {
    const sink = this.#proc.stdin as import("bun").FileSink;
    sink.write(`${what}\n`);
    await sink.flush();
    const dec = new TextDecoder();
    while (!this.#buf.includes("\n")) {
      const { value, done } = await this.#reader.read();
      if (done || !value) throw new Error("memcpy-bench exited");
      this.#buf += dec.decode(value);
    }
    const nl = this.#buf.indexOf("\n");
    const line = this.#buf.slice(0, nl);
    this.#buf = this.#buf.slice(nl + 1);
    const v = Number(line);
    if (!Number.isFinite(v)) throw new Error(`memcpy-bench said ${line}`);
    return v;
  }

  close(): void {
    (this.#proc.stdin as import("bun").FileSink).end();
    this.#proc.kill();
  }
}

interface MemoryCase {
  label: string;
  gbps: number;
  memcpyGbps: number;
  /** Median over reps of (ours / memcpy measured right after it). */
  vsMemcpy: number;
}

async function memoryBench(
  lib: NativeLibrary,
  ref: MemcpyReference,
  layout: BlockLayout,
  blocks: number,
  reps: number,
): Promise<MemoryCase[]> {
  const ls: BlockLayout = { ...layout, kind: "layer-separate" };
  using host = NativePool.create(lib, { kind: "host", numBlocks: blocks, layout, backend: "cpu" });
  using device = NativePool.create(lib, {
    kind: "device",
    numBlocks: blocks,
    layout,
    backend: "cpu",
  });
  using hostLs = NativePool.create(lib, {
    kind: "host",
    numBlocks: blocks,
    layout: ls,
    backend: "cpu",
  });
  const fill = new Uint8Array(host.blockBytes).fill(7);
  for (let b = 0; b < blocks; b++)
    host.writeBlock(b, fill), device.writeBlock(b, fill), hostLs.writeBlock(b, fill); // fault pages in
  const pairs = reversed(blocks);
  const bytes = blocks * host.blockBytes;
  const run = async (label: string, fn: () => unknown | Promise<unknown>): Promise<MemoryCase> => {
    await fn(); // warm
    const ours: number[] = [],
      theirs: number[] = [],
      ratios: number[] = [];
    for (let r = 0; r < reps; r++) {
      const g = gbps(bytes, await timeMs(fn));
      const m = await ref.ask("whole");
      ours.push(g), theirs.push(m), ratios.push(g / m);
    }
    return { label, gbps: median(ours), memcpyGbps: median(theirs), vsMemcpy: median(ratios) };
  };
  return [
    await run("host -> device (blocking call)", () => host.copyToSync(device, pairs)),
    await run("device -> host (blocking call)", () => device.copyToSync(host, pairs)),
    await run("host -> device (async job)", () => host.copyTo(device, pairs)),
    await run("host layer-separate -> device (32 KiB chunks)", () =>
      hostLs.copyToSync(device, pairs),
    ),
  ];
}

function ddSeconds(stderr: string): { bytes: number; seconds: number } {
  const m = /(\d+) bytes.*copied, ([\d.]+) s/.exec(stderr);
  if (!m) throw new Error(`cannot read dd's output: ${stderr}`);
  return { bytes: Number(m[1]), seconds: Number(m[2]) };
}

async function diskBench(
  lib: NativeLibrary,
  layout: BlockLayout,
  blocks: number,
  reps: number,
  dir: string,
) {
  using host = NativePool.create(lib, { kind: "host", numBlocks: blocks, layout, backend: "cpu" });
  using device = NativePool.create(lib, {
    kind: "device",
    numBlocks: blocks,
    layout,
    backend: "cpu",
  });
  using disk = NativePool.create(lib, {
    kind: "disk",
    numBlocks: blocks,
    layout,
    diskPath: join(dir, "pool.bin"),
    unlinkOnClose: true,
  });
  const fill = new Uint8Array(host.blockBytes).fill(9);
  for (let b = 0; b < blocks; b++) host.writeBlock(b, fill), device.writeBlock(b, fill);
  // slot i <- block i: sequential in the file, as dd writes it
  const pairs = new Uint32Array(2 * blocks).map((_, i) => i >> 1);
  const bytes = blocks * host.blockBytes;
  const writes: number[] = [],
    reads: number[] = [];
  await host.copyTo(disk, pairs); // warm: allocate extents
  for (let r = 0; r < reps; r++) {
    writes.push(gbps(bytes, await timeMs(() => host.copyTo(disk, pairs))));
    reads.push(gbps(bytes, await timeMs(() => disk.copyTo(device, pairs))));
  }
  // dd with the same block size and total, direct I/O when the pool has it.
  const ddFile = join(dir, "dd.bin");
  const bs = String(host.blockBytes),
    count = String(blocks);
  const oflag = disk.directIo ? ["oflag=direct"] : [];
  const iflag = disk.directIo ? ["iflag=direct"] : [];
  sh(["dd", "if=/dev/zero", `of=${ddFile}`, `bs=${bs}`, `count=${count}`, ...oflag], "dd warm-up");
  const ddW: number[] = [],
    ddR: number[] = [];
  for (let r = 0; r < reps; r++) {
    const w = ddSeconds(
      sh(
        [
          "dd",
          "if=/dev/zero",
          `of=${ddFile}`,
          `bs=${bs}`,
          `count=${count}`,
          "conv=notrunc",
          ...oflag,
        ],
        "dd write",
      ).stderr,
    );
    ddW.push(w.bytes / w.seconds / 1e9);
    const rd = ddSeconds(
      sh(["dd", `if=${ddFile}`, "of=/dev/null", `bs=${bs}`, `count=${count}`, ...iflag], "dd read")
        .stderr,
    );
    ddR.push(rd.bytes / rd.seconds / 1e9);
  }
  return {
    directIo: disk.directIo,
    blockBytes: host.blockBytes,
    totalBytes: bytes,
    writeGbps: median(writes),
    readGbps: median(reads),
    ddWriteGbps: median(ddW),
    ddReadGbps: median(ddR),
  };
}

async function overheadBench(lib: NativeLibrary) {
  const layout: BlockLayout = {
    kind: "fully-contiguous",
    numLayers: 1,
    outerDim: 2,
    pageSize: 16,
    innerDim: 64,
    elemBytes: 2,
  }; // 4 KiB
  using host = NativePool.create(lib, { kind: "host", numBlocks: 8, layout, backend: "cpu" });
  using device = NativePool.create(lib, { kind: "device", numBlocks: 8, layout, backend: "cpu" });
  const pairs = Uint32Array.of(1, 2);
  const sym = lib.unsafeSymbols;
  const perCallNs = (n: number, fn: () => void) => {
    for (let i = 0; i < n / 10; i++) fn();
    const t0 = Bun.nanoseconds();
    for (let i = 0; i < n; i++) fn();
    return (Bun.nanoseconds() - t0) / n;
  };
  const bare = perCallNs(1_000_000, () => sym.sy_abi_version());
  const h = host.unsafeHandle,
    d = device.unsafeHandle;
  const raw = perCallNs(300_000, () => sym.sy_transfer(h, d, pairs, pairs));
  const wrapped = perCallNs(300_000, () => host.copyToSync(device, pairs));
  const n = 3000;
  for (let i = 0; i < 300; i++) await host.copyTo(device, pairs);
  const t0 = Bun.nanoseconds();
  for (let i = 0; i < n; i++) await host.copyTo(device, pairs);
  const asyncNs = (Bun.nanoseconds() - t0) / n;
  return {
    blockBytes: host.blockBytes,
    bareFfiNs: bare,
    rawTransferNs: raw,
    blockingWrapperNs: wrapped,
    asyncJobNs: asyncNs,
  };
}

export async function runTransferBench() {
  sh(["bash", "ffi/build.sh"], "ffi/build.sh");
  const loaded = loadNativeLibrary({ path: join(ROOT, "ffi/build/libswitchyard.so") });
  if (!loaded.ok) throw new Error(loaded.message);
  const lib = loaded.library;
  const mib = Number(arg("--mib") ?? 256);
  const layout: BlockLayout = {
    kind: "fully-contiguous",
    numLayers: 32,
    outerDim: 2,
    pageSize: 16,
    innerDim: 1024,
    elemBytes: 2,
  };
  const blockBytes = 32 * 2 * 16 * 1024 * 2;
  const blocks = Math.max(1, Math.floor((mib * MIB) / blockBytes));
  const dir = mkdtempSync(join(tmpdir(), "sy-transfer-bench-"));
  try {
    const cbin = join(dir, "memcpy-bench");
    sh(
      ["gcc", "-O3", "-o", cbin, join(import.meta.dir, "memcpy-bench.c")],
      "building memcpy-bench",
    );
    const ref = new MemcpyReference(cbin, blocks * blockBytes, blockBytes, 4096);
    let memory: MemoryCase[];
    let c: { memcpy_gbps: number; memcpy_blockwise_gbps: number; small_copy_ns: number };
    try {
      await ref.ask("whole"); // warm
      memory = await memoryBench(lib, ref, layout, blocks, 9);
      const blockwise: number[] = [],
        small: number[] = [];
      for (let i = 0; i < 5; i++)
        blockwise.push(await ref.ask("blocks")), small.push(await ref.ask("small"));
      c = {
        memcpy_gbps: median(memory.map((m) => m.memcpyGbps)),
        memcpy_blockwise_gbps: median(blockwise),
        small_copy_ns: Math.min(...small),
      };
    } finally {
      ref.close();
    }
    const disk = await diskBench(lib, layout, blocks, 3, dir);
    const overhead = await overheadBench(lib);
    return {
      bench: "transfer",
      runtime: `bun ${Bun.version}`,
      cpus: navigator.hardwareConcurrency,
      gpu: {
        kernelsBuilt: existsSync(join(ROOT, "ffi/build/libswitchyard_cuda.so")),
        usable: lib.gpuUsable,
        note: lib.gpuUsable
          ? "GPU usable (this bench measures the CPU path only)"
          : "GPU path compiled but not run: no usable GPU",
        status: lib.runtimeStatus.split("\n"),
      },
      workingSet: { blocks, blockBytes, bytes: blocks * blockBytes },
      memcpy: c,
      memory,
      disk,
      overhead: { ...overhead, cMemcpy4KiBNs: c.small_copy_ns },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const r = await runTransferBench();
  const f = (x: number, d = 2) => x.toFixed(d);
  console.log(
    `working set: ${r.workingSet.blocks} blocks x ${r.workingSet.blockBytes / MIB} MiB = ${r.workingSet.bytes / MIB} MiB; ${r.cpus} CPUs`,
  );
  console.log(
    `C memcpy (single thread, interleaved with ours): ${f(r.memcpy.memcpy_gbps)} GB/s whole, ${f(r.memcpy.memcpy_blockwise_gbps)} GB/s per block`,
  );
  for (const m of r.memory)
    console.log(
      `  ${m.label.padEnd(48)} ${f(m.gbps)} GB/s  (${f(m.vsMemcpy)}x the memcpy measured beside it)`,
    );
  const d = r.disk;
  console.log(
    `disk (${d.directIo ? "O_DIRECT" : "page cache"}, ${d.blockBytes / MIB} MiB blocks, ${d.totalBytes / MIB} MiB):`,
  );
  console.log(`  write host -> disk  ${f(d.writeGbps)} GB/s   dd: ${f(d.ddWriteGbps)} GB/s`);
  console.log(`  read  disk -> device ${f(d.readGbps)} GB/s   dd: ${f(d.ddReadGbps)} GB/s`);
  const o = r.overhead;
  console.log(
    `1-block (${o.blockBytes} B) transfer: raw ${f(o.rawTransferNs, 0)} ns, blocking wrapper ${f(o.blockingWrapperNs, 0)} ns, async job ${f(o.asyncJobNs / 1000, 1)} µs`,
  );
  console.log(
    `  (bare FFI call ${f(o.bareFfiNs, 1)} ns; 4 KiB memcpy in C ${f(o.cMemcpy4KiBNs, 0)} ns)`,
  );
  console.log(r.gpu.note);
  const out = arg("--json");
  if (out) {
    await Bun.write(out, JSON.stringify(r, null, 2) + "\n");
    console.log(`wrote ${out}`);
  }
}
