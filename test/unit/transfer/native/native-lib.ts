/**
 * Test support: the native library, built first (ffi/build.sh keeps up-to-date outputs, so
 * this costs a few milliseconds after the first build). A failed build fails the caller's
 * tests with the build's output — native tests are never silently skipped.
 */
import { join } from "node:path";
import { loadNativeLibrary, type NativeLibrary } from "../../../../src/transfer/native/library.ts";
import { xorshift32 } from "../../../support/prng.ts";

export const REPO_ROOT = join(import.meta.dir, "..", "..", "..", "..");
export const LIBRARY_PATH = join(REPO_ROOT, "ffi", "build", "libswitchyard.so");

let built: NativeLibrary | undefined;

export function nativeLibrary(): NativeLibrary {
  if (built) return built;
  const r = Bun.spawnSync(["bash", join(REPO_ROOT, "ffi", "build.sh")], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0)
    throw new Error(`ffi/build.sh failed:\n${r.stdout.toString()}${r.stderr.toString()}`);
  const lib = loadNativeLibrary({ path: LIBRARY_PATH });
  if (!lib.ok) throw new Error(lib.message);
  built = lib.library;
  return built;
}

/** Deterministic bytes (xorshift32); the seed is in every assertion message that uses it. */
export function pattern(bytes: number, seed: number): Uint8Array {
  const out = new Uint8Array(bytes);
  const next = xorshift32((Math.imul(seed, 2654435761) + 1) >>> 0);
  for (let i = 0; i < bytes; i++) out[i] = next() & 0xff;
  return out;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
