import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SY_ABI_VERSION } from "../../../../src/transfer/native/ffi.ts";
import {
  FFI_LIB_ENV,
  libraryCandidates,
  loadNativeLibrary,
} from "../../../../src/transfer/native/library.ts";
import { LIBRARY_PATH, nativeLibrary, REPO_ROOT } from "./native-lib.ts";

describe("loading the native library", () => {
  test("the built library loads, has this ABI version and reports its runtime path", () => {
    const lib = nativeLibrary();
    expect(lib.unsafeSymbols.sy_abi_version()).toBe(SY_ABI_VERSION);
    expect(lib.runtimeStatus).toContain("path: ");
    expect(lib.runtimeStatus).toContain("nccl: ");
    // Without a usable GPU, the status must say the CPU path is in use, and why.
    if (!lib.gpuUsable) {
      expect(lib.runtimeStatus).toContain("cpu only");
      expect(lib.runtimeStatus).toMatch(/cuda (runtime|device): /);
    }
  });

  test("the env override is the only candidate when it is set", () => {
    expect(libraryCandidates({ [FFI_LIB_ENV]: "/x/y.so" })).toEqual(["/x/y.so"]);
    expect(libraryCandidates({})).toContain(LIBRARY_PATH);
  });

  test("an absent library is a 'not-built' result naming the override, not an exception", () => {
    const r = loadNativeLibrary({ env: { [FFI_LIB_ENV]: "/nonexistent/libswitchyard.so" } });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toBe("not-built");
      expect(r.message).toContain(FFI_LIB_ENV);
      expect(r.message).toContain("build:ffi");
    }
  });

  test("importing the binding with no library anywhere does not throw", () => {
    const code = `const m = await import(${JSON.stringify(join(REPO_ROOT, "src/runtime/bun/ffi-hasher.ts"))}); console.log(String(m.loadNativeBlockHasher()));`;
    const r = Bun.spawnSync(["bun", "-e", code], {
      env: { ...process.env, [FFI_LIB_ENV]: "/nonexistent/x.so" },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(r.stderr.toString()).toBe("");
    expect(r.stdout.toString().trim()).toBe("undefined");
    expect(r.exitCode).toBe(0);
  });

  describe("given libraries that must be refused", () => {
    const dir = mkdtempSync(join(tmpdir(), "sy-lib-"));
    const wrongAbi = join(dir, "libwrong.so");
    const notElf = join(dir, "libjunk.so");
    const src = join(dir, "wrong.c");
    writeFileSync(src, "unsigned sy_abi_version(void) { return 999u; }\n");
    const cc = Bun.spawnSync(["gcc", "-shared", "-fPIC", "-o", wrongAbi, src]);
    writeFileSync(notElf, "this is not a shared library");

    test("a library of another ABI version is an 'abi-mismatch' result", () => {
      expect(cc.exitCode).toBe(0);
      const r = loadNativeLibrary({ path: wrongAbi });
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.reason).toBe("abi-mismatch");
        expect(r.message).toContain("999");
      }
    });

    test("a file that is not a library is a 'load-failed' result", () => {
      const r = loadNativeLibrary({ path: notElf });
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toBe("load-failed");
      rmSync(dir, { recursive: true, force: true });
    });
  });
});
